// Click and dismiss beacons from the service worker (api.md 4.10, §6),
// written a batch at a time (beacon-writer.ts collects them).
import type { Database } from '../platform/db/database.ts'
import { newId } from '../platform/ids.ts'
import { enqueueDeliveriesForEventsOfProjects } from '../webhooks/webhook-deliveries.store.ts'
import {
  addBroadcastCounts,
  insertBeaconEvents,
  lockBroadcasts,
  type BeaconEventType,
  type BroadcastCountDelta,
} from './events.store.ts'

export interface Beacon {
  project_id: string
  broadcast_id: string
  type: BeaconEventType
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
  const events = beacons.map((beacon) => ({ id: newId('evt'), ...beacon }))
  const written = await db.transaction(async (tx) => {
    await lockBroadcasts(tx, [...new Set(events.map((e) => e.broadcast_id))].sort())
    const inserted = await insertBeaconEvents(tx, events)
    await addBroadcastCounts(tx, countByBroadcast(inserted))
    await enqueueDeliveriesForEventsOfProjects(tx, inserted)
    return new Set(inserted.map((e) => e.id))
  })
  return events.map((e) => written.has(e.id))
}

function countByBroadcast(events: Array<{ broadcast_id: string; type: BeaconEventType }>): BroadcastCountDelta[] {
  const deltas = new Map<string, BroadcastCountDelta>()
  for (const event of events) {
    let delta = deltas.get(event.broadcast_id)
    if (!delta) deltas.set(event.broadcast_id, (delta = { broadcast_id: event.broadcast_id, clicked: 0, dismissed: 0 }))
    delta[event.type]++
  }
  return [...deltas.values()]
}
