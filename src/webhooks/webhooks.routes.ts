// /v1/webhooks: where a project's events are delivered (decisions.md §3), and
// what an owner needs to debug an endpoint: its status, its delivery log, a
// test event, and a secret rotation.
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { AppError } from '../platform/errors.ts'
import { OutboundClient } from '../platform/outbound/http-client.ts'
import { bearerAuth } from '../projects/project-auth.ts'
import { auditContext } from '../audit/audit-context.ts'
import { allows, SEES_WEBHOOK_URLS } from '../access/access.ts'
import type { FastifyRequest } from 'fastify'

import {
  CreatedWebhook,
  CreateWebhookBody,
  DeliveryAttemptList,
  ListDeliveriesQuery,
  ListWebhooksQuery,
  RotatedSecret,
  TestResult,
  UpdateWebhookBody,
  Webhook,
  WebhookList,
  WebhookParams,
} from './webhooks.schemas.ts'
import {
  changeWebhook,
  createWebhook,
  getWebhook,
  listDeliveryAttempts,
  listWebhooks,
  removeWebhook,
  requireWebhook,
  rotateSecret,
  type WebhookView,
} from './webhooks.service.ts'
import { sendTestEvent, TEST_EVENTS_PER_MINUTE } from './test-event.ts'
import { ErrorBody, Ok } from '../platform/http/shared-schemas.ts'

const tags = ['webhooks']

/** URLs whole only for actors who may change webhooks; the origin for the others (issue 22). */
const view = (request: FastifyRequest): WebhookView => ({ urls: request.actor !== undefined && allows(request.actor, SEES_WEBHOOK_URLS) })
const security = [{ apiKey: [] }]

export function registerWebhooksRoutes(app: App, ctx: AppContext): void {
  // Test events leave from the API process: a client of their own, with the
  // dispatcher's timeout and address check, made on first use.
  let testClient: OutboundClient | null = null
  app.addHook('onClose', async () => {
    await testClient?.close()
  })

  app.post(
    '/v1/webhooks',
    {
      onRequest: bearerAuth(ctx, 'webhooks:write'),
      schema: {
        operationId: 'createWebhook',
        tags,
        security,
        summary: 'Register a webhook endpoint',
        description: 'The secret signs every delivery (Standard Webhooks) and is shown only in this response.',
        body: CreateWebhookBody,
        response: { 201: CreatedWebhook, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 429: ErrorBody },
      },
    },
    async (request, reply) => reply.code(201).send(await createWebhook(ctx.db, ctx.config, auditContext(request), request.project.id, request.body)),
  )

  app.get(
    '/v1/webhooks',
    { onRequest: bearerAuth(ctx, 'webhooks:read'), schema: { operationId: 'listWebhooks', tags, security, summary: "List the project's webhook endpoints", querystring: ListWebhooksQuery, response: { 200: WebhookList, 400: ErrorBody, 401: ErrorBody, 429: ErrorBody } } },
    async (request) => listWebhooks(ctx.db, request.project.id, request.query, view(request)),
  )

  app.get(
    '/v1/webhooks/:id',
    {
      onRequest: bearerAuth(ctx, 'webhooks:read'),
      schema: { operationId: 'getWebhook', tags, security, summary: 'Get a webhook endpoint, with its status and why it is disabled', params: WebhookParams, response: { 200: Webhook, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody } },
    },
    async (request) => getWebhook(ctx.db, request.project.id, request.params.id, view(request)),
  )

  app.patch(
    '/v1/webhooks/:id',
    {
      onRequest: bearerAuth(ctx, 'webhooks:write'),
      schema: {
        operationId: 'updateWebhook',
        tags,
        security,
        summary: 'Change a webhook endpoint: url, events, enabled',
        description:
          'A new url is checked as on create. enabled: false stops deliveries (pending ones wait); enabled: true resumes those still within their retry window (about 33 h from their event) and the ones never attempted; older ones are given up.',
        params: WebhookParams,
        body: UpdateWebhookBody,
        response: { 200: Webhook, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody },
      },
    },
    async (request) => changeWebhook(ctx.db, ctx.config, auditContext(request), request.project.id, request.params.id, request.body, view(request)),
  )

  app.delete(
    '/v1/webhooks/:id',
    { onRequest: bearerAuth(ctx, 'webhooks:write'), schema: { operationId: 'deleteWebhook', tags, security, summary: 'Remove a webhook endpoint', params: WebhookParams, response: { 200: Ok, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody } } },
    async (request) => {
      await removeWebhook(ctx.db, auditContext(request), request.project.id, request.params.id)
      return { ok: true as const }
    },
  )

  app.get(
    '/v1/webhooks/:id/deliveries',
    {
      onRequest: bearerAuth(ctx, 'webhooks:read'),
      schema: {
        operationId: 'listWebhookDeliveries',
        tags,
        security,
        summary: "The endpoint's delivery attempts, newest first",
        description: 'Every attempt (real deliveries and test events) of the last 7 days, at most the newest 10,000 per endpoint.',
        params: WebhookParams,
        querystring: ListDeliveriesQuery,
        response: { 200: DeliveryAttemptList, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody },
      },
    },
    async (request) => listDeliveryAttempts(ctx.db, request.project.id, request.params.id, request.query),
  )

  app.post(
    '/v1/webhooks/:id/test',
    {
      onRequest: bearerAuth(ctx, 'webhooks:write'),
      schema: {
        operationId: 'testWebhook',
        tags,
        security,
        summary: 'Send a signed event of type test to the endpoint now',
        description: `Answers 200 with the attempt's result, also when the endpoint fails. Recorded in the delivery log; never retried. At most ${TEST_EVENTS_PER_MINUTE} per webhook and minute (429 rate_limited with Retry-After).`,
        params: WebhookParams,
        response: { 200: TestResult, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody },
      },
    },
    async (request, reply) => {
      const webhook = await requireWebhook(ctx.db, request.project.id, request.params.id)
      let allowed = true
      try {
        const outcome = await ctx.rateLimiter.hit(`whk-test:${webhook.id}`, TEST_EVENTS_PER_MINUTE, 60_000)
        allowed = outcome.allowed
        if (!allowed) reply.header('Retry-After', String(Math.ceil(outcome.resetMs / 1000)))
      } catch (err) {
        // As for the project's own limit: a limiter that cannot be reached lets the request through.
        request.log.warn({ err }, 'rate limiter unavailable; test event allowed')
      }
      if (!allowed) throw new AppError('rate_limited', `At most ${TEST_EVENTS_PER_MINUTE} test events per webhook and minute; retry after the time in Retry-After.`)
      testClient ??= new OutboundClient({
        timeoutMs: ctx.config.webhookTimeoutMs,
        connectionsPerOrigin: 4,
        allowPrivateAddresses: ctx.config.allowPrivateEndpoints,
      })
      return sendTestEvent(ctx.db, testClient, webhook, auditContext(request))
    },
  )

  app.post(
    '/v1/webhooks/:id/rotate-secret',
    {
      onRequest: bearerAuth(ctx, 'webhooks:write'),
      schema: {
        operationId: 'rotateWebhookSecret',
        tags,
        security,
        summary: "Replace the endpoint's signing secret",
        description:
          'The new secret is shown only in this response. For 24 hours every delivery carries two signatures in webhook-signature (new and previous secret, space-separated), then only the new one. Rotating again within the 24 hours drops the older secret at once.',
        params: WebhookParams,
        response: { 200: RotatedSecret, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody },
      },
    },
    async (request) => rotateSecret(ctx.db, auditContext(request), request.project.id, request.params.id),
  )
}
