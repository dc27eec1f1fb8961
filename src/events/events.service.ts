// Click and dismiss beacons from the service worker (api.md 4.10, §6),
// written a batch at a time (beacon-writer.ts collects them).
import type { Database } from '../platform/db/database.ts'
import { newId } from '../platform/ids.ts'
import { addEngagement, lockForCounts, type EngagementDelta } from '../broadcasts/broadcast-state.ts'
import { recordEvents, type BeaconEventType, type EventType } from './events.store.ts'
import { recordClicks } from '../subscribers/health.store.ts'
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
  /**
   * The A/B test variant the push named (docs/experiments.md), as the service
   * worker echoes it: counted on that variant of this beacon's broadcast only
   * when the broadcast has one of that key. Never stored on the event.
   */
  variant?: string | null
}

/**
 * Records a batch of beacons in one transaction: the events (one multi-row
 * INSERT), each affected broadcast's clicked and dismissed counts (one row
 * update per broadcast, however many beacons it got) and the webhook
 * deliveries of the events (one INSERT … SELECT), together or not at all.
 * Returns, per beacon, whether it was recorded: false when its broadcast is
 * not its project's (the caller drops it silently).
 */
export async function recordBeacons(db: Database, beacons: Beacon[]): Promise<boolean[]> {
  const events = beacons.map(({ action, subscriber_id, variant, ...beacon }) => ({ id: newId('evt'), ...beacon, action: action ?? null, meta: action ? { action } : null, clicker: subscriber_id ?? null, variant: variant ?? null }))
  const written = await db.transaction(async (tx) => {
    const inserted = await recordEvents(tx, events.map(({ clicker: _clicker, variant: _variant, ...event }) => event))
    // The clickers' rows before the broadcast rows, the order fan-out locks them in.
    const recorded = new Set(inserted.map((e) => e.id))
    await recordClicks(tx, events.flatMap((e) => (e.clicker && recorded.has(e.id) ? [{ projectId: e.project_id, subscriberId: e.clicker }] : [])))
    // The broadcast rows last, in id order: the lock order of every
    // transaction that touches broadcasts (src/delivery/fanout.ts), so a
    // batch's hot rows stay locked from here to the commit only, and beacon
    // and fan-out transactions never wait for each other in a circle.
    // A/B test variants: only events recorded (the broadcast is the beacon's project's), before the broadcast rows (the lock order).
    await addVariantCounts(tx, engagementByVariant(events, recorded))
    const actionOf = new Map(events.map((e) => [e.id, e.action]))
    const deltas = countByBroadcast(inserted.map((e) => ({ ...e, action: actionOf.get(e.id) ?? null })))
    await lockForCounts(tx, deltas.map((d) => d.broadcast_id))
    await addEngagement(tx, deltas)
    return new Set(inserted.map((e) => e.id))
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
