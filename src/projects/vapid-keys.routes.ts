// VAPID key rotation (issue 23): the operator's
// /admin/v1/projects/:id/vapid-keys… (registered from admin.routes.ts, behind
// its token) and the owner's /v1/vapid-keys…, permission vapid_keys:manage,
// which only an owner's session holds (access/access.ts): no API key and no
// admin can rotate or retire, and only the operator can force a retirement
// that loses subscriptions (docs/vapid-keys.md).
import type { FastifyRequest } from 'fastify'
import { auditContext, OPERATOR } from '../audit/audit-context.ts'
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { ErrorBody } from '../platform/http/shared-schemas.ts'
import { invalidField } from '../platform/errors.ts'
import { ProjectParams, VapidKeysBody } from './admin.schemas.ts'
import { bearerAuth } from './project-auth.ts'
import { checkVapidKeyPair } from './vapid-keys.ts'
import { OwnVapidKeyParams, ProjectVapidKeyParams, RetiredVapidKey, RetireVapidKeyQuery, RotatedVapidKeys, VapidKeyList } from './vapid-keys.schemas.ts'
import { listProjectVapidKeys, retireVapidKey, rotateVapidKeys } from './vapid-rotation.service.ts'
import { Type } from 'typebox'

const ROTATE_DESCRIPTION =
  'New subscriptions are made with the new key (the SDK and GET /v1/vapid-public-key serve it at once; browsers may keep the old one up to an hour). ' +
  'Every existing subscription stays on the key it was made with and each push to it is still signed with that key: nobody is lost. ' +
  'Answers the new key and the list of keys.'
const RETIRE_DESCRIPTION =
  'No push is signed with a retired key again. Refused with 409 vapid_key_current for the current key, and with 409 vapid_key_has_subscribers (carrying active_subscribers) while active subscriptions use it.'

/** Optional body of the operator's rotate: an imported pair, or nothing for a fresh one. */
const RotateBody = Type.Union([VapidKeysBody, Type.Object({}, { additionalProperties: false })])

/** The operator's routes, with the admin token check of admin.routes.ts. */
export function registerOperatorVapidKeyRoutes(app: App, ctx: AppContext, onRequest: (request: FastifyRequest) => Promise<void>): void {
  const { db } = ctx
  const tags = ['admin']
  const security = [{ adminToken: [] }]

  app.get('/admin/v1/projects/:id/vapid-keys', {
    onRequest,
    schema: {
      operationId: 'listProjectVapidKeys',
      tags,
      security,
      summary: "A project's VAPID key pairs, with which is current and how many active subscriptions each still has",
      params: ProjectParams,
      response: { 200: VapidKeyList, 401: ErrorBody, 404: ErrorBody },
    },
  }, async (request) => listProjectVapidKeys(db, request.params.id))

  app.post('/admin/v1/projects/:id/vapid-keys/rotate', {
    onRequest,
    preValidation: async (request) => {
      if (request.body === undefined) request.body = {}
    },
    schema: {
      operationId: 'rotateProjectVapidKeys',
      tags,
      security,
      summary: 'Make a new VAPID key pair current (fresh, or an imported vapid_private and vapid_public), keeping every existing subscription on its own key',
      description: `${ROTATE_DESCRIPTION} An imported pair is checked as on project creation (400 naming the field).`,
      params: ProjectParams,
      body: RotateBody,
      response: { 201: RotatedVapidKeys, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
    },
  }, async (request, reply) => {
    const body = request.body as { vapid_private?: string; vapid_public?: string }
    if (body.vapid_private === undefined && body.vapid_public !== undefined) throw invalidField('vapid_private', 'is required with vapid_public: import both halves of the pair')
    const pair = body.vapid_private !== undefined ? checkVapidKeyPair(body.vapid_private, body.vapid_public!) : undefined
    return reply.code(201).send(await rotateVapidKeys(db, auditContext(request, OPERATOR), request.params.id, pair))
  })

  app.delete('/admin/v1/projects/:id/vapid-keys/:key_id', {
    onRequest,
    schema: {
      operationId: 'retireProjectVapidKey',
      tags,
      security,
      summary: 'Retire a VAPID key pair once no active subscription uses it; force=true retires it anyway and expires those subscriptions, answering how many',
      description: `${RETIRE_DESCRIPTION} With force=true the key is retired anyway: the subscriptions made with it are expired (they cannot be reached without it) and counted in expired_subscribers.`,
      params: ProjectVapidKeyParams,
      querystring: RetireVapidKeyQuery,
      response: { 200: RetiredVapidKey, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    },
  }, async (request) => retireVapidKey(db, auditContext(request, OPERATOR), request.params.id, request.params.key_id, request.query.force ?? false))
}

/** The owner's routes, on the project of the session. */
export function registerVapidKeyRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx
  const onRequest = bearerAuth(ctx, 'vapid_keys:manage')
  const tags = ['project']
  const security = [{ session: [] }]

  app.get('/v1/vapid-keys', {
    onRequest,
    schema: {
      operationId: 'listVapidKeys',
      tags,
      security,
      summary: "The project's VAPID key pairs, with which is current and how many active subscriptions each still has (owners)",
      response: { 200: VapidKeyList, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => listProjectVapidKeys(db, request.project.id))

  app.post('/v1/vapid-keys/rotate', {
    onRequest,
    schema: {
      operationId: 'rotateVapidKeys',
      tags,
      security,
      summary: 'Make a fresh VAPID key pair current, keeping every existing subscription on its own key (owners)',
      description: ROTATE_DESCRIPTION,
      response: { 201: RotatedVapidKeys, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => reply.code(201).send(await rotateVapidKeys(db, auditContext(request), request.project.id)))

  app.delete('/v1/vapid-keys/:key_id', {
    onRequest,
    schema: {
      operationId: 'retireVapidKey',
      tags,
      security,
      summary: 'Retire a VAPID key pair that no active subscription uses any more (owners)',
      description: `${RETIRE_DESCRIPTION} Only the operator can force the retirement of a key still in use.`,
      params: OwnVapidKeyParams,
      response: { 200: RetiredVapidKey, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => retireVapidKey(db, auditContext(request), request.project.id, request.params.key_id, false))
}
