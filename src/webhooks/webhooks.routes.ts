// POST/GET/DELETE /v1/webhooks: where a project's events are delivered (decisions.md §3).
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { bearerAuth } from '../platform/http/auth.ts'
import { ErrorBody } from '../platform/http/error-body.ts'
import { CreatedWebhook, CreateWebhookBody, ListWebhooksQuery, Ok, WebhookList, WebhookParams } from './webhooks.schemas.ts'
import { createWebhook, listWebhooks, removeWebhook } from './webhooks.service.ts'

const tags = ['webhooks']
const security = [{ apiKey: [] }]

export function registerWebhooksRoutes(app: App, ctx: AppContext): void {
  const onRequest = bearerAuth(ctx)

  app.post(
    '/v1/webhooks',
    {
      onRequest,
      schema: {
        tags,
        security,
        summary: 'Register a webhook endpoint',
        description: 'The secret signs every delivery (Standard Webhooks) and is shown only in this response.',
        body: CreateWebhookBody,
        response: { 201: CreatedWebhook, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 429: ErrorBody },
      },
    },
    async (request, reply) => reply.code(201).send(await createWebhook(ctx.db, ctx.config, request.project.id, request.body)),
  )

  app.get(
    '/v1/webhooks',
    { onRequest, schema: { tags, security, summary: "List the project's webhook endpoints", querystring: ListWebhooksQuery, response: { 200: WebhookList, 400: ErrorBody, 401: ErrorBody, 429: ErrorBody } } },
    async (request) => listWebhooks(ctx.db, request.project.id, request.query),
  )

  app.delete(
    '/v1/webhooks/:id',
    { onRequest, schema: { tags, security, summary: 'Remove a webhook endpoint', params: WebhookParams, response: { 200: Ok, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody } } },
    async (request) => {
      await removeWebhook(ctx.db, request.project.id, request.params.id)
      return { ok: true as const }
    },
  )
}
