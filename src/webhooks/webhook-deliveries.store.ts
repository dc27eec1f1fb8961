// SQL for webhook deliveries: written with the events they carry, claimed by
// the dispatcher under a lease, then deleted (2xx), rescheduled or given up.
import type { Queryable } from '../platform/db/database.ts'

/** NOTIFY channel that wakes dispatchers (in any process) when deliveries are written. */
export const WEBHOOKS_CHANNEL = 'herald_webhooks'

export interface EventRef {
  id: string
  type: string
}

/**
 * Writes one delivery per (event, active endpoint of the project subscribed to
 * the event's type), in the caller's transaction (the one writing the events).
 * One statement whatever the number of events (the multi-project form below,
 * every event under this project). The dispatchers
 * are woken when (and only if) the transaction commits.
 */
export async function enqueueDeliveriesForEvents(q: Queryable, projectId: string, events: EventRef[]): Promise<number> {
  return enqueueDeliveriesForEventsOfProjects(q, events.map((event) => ({ ...event, project_id: projectId })))
}

/**
 * The same for events of several projects at once (the beacon route writes
 * beacons of any project in one transaction): still one statement, each
 * event matched against its own project's active endpoints only.
 */
export async function enqueueDeliveriesForEventsOfProjects(
  q: Queryable,
  events: Array<EventRef & { project_id: string }>,
  /** The caller has just found active endpoints of these events' project in this transaction (fan-out): no look first. */
  options: { hooked?: boolean } = {},
): Promise<number> {
  if (events.length === 0) return 0
  if (!options.hooked) {
    // Most batches are of projects without an endpoint: one small look first
    // instead of passing every event to the database for a join that finds
    // nothing (fan-out writes a batch's failed events, and delivered ones where a webhook takes them; issue 14, docs/performance.md).
    const projects = [...new Set(events.map((e) => e.project_id))]
    const hooked = await q.query<{ project_id: string }>(
      "SELECT DISTINCT project_id FROM webhooks WHERE project_id = ANY ($1::text[]) AND status = 'active'",
      [projects],
    )
    if (hooked.rows.length === 0) return 0
    if (hooked.rows.length < projects.length) {
      const wanted = new Set(hooked.rows.map((row) => row.project_id))
      events = events.filter((e) => wanted.has(e.project_id))
    }
  }
  const result = await q.query<{ n: number }>(
    `WITH inserted AS (
       INSERT INTO webhook_deliveries (webhook_id, event_id)
       SELECT w.id, e.id
         FROM unnest($1::text[], $2::text[], $3::text[]) AS e(id, type, project_id)
         JOIN webhooks w ON w.project_id = e.project_id AND w.status = 'active' AND e.type = ANY (w.events)
       RETURNING 1)
     SELECT count(*)::int AS n FROM inserted`,
    [events.map((e) => e.id), events.map((e) => e.type), events.map((e) => e.project_id)],
  )
  const written = result.rows[0]?.n ?? 0
  // Wakes the dispatchers once the events' transaction commits.
  if (written > 0) q.notifyAfterCommit(WEBHOOKS_CHANNEL)
  return written
}

/** A claimed delivery with what sending it needs: the endpoint and the event. */
export interface ClaimedDelivery {
  id: number
  webhook_id: string
  attempts: number
  url: string
  secret: string
  /** The secret a rotation replaced, while it is still honoured (else null): deliveries carry both signatures. */
  previous_secret: string | null
  event_id: string
  type: string
  project_id: string
  broadcast_id: string
  subscriber_id: string | null
  external_id: string | null
  meta: unknown
  created_at: Date
}

/**
 * Claims due deliveries: at most `limit` in all and, per endpoint, at most its
 * free slots (`room` for endpoints with requests in flight, `perEndpoint` for
 * the others), so one endpoint's backlog can neither take every slot nor hide
 * other endpoints' work behind it: each active endpoint is probed on its own
 * (webhook_deliveries_due_idx), oldest work first. The lease is the due time
 * itself, moved forward: a worker that dies leaves the delivery due again
 * after leaseMs. Rows another worker holds are skipped (SKIP LOCKED).
 */
export async function claimDueDeliveries(
  q: Queryable,
  options: { limit: number; perEndpoint: number; room: Map<string, number>; leaseMs: number; workerId: string },
): Promise<ClaimedDelivery[]> {
  const full = [...options.room].filter(([, free]) => free <= 0).map(([id]) => id)
  const partial = [...options.room].filter(([, free]) => free > 0)
  const result = await q.query<ClaimedDelivery>(
    `WITH room AS (
       SELECT w.id, COALESCE(r.free, $2) AS free
         FROM webhooks w LEFT JOIN unnest($4::text[], $5::int[]) AS r(webhook_id, free) ON r.webhook_id = w.id
        WHERE w.status = 'active' AND w.id <> ALL ($3::text[])),
     picked AS (
       SELECT due.id FROM room
        CROSS JOIN LATERAL (
          SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
           WHERE d.webhook_id = room.id AND d.status = 'pending' AND d.next_attempt_at <= now()
           ORDER BY d.next_attempt_at, d.id
           LIMIT room.free
           FOR UPDATE SKIP LOCKED) due
        ORDER BY due.next_attempt_at, due.id
        LIMIT $1)
     UPDATE webhook_deliveries d
        SET attempts = d.attempts + 1, locked_by = $6, next_attempt_at = now() + $7 * interval '1 millisecond'
       FROM picked, webhooks w, events e
      WHERE d.id = picked.id AND w.id = d.webhook_id AND e.id = d.event_id
     RETURNING d.id, d.webhook_id, d.attempts, w.url, w.secret,
               CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret END AS previous_secret, e.id AS event_id, e.type, e.project_id, e.broadcast_id,
               e.subscriber_id, e.external_id, e.meta, e.created_at`,
    [
      options.limit,
      options.perEndpoint,
      full,
      partial.map(([id]) => id),
      partial.map(([, free]) => free),
      options.workerId,
      options.leaseMs,
    ],
  )
  return result.rows
}

/** A delivery the endpoint answered with a 2xx, and what the delivery log says of that attempt. */
export interface DeliveredAttempt {
  id: number
  event_id: string
  event_type: string
  attempt: number
  status: number
  duration_ms: number
}

/**
 * The endpoints answered 2xx: these deliveries are done (taken in batches: one
 * statement for many successes), and their attempts go into the delivery log
 * in the same statement (those still leased to this worker: an outcome
 * recorded, an attempt logged). Also ends their endpoints' failing runs.
 */
export async function completeDeliveries(q: Queryable, done: DeliveredAttempt[], workerId: string): Promise<void> {
  await q.query(
    `WITH done AS (DELETE FROM webhook_deliveries WHERE id = ANY ($1::bigint[]) AND locked_by = $2 RETURNING id, webhook_id),
     logged AS (
       INSERT INTO webhook_attempts (webhook_id, event_id, event_type, attempt, outcome, response_status, duration_ms)
       SELECT done.webhook_id, a.event_id, a.event_type, a.attempt, 'delivered', a.status, a.duration_ms
         FROM done JOIN unnest($1::bigint[], $3::text[], $4::text[], $5::int[], $6::int[], $7::int[])
                     AS a(id, event_id, event_type, attempt, status, duration_ms) ON a.id = done.id)
     UPDATE webhooks w SET failing_since = NULL
      WHERE w.id IN (SELECT webhook_id FROM done) AND w.failing_since IS NOT NULL`,
    [
      done.map((d) => d.id),
      workerId,
      done.map((d) => d.event_id),
      done.map((d) => d.event_type),
      done.map((d) => d.attempt),
      done.map((d) => d.status),
      done.map((d) => d.duration_ms),
    ],
  )
}

/**
 * Hands claimed deliveries back without an attempt (held too long in memory,
 * their endpoint asked to wait, or the dispatcher is stopping): due again
 * after delayMs, and the claim's attempt is not counted.
 */
export async function releaseDeliveries(q: Queryable, ids: number[], workerId: string, delayMs: number): Promise<void> {
  await q.query(
    `UPDATE webhook_deliveries
        SET attempts = attempts - 1, locked_by = NULL, next_attempt_at = now() + $3 * interval '1 millisecond'
      WHERE id = ANY ($1::bigint[]) AND locked_by = $2`,
    [ids, workerId, delayMs],
  )
}

export interface AttemptFailure {
  status: number | null
  error: string | null
}

/** Schedules the next attempt after delayMs; false when the row is no longer this worker's (its lease lapsed). */
export async function rescheduleDelivery(q: Queryable, id: number, workerId: string, delayMs: number, failure: AttemptFailure): Promise<boolean> {
  const result = await q.query(
    `UPDATE webhook_deliveries
        SET next_attempt_at = now() + $3 * interval '1 millisecond', locked_by = NULL, last_status = $4, last_error = $5
      WHERE id = $1 AND locked_by = $2`,
    [id, workerId, delayMs, failure.status, failure.error],
  )
  return result.rowCount > 0
}

/** Gives up on the delivery; the row stays (status failed) so an operator can see what was lost and why. False: not this worker's any more. */
export async function giveUpDelivery(q: Queryable, id: number, workerId: string, failure: AttemptFailure): Promise<boolean> {
  const result = await q.query(
    `UPDATE webhook_deliveries SET status = 'failed', locked_by = NULL, last_status = $3, last_error = $4
      WHERE id = $1 AND locked_by = $2`,
    [id, workerId, failure.status, failure.error],
  )
  return result.rowCount > 0
}

/**
 * Notes a failed attempt on the endpoint; returns how long (ms) it has been
 * failing without a success in between.
 */
export async function markEndpointFailing(q: Queryable, webhookId: string): Promise<number> {
  const result = await q.query<{ failing_ms: number }>(
    `UPDATE webhooks SET failing_since = COALESCE(failing_since, now()) WHERE id = $1
     RETURNING (extract(epoch FROM now() - failing_since) * 1000)::float8 AS failing_ms`,
    [webhookId],
  )
  return result.rows[0]?.failing_ms ?? 0
}

/**
 * Disables the endpoint, saying why. `dropPending` (410 Gone: the receiver
 * asked Herald to stop) deletes every delivery still pending for it;
 * otherwise (failing for days, or the owner's PATCH) they wait, unclaimed, and
 * re-enabling resumes those still within their retry window.
 */
export async function disableWebhook(q: Queryable, webhookId: string, reason: string, dropPending: boolean): Promise<void> {
  await q.query(`UPDATE webhooks SET status = 'disabled', disabled_at = now(), disabled_reason = $2 WHERE id = $1 AND status = 'active'`, [
    webhookId,
    reason,
  ])
  if (dropPending) await q.query(`DELETE FROM webhook_deliveries WHERE webhook_id = $1 AND status = 'pending'`, [webhookId])
}

/**
 * Before an endpoint is enabled again: its pending deliveries already
 * attempted whose retry window (from the event, windowMs) has passed are
 * given up on, as they would have been had it stayed enabled; the others
 * (never attempted, or still within the window) are due as they were, and
 * the dispatchers are woken once the transaction commits.
 */
export async function expireDeliveriesOnResume(q: Queryable, webhookId: string, windowMs: number): Promise<number> {
  const result = await q.query(
    `UPDATE webhook_deliveries
        SET status = 'failed', locked_by = NULL, last_error = 'retry window passed while the endpoint was disabled'
      WHERE webhook_id = $1 AND status = 'pending' AND attempts > 0 AND created_at < now() - $2 * interval '1 millisecond'`,
    [webhookId, windowMs],
  )
  q.notifyAfterCommit(WEBHOOKS_CHANNEL)
  return result.rowCount
}

/**
 * Hands back, due at once, the deliveries leased to this worker that it does
 * not know it holds (`known`: held, in flight or being recorded): those of a
 * claim whose answer never arrived (the connection dropped after the
 * database applied it), which would otherwise wait for their lease to lapse.
 */
export async function releaseUnknownDeliveries(q: Queryable, workerId: string, known: number[]): Promise<number> {
  const released = await q.query(
    `UPDATE webhook_deliveries SET attempts = attempts - 1, locked_by = NULL, next_attempt_at = now()
      WHERE locked_by = $1 AND status = 'pending' AND id <> ALL ($2::bigint[])`,
    [workerId, known],
  )
  return released.rowCount
}
