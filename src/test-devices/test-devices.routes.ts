// /v1/test-devices (issue 25): a signed-in member's own test devices and
// "send a test to me". The permission test_devices:use belongs to the roles
// that may send (owner, admin, editor) and to no API key scope, so these are
// a person's session routes; the member is always the session's user.
import type { FastifyRequest } from 'fastify'
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { bearerAuth } from '../projects/project-auth.ts'
import { ErrorBody } from '../platform/http/shared-schemas.ts'
import { auditContext } from '../audit/audit-context.ts'
import { AddTestDeviceBody, Deleted, SendTestBody, SendTestResponse, TestDevice, TestDeviceList, TestDeviceParams } from './test-devices.schemas.ts'
import * as service from './test-devices.service.ts'

const tags = ['test devices']
const security = [{ apiKey: [] }]

/** The signed-in member: bearerAuth let only a user through (no key holds test_devices:use). */
function memberOf(request: FastifyRequest): string {
  const actor = request.actor
  if (actor?.type !== 'user') throw new Error('test device route reached without a member')
  return actor.id
}

export function registerTestDeviceRoutes(app: App, ctx: AppContext): void {
  const use = bearerAuth(ctx, 'test_devices:use')

  app.get('/v1/test-devices', {
    onRequest: use,
    schema: {
      operationId: 'listTestDevices', tags, security,
      summary: "Your test devices in this project (a member's session)",
      response: { 200: TestDeviceList, 401: ErrorBody, 403: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => ({ test_devices: await service.listTestDevices(ctx, request.project.id, memberOf(request)) }))

  app.post('/v1/test-devices', {
    onRequest: use,
    schema: {
      operationId: 'addTestDevice', tags, security,
      summary: 'Add this browser as one of your test devices',
      description: "The browser's push subscription (PushSubscription.toJSON(), made with the project's VAPID public key) and a label. " +
        'A test device is never a subscriber: no audience, count, list or export has it. Again with the same endpoint: its keys are refreshed (and it becomes yours).',
      body: AddTestDeviceBody,
      response: { 201: TestDevice, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => {
    reply.code(201)
    return service.addTestDevice(ctx, request.project.id, memberOf(request), request.body)
  })

  // A static path: find-my-way prefers it to /:id.
  app.post('/v1/test-devices/send', {
    onRequest: use,
    schema: {
      operationId: 'sendTestToMe', tags, security,
      summary: 'Send a test to your own test devices',
      description: 'The draft given (title, body, url, icon), or a fixed test message, as a broadcast from the dashboard to your test devices only: ' +
        'counted, within the monthly budget and in the audit log like any broadcast. 409 no_test_devices when you have none.',
      body: SendTestBody,
      response: { 201: SendTestResponse, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 409: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => {
    const answer = await service.sendTest(ctx, auditContext(request), request.project, memberOf(request), request.body ?? {})
    reply.code(201)
    return answer
  })

  app.delete('/v1/test-devices/:id', {
    onRequest: use,
    schema: {
      operationId: 'removeTestDevice', tags, security,
      summary: 'Remove one of your test devices',
      description: 'Deletes the subscription. deleted is 0 when the id is none of your test devices in this project.',
      params: TestDeviceParams,
      response: { 200: Deleted, 401: ErrorBody, 403: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => ({ deleted: await service.removeTestDevice(ctx, request.project.id, memberOf(request), request.params.id) }))
}
