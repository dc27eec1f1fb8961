// GET /c/:token: the `navigate` URL of a notification a browser shows by
// itself (Declarative Web Push, broadcasts/declarative-payload.ts). It
// records a `clicked` event (with the action, for a button) and redirects to
// the URL the broadcast carries for that click, and nowhere else: the token
// only names the broadcast and the action, and its MAC must match the URL the
// broadcast stores (broadcasts/click-link.ts). Any token that does not check
// out is 404 click_link_not_found, whatever the reason, so a prober learns
// nothing about which part was wrong.
import { Type } from 'typebox'
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { AppError } from '../platform/errors.ts'
import { ErrorBody } from '../platform/http/shared-schemas.ts'
import { findClickLinkBroadcast } from '../broadcasts/broadcasts.store.ts'
import { absoluteTarget, clickLinkKey, clickTokenMatches, parseClickToken, siteOrigin } from '../broadcasts/click-link.ts'
import { BeaconsLostError, type BeaconWriter } from './beacon-writer.ts'
import type { Beacon } from './events.service.ts'

/** The click's target, checked; null when the token is not one Herald made for this broadcast. */
async function resolveClickLink(ctx: AppContext, token: string): Promise<{ beacon: Beacon; location: string } | null> {
  const parsed = parseClickToken(token)
  if (!parsed) return null
  const broadcast = await findClickLinkBroadcast(ctx.db, parsed.broadcast_id)
  if (!broadcast) return null
  const action = parsed.action === null ? null : broadcast.actions.find((a) => a.action === parsed.action)
  if (action === undefined) return null
  const url = action?.url ?? broadcast.url
  const link = { project_id: broadcast.project_id, broadcast_id: parsed.broadcast_id, action: parsed.action, url }
  if (!clickTokenMatches(clickLinkKey(broadcast.vapid_private), link, parsed.mac)) return null
  // A path goes to the project's site as its domain says now (the push was only made with one).
  const location = absoluteTarget(url, siteOrigin(broadcast.domain))
  if (!location) return null
  return { beacon: { project_id: broadcast.project_id, broadcast_id: parsed.broadcast_id, type: 'clicked', action: parsed.action, via_link: true }, location }
}

export function registerClickLinkRoute(app: App, ctx: AppContext, writer: BeaconWriter<Beacon>): void {
  app.get(
    '/c/:token',
    {
      schema: {
        operationId: 'openClickLink',
        tags: ['browser'],
        summary: 'Open a notification link: records the click and redirects to its URL',
        description:
          'The navigate URL of a Declarative Web Push notification (and of its action buttons). Records a clicked event ' +
          '(meta { action } for a button) and answers 302 to the URL the broadcast carries. A token Herald did not make ' +
          'for that broadcast, action and URL is 404 click_link_not_found.',
        security: [],
        params: Type.Object({ token: Type.String({ maxLength: 128 }) }),
        response: { 302: Type.Null({ description: 'Redirect to the target (Location).' }), 404: ErrorBody },
      },
    },
    async (request, reply) => {
      const resolved = await resolveClickLink(ctx, request.params.token)
      if (!resolved) throw new AppError('click_link_not_found')
      try {
        await writer.record(resolved.beacon)
      } catch (err) {
        // The visitor still goes where the notification said; the writer has logged and counted a lost write.
        if (!(err instanceof BeaconsLostError)) request.log.error({ err, beacons_lost: 1 }, 'recording a click link failed: click lost')
      }
      // Every click counted (no cache), and the token not passed on to the site in a Referer.
      reply.header('Cache-Control', 'no-store').header('Referrer-Policy', 'no-referrer')
      return reply.redirect(resolved.location, 302)
    },
  )
}
