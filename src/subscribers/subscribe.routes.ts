// POST /v1/subscribe and /v1/unsubscribe (api.md 4.8, 4.9): browser routes,
// authenticated by the project id alone; app.ts answers CORS for them.
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { projectAuth } from '../projects/project-auth.ts'

import { CreatedId, ProjectHeaders, ProjectQuery, SubscribeBody, UnsubscribeBody } from './subscribers.schemas.ts'
import * as service from './subscribe.service.ts'
import { ErrorBody, Ok } from '../platform/http/shared-schemas.ts'

const tags = ['subscribers']
// Public: the project id names the project, it proves nothing (decisions.md, "The OpenAPI document").
const security: [] = []

export function registerSubscribeRoutes(app: App, ctx: AppContext): void {
  const onRequest = projectAuth(ctx)

  app.post('/v1/subscribe', {
    onRequest,
    schema: {
      operationId: 'subscribe',
      tags,
      security,
      summary: 'Store a browser push subscription',
      description:
        'Idempotent on (project, endpoint): a repeat refreshes last_seen_at and the keys, and makes an unsubscribed or expired ' +
        'subscriber active again with the same id. The project comes from ?project= or the X-Service-Project header. ' +
        '403 subscriber_limit_reached (with limit) when a new active subscriber would pass the plan’s cap. ' +
        'source: migrated marks a browser the SDK moved from another application server key; replaces { endpoint, auth } takes over the ' +
        'external_id, tags and groups of the browser’s previous subscription and expires it, when auth is that subscription’s auth secret.',
      querystring: ProjectQuery,
      headers: ProjectHeaders,
      body: SubscribeBody,
      response: { 201: CreatedId, 400: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => {
    const id = await service.subscribe(ctx.db, ctx.config, request.project, request.body)
    return reply.code(201).send({ id })
  })

  app.post('/v1/unsubscribe', {
    onRequest,
    schema: {
      operationId: 'unsubscribe',
      tags,
      security,
      summary: 'Soft-unsubscribe a browser',
      description: 'Sets the status to unsubscribed; the row and its history stay. 200 also when the endpoint is not on file.',
      querystring: ProjectQuery,
      headers: ProjectHeaders,
      body: UnsubscribeBody,
      response: { 200: Ok, 400: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => {
    await service.unsubscribe(ctx.db, request.project.id, request.body)
    return { ok: true as const }
  })
}
