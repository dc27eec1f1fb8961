// POST /v1/events: the service worker's click and dismiss beacon (api.md 4.10).
// It always answers 202 { ok: true }: a dropped event (no project, unknown
// project, someone else's broadcast, bad body, over the rate limit) looks the
// same as a recorded one, so the endpoint tells a prober nothing. Errors thrown
// here are turned into that same 202 by the platform error handler.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { enforceRateLimit, projectFromQuery } from '../platform/http/auth.ts'
import { recordBeaconEvent } from './events.service.ts'
import { AcceptedResponse, EventBody, EventsQuery } from './events.schemas.ts'

/** A beacon is a few short fields; anything near this size is not one. */
export const EVENTS_BODY_LIMIT = 4 * 1024

const ACCEPTED = { ok: true } as const

export function registerEventsRoutes(app: App, ctx: AppContext): void {
  // Its own plugin scope, so the text/plain parser below applies to this route only.
  app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>()
    // navigator.sendBeacon with a string sends text/plain (a CORS-safelisted
    // type, so no preflight): the same JSON, under another content type.
    scope.removeContentTypeParser('text/plain')
    scope.addContentTypeParser('text/plain', { parseAs: 'string' }, scope.getDefaultJsonParser('error', 'error'))

    scope.post('/v1/events', {
      bodyLimit: EVENTS_BODY_LIMIT,
      schema: {
        tags: ['events'],
        summary: 'Record a notification click or dismiss (always 202)',
        description:
          'Called by the service worker. Takes application/json or text/plain (sendBeacon). ' +
          'Always answers 202 { ok: true }; the event is dropped silently when the project is missing or unknown, ' +
          'the broadcast is not that project\'s, the body is invalid, or the project is over its rate limit.',
        security: [{ project: [] }],
        querystring: EventsQuery,
        body: EventBody,
        response: { 202: AcceptedResponse },
      },
    }, async (request, reply) => {
      reply.code(202)
      const project = await projectFromQuery(ctx, request)
      if (!project) return ACCEPTED
      request.project = project
      if (!(await enforceRateLimit(ctx, request, reply))) return ACCEPTED
      await recordBeaconEvent(ctx.db, project.id, request.body)
      return ACCEPTED
    })
  })
}
