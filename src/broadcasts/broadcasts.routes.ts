// GET /v1/broadcasts, GET /v1/broadcasts/:id, DELETE /v1/broadcasts/:id (decisions.md §3).
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { bearerAuth } from '../platform/http/auth.ts'
import {
  BroadcastIdParams,
  BroadcastView,
  ErrorBody,
  ListBroadcastsQuery,
  ListBroadcastsResponse,
  Ok,
} from './broadcasts.schemas.ts'
import { cancelBroadcast, getBroadcast, listBroadcastViews } from './broadcasts.service.ts'

export function registerBroadcastsRoutes(app: App, ctx: AppContext): void {
  const security = [{ apiKey: [] }]

  app.get(
    '/v1/broadcasts',
    {
      onRequest: bearerAuth(ctx),
      schema: {
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
      onRequest: bearerAuth(ctx),
      schema: {
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
      onRequest: bearerAuth(ctx),
      schema: {
        tags: ['broadcasts'],
        summary: 'Cancel a scheduled broadcast',
        security,
        params: BroadcastIdParams,
        response: { 200: Ok, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody },
      },
    },
    async (request) => {
      await cancelBroadcast(ctx.db, request.project.id, request.params.id)
      return { ok: true }
    },
  )
}
