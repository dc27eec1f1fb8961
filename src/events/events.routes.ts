// POST /v1/events: the service worker's click and dismiss beacon (api.md 4.10),
// and its shown beacon (issue 25, docs/funnel.md).
// It always answers 202 { ok: true }: a dropped event (no project, unknown
// project, someone else's broadcast, bad body, over the rate limit) looks the
// same as a recorded one, so the endpoint tells a prober nothing. Errors thrown
// before the handler (body parsing, validation) are turned into that same 202
// by the platform error handler.
//
// It is the most exposed route, so it is cheap: ids of the wrong shape are
// dropped before any query, the project and broadcast checks come from
// bounded caches (beacon-lookups.ts), and concurrent beacons share one
// transaction (beacon-writer.ts). The 202 is sent once the beacon's
// transaction has committed or finally failed. A beacon the database could
// not take still gets its 202 (the rule has no exception), but it is logged
// at error level and counted, never lost silently.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { enforceBeaconRateLimit } from '../projects/project-auth.ts'
import { isWellFormedId } from '../platform/ids.ts'
import { BeaconLookups } from './beacon-lookups.ts'
import { BeaconsLostError, BeaconWriter } from './beacon-writer.ts'
import { recordBeacons, type Beacon } from './events.service.ts'
import { AcceptedResponse, EventBody, EventsQuery } from './events.schemas.ts'
import { registerClickLinkRoute } from './click-link.routes.ts'
import { VARIANT_KEY } from '../experiments/experiments.schemas.ts'

const VARIANT_KEY_PATTERN = new RegExp(VARIANT_KEY)

/** A beacon is a few short fields; anything near this size is not one. */
export const EVENTS_BODY_LIMIT = 4 * 1024

const ACCEPTED = { ok: true } as const

export function registerEventsRoutes(app: App, ctx: AppContext): void {
  const lookups = new BeaconLookups(ctx.db)
  const writer = new BeaconWriter<Beacon>((beacons) => recordBeacons(ctx.db, beacons), ctx.log)
  // Beacons already accepted into a batch are written before the database closes.
  app.addHook('onClose', async () => writer.close())
  // Clicks on notifications a browser showed by itself arrive through GET /c/:token, written by the same writer.
  registerClickLinkRoute(app, ctx, writer)

  // Its own plugin scope, so the text/plain parser below applies to this route only.
  app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>()
    // navigator.sendBeacon with a string sends text/plain (a CORS-safelisted
    // type, so no preflight): the same JSON, under another content type.
    // A body that is not JSON becomes null, which fails the schema and gets
    // the usual 202: a parser error would make Fastify close the connection,
    // so each garbage beacon would cost a new connection as well.
    const json = scope.getDefaultJsonParser('error', 'error')
    scope.removeContentTypeParser(['application/json', 'text/plain'])
    scope.addContentTypeParser(['application/json', 'text/plain'], { parseAs: 'string' }, (request, body, done) =>
      json(request, body as string, (err, value) => done(null, err ? null : value)),
    )

    scope.post('/v1/events', {
      bodyLimit: EVENTS_BODY_LIMIT,
      schema: {
        operationId: 'recordEvent',
        tags: ['events'],
        summary: 'Record a notification click, dismiss or shown (always 202)',
        description:
          'Called by the service worker. Takes application/json or text/plain (sendBeacon). ' +
          'Always answers 202 { ok: true }; the event is dropped silently when the project is missing or unknown, ' +
          'the broadcast is not that project\'s, the body is invalid, or the project is over its rate limit.',
        security: [],
        querystring: EventsQuery,
        body: EventBody,
        response: { 202: AcceptedResponse },
      },
    }, async (request, reply) => {
      reply.code(202)
      const projectId = request.query.project
      const { broadcast_id, type, action, subscriber_id, variant } = request.body
      if (!isWellFormedId('prj', projectId) || !isWellFormedId('bdc', broadcast_id)) return ACCEPTED
      try {
        const project = await lookups.project(projectId)
        if (!project) return ACCEPTED
        if (!(await enforceBeaconRateLimit(ctx, request, reply, project))) return ACCEPTED
        const actions = await lookups.broadcastActions(project.id, broadcast_id)
        if (!actions) return ACCEPTED
        // Only the broadcast's own action ids are kept: clicked_by_action never grows a key the notification did not have.
        const clickedAction = type === 'clicked' && action !== undefined && actions.includes(action) ? action : null
        // The receiver, when the worker knows it, only dates its last click (issue 23): the event itself stays without identity (api.md 4.10 rule 3).
        const clicker = type === 'clicked' && typeof subscriber_id === 'string' && isWellFormedId('sub', subscriber_id) ? subscriber_id : null
        // A shown beacon is only counted (docs/funnel.md): no action, no subscriber, nothing else written for it.
        // A variant key of the right form; whether the broadcast has it is checked as its count is added (experiments.store.ts).
        const named = typeof variant === 'string' && VARIANT_KEY_PATTERN.test(variant) ? variant : null
        await writer.record(type === 'shown' ? { project_id: project.id, broadcast_id, type, variant: named } : { project_id: project.id, broadcast_id, type, action: clickedAction, subscriber_id: clicker, variant: named })
        return ACCEPTED
      } catch (err) {
        // Still 202 (api.md 4.10 rule 1, §7), but never silent: the writer has
        // logged and counted its losses; a failed look-up is logged here.
        if (!(err instanceof BeaconsLostError)) request.log.error({ err, beacons_lost: 1 }, 'looking up a beacon failed: beacon lost')
        return ACCEPTED
      }
    })
  })
}
