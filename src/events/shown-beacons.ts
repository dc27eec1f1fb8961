// The shown beacon (issue 25, docs/funnel.md): the service worker reports
// each notification it displays. Shown beacons are many (one per push
// displayed, where clicks are a few per hundred), so recording one costs less
// than a click by design: no events row unless an active webhook endpoint of
// the project subscribed to `shown`, no subscriber health write, and the
// broadcast's count bumped once per batch with the clicks and dismissals
// (broadcast-state.ts addFunnelCounts). This is the one place shown beacons
// are counted: per-variant and hourly counts (other parts of issue 25) hook in
// here, fed the same batch.
import type { Queryable } from '../platform/db/database.ts'
import { recordEvents, type NewEvent } from './events.store.ts'

/** A shown beacon on its way to the database, with the event id it gets if an events row is written. */
export interface ShownBeacon {
  id: string
  project_id: string
  broadcast_id: string
}

/**
 * Writes the events rows of the shown beacons whose project has an active
 * webhook endpoint subscribed to `shown` (and, with them, their webhook
 * deliveries); the other beacons write none. One small query when no
 * project asked, which is the usual case.
 */
export async function recordShownEventsForWebhooks(q: Queryable, beacons: ShownBeacon[]): Promise<void> {
  if (beacons.length === 0) return
  const projects = [...new Set(beacons.map((b) => b.project_id))]
  const wanted = await q.query<{ project_id: string }>(
    "SELECT DISTINCT project_id FROM webhooks WHERE project_id = ANY ($1::text[]) AND status = 'active' AND 'shown' = ANY (events)",
    [projects],
  )
  if (wanted.rows.length === 0) return
  const hooked = new Set(wanted.rows.map((row) => row.project_id))
  const events: NewEvent[] = beacons.filter((b) => hooked.has(b.project_id)).map((b) => ({ ...b, type: 'shown', meta: null }))
  // The join in recordEvents leaves out a beacon whose broadcast is not its project's.
  await recordEvents(q, events)
}

/** Shown beacons per broadcast, for the count. */
export function countShown(beacons: ShownBeacon[]): Map<string, { project_id: string; shown: number }> {
  const counts = new Map<string, { project_id: string; shown: number }>()
  for (const beacon of beacons) {
    const key = `${beacon.project_id} ${beacon.broadcast_id}`
    const count = counts.get(key)
    if (count) count.shown++
    else counts.set(key, { project_id: beacon.project_id, shown: 1 })
  }
  return counts
}
