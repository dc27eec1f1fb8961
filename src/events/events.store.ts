// SQL for click and dismiss events, the counts they bump on broadcasts, and
// the two look-ups that let a beacon in (does the project exist, is the
// broadcast its). Every statement takes a batch: the beacon route writes
// beacons in groups (beacon-writer.ts).
import type { Queryable } from '../platform/db/database.ts'
import type { LimitOverrides, PlanName } from '../projects/plans.ts'

export type BeaconEventType = 'clicked' | 'dismissed'

/** What the beacon route needs of a project: who it is and its rate limit. */
export interface BeaconProjectRow {
  id: string
  plan: PlanName
  limits: LimitOverrides
}

/** The projects among ids that exist (one query for many ids). */
export async function findBeaconProjects(q: Queryable, ids: string[]): Promise<BeaconProjectRow[]> {
  const result = await q.query<BeaconProjectRow>('SELECT id, plan, limits FROM projects WHERE id = ANY ($1::text[])', [ids])
  return result.rows
}

export interface BroadcastOfProject {
  project_id: string
  broadcast_id: string
}

/** The pairs whose broadcast exists and belongs to that project (one query for many pairs). */
export async function findBroadcastsOfProjects(q: Queryable, pairs: BroadcastOfProject[]): Promise<BroadcastOfProject[]> {
  const result = await q.query<BroadcastOfProject>(
    `SELECT b.project_id, b.id AS broadcast_id
       FROM unnest($1::text[], $2::text[]) AS p(project_id, broadcast_id)
       JOIN broadcasts b ON b.id = p.broadcast_id AND b.project_id = p.project_id`,
    [pairs.map((p) => p.project_id), pairs.map((p) => p.broadcast_id)],
  )
  return result.rows
}

export interface NewBeaconEvent {
  id: string
  project_id: string
  broadcast_id: string
  type: BeaconEventType
}

/**
 * Locks the broadcasts whose counts a batch will bump, in id order, so two
 * processes writing batches that share broadcasts wait for each other
 * instead of deadlocking.
 */
export async function lockBroadcasts(q: Queryable, broadcastIds: string[]): Promise<void> {
  await q.query('SELECT id FROM broadcasts WHERE id = ANY ($1::text[]) ORDER BY id FOR NO KEY UPDATE', [broadcastIds])
}

/**
 * Inserts the events whose broadcast is their project's, in one statement,
 * and returns those written: a beacon whose broadcast is gone or another
 * project's is left out here, whatever the caches said. Click and dismiss
 * events carry no subscriber identity (api.md 4.10 rule 3, §6): both columns
 * are NULL.
 */
export async function insertBeaconEvents(q: Queryable, events: NewBeaconEvent[]): Promise<NewBeaconEvent[]> {
  const result = await q.query<NewBeaconEvent>(
    `INSERT INTO events (id, project_id, broadcast_id, subscriber_id, external_id, type, meta)
     SELECT e.id, e.project_id, e.broadcast_id, NULL, NULL, e.type, NULL
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS e(id, project_id, broadcast_id, type, n)
       JOIN broadcasts b ON b.id = e.broadcast_id AND b.project_id = e.project_id
      ORDER BY e.n
     RETURNING id, project_id, broadcast_id, type`,
    [events.map((e) => e.id), events.map((e) => e.project_id), events.map((e) => e.broadcast_id), events.map((e) => e.type)],
  )
  return result.rows
}

export interface BroadcastCountDelta {
  broadcast_id: string
  clicked: number
  dismissed: number
}

/** Adds each delta to its broadcast's clicked and dismissed counts: one row update per broadcast, one statement. */
export async function addBroadcastCounts(q: Queryable, deltas: BroadcastCountDelta[]): Promise<void> {
  if (deltas.length === 0) return
  await q.query(
    `UPDATE broadcasts b SET clicked = b.clicked + d.clicked, dismissed = b.dismissed + d.dismissed
       FROM unnest($1::text[], $2::int[], $3::int[]) AS d(broadcast_id, clicked, dismissed)
      WHERE b.id = d.broadcast_id`,
    [deltas.map((d) => d.broadcast_id), deltas.map((d) => d.clicked), deltas.map((d) => d.dismissed)],
  )
}
