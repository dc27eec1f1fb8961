// SQL for events: the one function that records them (and their webhook
// deliveries), and the two look-ups that let a beacon in (does the project exist, is the broadcast
// its). Every statement takes a batch: the beacon route writes beacons in
// groups (beacon-writer.ts), fan-out a batch of pushes at a time.
import type { Queryable } from '../platform/db/database.ts'
import type { LimitOverrides, PlanName } from '../projects/plans.ts'
import { enqueueDeliveriesForEventsOfProjects } from '../webhooks/webhook-deliveries.store.ts'

export type BeaconEventType = 'clicked' | 'dismissed' | 'shown'

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

/** A broadcast found for a beacon, with the ids of its action buttons (a click names one of them or none). */
export interface FoundBroadcast extends BroadcastOfProject {
  action_ids: string[]
}

/** The pairs whose broadcast exists and belongs to that project (one query for many pairs). */
export async function findBroadcastsOfProjects(q: Queryable, pairs: BroadcastOfProject[]): Promise<FoundBroadcast[]> {
  const result = await q.query<FoundBroadcast>(
    `SELECT b.project_id, b.id AS broadcast_id,
            ARRAY(SELECT a ->> 'action' FROM jsonb_array_elements(b.actions) AS a) AS action_ids
       FROM unnest($1::text[], $2::text[]) AS p(project_id, broadcast_id)
       JOIN broadcasts b ON b.id = p.broadcast_id AND b.project_id = p.project_id`,
    [pairs.map((p) => p.project_id), pairs.map((p) => p.broadcast_id)],
  )
  return result.rows
}

/** Every kind of event a broadcast records (api.md §6). */
export type EventType = 'delivered' | 'failed' | BeaconEventType

/** An event to record; fan-out's carry the subscriber, beacons' carry no identity (api.md 4.10 rule 3). */
export interface NewEvent {
  id: string
  project_id: string
  broadcast_id: string
  type: EventType
  subscriber_id?: string | null
  external_id?: string | null
  /** e.g. { reason, status } of a failed push. */
  meta?: Record<string, unknown> | null
}

export interface RecordedEvent {
  id: string
  project_id: string
  broadcast_id: string
  type: EventType
}

/**
 * The one writer of the events table (fan-out's delivered and failed events,
 * the beacons' clicks and dismissals): inserts the events, in one statement,
 * and the webhook deliveries of those written, in the caller's transaction,
 * so both commit together or not at all. Returns the events written.
 *
 * Unless `ownBroadcasts` says the caller knows every event's broadcast is its
 * project's (fan-out, sending that very broadcast), an event whose broadcast
 * is gone or another project's is left out here, whatever a cache said. The
 * check is a join and a RETURNING of every row: measured on fan-out's path,
 * where each batch writes hundreds of events and the embedded database
 * shares Herald's thread, it is work worth skipping.
 */
export async function recordEvents(
  q: Queryable,
  events: NewEvent[],
  options: {
    ownBroadcasts?: boolean
    /** Every event's project's active webhook types, when the caller has just read them (fan-out, one project): no second look. */
    webhookTypes?: ReadonlySet<string>
  } = {},
): Promise<RecordedEvent[]> {
  if (events.length === 0) return []
  const params = [
    events.map((e) => e.id),
    events.map((e) => e.project_id),
    events.map((e) => e.broadcast_id),
    events.map((e) => e.subscriber_id ?? null),
    events.map((e) => e.external_id ?? null),
    events.map((e) => e.type),
    events.map((e) => (e.meta ? JSON.stringify(e.meta) : null)),
  ]
  let written: RecordedEvent[]
  if (options.ownBroadcasts) {
    // A subscriber erased meanwhile is left out (its erasure committed while this waited for its row's lock)
    // rather than failing the batch's transaction on the foreign key, which would send the whole slice again
    // (health.erasure.test.ts). ~3.7 µs more per row on the embedded database (bench/events-insert.ts: 20.2 →
    // 23.9), on rows that are now a failed push's or one a webhook takes.
    const result = await q.query(
      `INSERT INTO events (id, project_id, broadcast_id, subscriber_id, external_id, type, meta)
       SELECT e.id, e.project_id, e.broadcast_id, e.subscriber_id, e.external_id, e.type, e.meta::jsonb
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
              AS e(id, project_id, broadcast_id, subscriber_id, external_id, type, meta)
        WHERE e.subscriber_id IS NULL OR EXISTS (SELECT 1 FROM subscribers s WHERE s.id = e.subscriber_id FOR KEY SHARE)`,
      params,
    )
    written = events.map(({ id, project_id, broadcast_id, type }) => ({ id, project_id, broadcast_id, type }))
    if (result.rowCount !== events.length) {
      // Some were left out (rare): the webhook deliveries are for those written only.
      const kept = new Set((await q.query<{ id: string }>('SELECT id FROM events WHERE id = ANY ($1::text[])', [params[0]])).rows.map((row) => row.id))
      written = written.filter((event) => kept.has(event.id))
    }
  } else {
    const result = await q.query<RecordedEvent>(
      `INSERT INTO events (id, project_id, broadcast_id, subscriber_id, external_id, type, meta)
       SELECT e.id, e.project_id, e.broadcast_id, e.subscriber_id, e.external_id, e.type, e.meta::jsonb
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
              WITH ORDINALITY AS e(id, project_id, broadcast_id, subscriber_id, external_id, type, meta, n)
         JOIN broadcasts b ON b.id = e.broadcast_id AND b.project_id = e.project_id
        ORDER BY e.n
       RETURNING id, project_id, broadcast_id, type`,
      params,
    )
    written = result.rows
  }
  // Webhook deliveries of these events, committed with them (or not at all).
  const hooked = options.webhookTypes
  if (!hooked) await enqueueDeliveriesForEventsOfProjects(q, written)
  else if (written.some((event) => hooked.has(event.type))) await enqueueDeliveriesForEventsOfProjects(q, written, { hooked: true })
  return written
}
