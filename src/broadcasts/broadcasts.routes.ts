// GET /v1/broadcasts, GET /v1/broadcasts/:id, DELETE /v1/broadcasts/:id (decisions.md §3),
// POST /v1/broadcasts/:id/stop (decisions.md "Broadcast progress and stop").
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { bearerAuth } from '../projects/project-auth.ts'
import {
  BroadcastIdParams,
  BroadcastView,
  ListBroadcastsQuery,
  ListBroadcastsResponse,
} from './broadcasts.schemas.ts'
import { cancelBroadcast, getBroadcast, listBroadcastViews, stopBroadcast } from './broadcasts.service.ts'
import { ErrorBody, Ok } from '../platform/http/shared-schemas.ts'
import { auditContext } from '../audit/audit-context.ts'

export function registerBroadcastsRoutes(app: App, ctx: AppContext): void {
  const security = [{ apiKey: [] }]

  app.get(
    '/v1/broadcasts',
    {
      onRequest: bearerAuth(ctx, 'broadcasts:read'),
      schema: {
        operationId: 'listBroadcasts',
        tags: ['broadcasts'],
        summary: 'List broadcasts, newest first',
        security,
        querystring: ListBroadcastsQuery,
        response: { 200: ListBroadcastsResponse, 400: ErrorBody, 401: ErrorBody, 429: ErrorBody },
      },
    },
    async (request) => listBroadcastViews(ctx.db, request.project.id, request.query),
  )

  app.get(
    '/v1/broadcasts/:id',
    {
      onRequest: bearerAuth(ctx, 'broadcasts:read'),
      schema: {
        operationId: 'getBroadcast',
        tags: ['broadcasts'],
        summary: 'Get a broadcast with its counts',
        security,
        params: BroadcastIdParams,
        response: { 200: BroadcastView, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody },
      },
    },
    async (request) => getBroadcast(ctx.db, request.project.id, request.params.id),
  )

  app.delete(
    '/v1/broadcasts/:id',
    {
      onRequest: bearerAuth(ctx, 'broadcasts:send'),
      schema: {
        operationId: 'cancelBroadcast',
        tags: ['broadcasts'],
        summary: 'Cancel a scheduled broadcast',
        security,
        params: BroadcastIdParams,
        response: { 200: Ok, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody },
      },
    },
    async (request) => {
      await cancelBroadcast(ctx.db, auditContext(request), request.project.id, request.params.id)
      return { ok: true } as const
    },
  )

  app.post(
    '/v1/broadcasts/:id/stop',
    {
      onRequest: bearerAuth(ctx, 'broadcasts:send'),
      schema: {
        operationId: 'stopBroadcast',
        tags: ['broadcasts'],
        summary: 'Stop a broadcast: nothing more is pushed, retries included',
        description:
          'A scheduled, pending or sending broadcast becomes canceled. Pushes already in flight still land and are counted; ' +
          'the counts stay as they are (pending: never attempted; retrying: retries that will not run). ' +
          '409 broadcast_not_stoppable once it is sent, failed or canceled.',
        security,
        params: BroadcastIdParams,
        response: { 200: Ok, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody },
      },
    },
    async (request) => {
      await stopBroadcast(ctx.db, auditContext(request), request.project.id, request.params.id)
      return { ok: true } as const
    },
  )
}
