// Click, dismiss and shown beacons from the service worker (api.md 4.10, §6;
// shown: docs/funnel.md), written a batch at a time (beacon-writer.ts collects them).
import type { Database } from '../platform/db/database.ts'
import { newId } from '../platform/ids.ts'
import { addEngagement, addFunnelCounts, lockForCounts, type EngagementDelta, type FunnelDelta } from '../broadcasts/broadcast-state.ts'
import { recordEvents, type BeaconEventType, type EventType } from './events.store.ts'
import { recordClicks } from '../subscribers/health.store.ts'
import { countShown, recordShownEventsForWebhooks } from './shown-beacons.ts'
import { addStats } from '../stats/stats.store.ts'
import { beaconStats } from '../stats/stats-deltas.ts'
import { engagementByVariant } from '../experiments/experiment-beacons.ts'
import { addVariantCounts } from '../experiments/experiments.store.ts'

export interface Beacon {
  project_id: string
  broadcast_id: string
  type: BeaconEventType
  /** The action button clicked, already checked to be one of the broadcast's; null for the notification itself. */
  action?: string | null
  /**
   * The subscriber that clicked, when the service worker sent it: sets its
   * last_clicked_at (issue 23) if it is the project's; never stored on the
   * event, which carries no identity (api.md 4.10 rule 3).
   */
  subscriber_id?: string | null
  /** A click through a click link (GET /c/:token): a notification Safari showed by itself, which never reports shown. */
  via_link?: boolean
  /**
   * The A/B test variant the push named (docs/experiments.md), as the service
   * worker echoes it: counted on that variant of this beacon's broadcast only
   * when the broadcast has one of that key. Never stored on the event.
   */
  variant?: string | null
}

/**
 * Records a batch of beacons in one transaction: the click and dismiss
 * events (one multi-row INSERT), the shown beacons (shown-beacons.ts: a
 * count, and events rows only for projects whose webhook asked for them),
 * each affected broadcast's counts (one row update per broadcast, however
 * many beacons it got) and the webhook deliveries of the events (one
 * INSERT … SELECT), together or not at all.
 * Returns, per beacon, whether it was recorded: false when its broadcast is
 * not its project's (the caller drops it silently).
 */
export async function recordBeacons(db: Database, beacons: Beacon[]): Promise<boolean[]> {
  const events = beacons.map(({ action, subscriber_id, via_link, variant, ...beacon }) => ({ id: newId('evt'), ...beacon, action: action ?? null, meta: action ? { action } : null, clicker: subscriber_id ?? null, via_link: via_link === true, variant: variant ?? null }))
  const engagement = events.filter((e) => e.type !== 'shown')
  const shown = events.filter((e) => e.type === 'shown').map(({ id, project_id, broadcast_id }) => ({ id, project_id, broadcast_id }))
  const written = await db.transaction(async (tx) => {
    const inserted = await recordEvents(tx, engagement.map(({ clicker: _clicker, via_link: _via, variant: _variant, ...event }) => event))
    // The clickers' rows before the broadcast rows, the order fan-out locks them in.
    const recorded = new Set(inserted.map((e) => e.id))
    await recordClicks(tx, engagement.flatMap((e) => (e.clicker && recorded.has(e.id) ? [{ projectId: e.project_id, subscriberId: e.clicker }] : [])))
    // Shown beacons: their events rows (only for a webhook that asked), before the broadcast rows as any insert.
    await recordShownEventsForWebhooks(tx, shown)
    // The broadcast rows last, in id order: the lock order of every
    // transaction that touches broadcasts (src/delivery/fanout.ts), so a
    // batch's hot rows stay locked from here to the commit only, and beacon
    // and fan-out transactions never wait for each other in a circle.
    // The projects' numbers over time (issue 25), per beacon type: one upsert, before the broadcast rows.
    // Shown beacons count as the route let them through (beacon-lookups.ts checked their broadcast is
    // their project's; a broadcast never changes project), as they have no events row to count from.
    await addStats(tx, beaconStats([...inserted, ...shown.map((s) => ({ project_id: s.project_id, type: 'shown' }))]))
    // A/B test variants, before the broadcast rows (the lock order): the events recorded (their broadcast is
    // the beacon's project's) and the shown beacons, which the route let through on the same check.
    await addVariantCounts(tx, engagementByVariant(events, new Set([...recorded, ...shown.map((s) => s.id)])))
    const byId = new Map(engagement.map((e) => [e.id, e]))
    const deltas = countByBroadcast(inserted.map((e) => ({ ...e, action: byId.get(e.id)?.action ?? null })))
    const funnel = funnelDeltas(shown, inserted.flatMap((e) => (byId.get(e.id)?.via_link ? [e] : [])))
    await lockForCounts(tx, [...new Set([...deltas.map((d) => d.broadcast_id), ...funnel.map((d) => d.broadcast_id)])])
    await addEngagement(tx, deltas)
    const counted = await addFunnelCounts(tx, funnel)
    for (const e of shown) if (counted.has(`${e.project_id} ${e.broadcast_id}`)) recorded.add(e.id)
    return recorded
  })
  return events.map((e) => written.has(e.id))
}

function countByBroadcast(events: Array<{ broadcast_id: string; type: EventType; action: string | null }>): EngagementDelta[] {
  const deltas = new Map<string, EngagementDelta>()
  for (const event of events) {
    let delta = deltas.get(event.broadcast_id)
    if (!delta) deltas.set(event.broadcast_id, (delta = { broadcast_id: event.broadcast_id, clicked: 0, dismissed: 0, by_action: {} }))
    if (event.type === 'clicked' || event.type === 'dismissed') delta[event.type]++
    if (event.type === 'clicked' && event.action) delta.by_action[event.action] = (delta.by_action[event.action] ?? 0) + 1
  }
  return [...deltas.values()]
}

/** The shown beacons and the click-link clicks recorded, per (project, broadcast). */
function funnelDeltas(shown: Array<{ project_id: string; broadcast_id: string; id: string }>, viaLink: Array<{ project_id: string; broadcast_id: string }>): FunnelDelta[] {
  const deltas = new Map<string, FunnelDelta>()
  for (const [key, count] of countShown(shown)) deltas.set(key, { broadcast_id: key.split(' ')[1], project_id: count.project_id, shown: count.shown, clicked_via_link: 0 })
  for (const click of viaLink) {
    const key = `${click.project_id} ${click.broadcast_id}`
    const delta = deltas.get(key) ?? { broadcast_id: click.broadcast_id, project_id: click.project_id, shown: 0, clicked_via_link: 0 }
    delta.clicked_via_link++
    deltas.set(key, delta)
  }
  return [...deltas.values()]
}
