// SQL for the delivery log: one row per attempt to send to an endpoint,
// written in the transaction that records the attempt's outcome, read newest
// first by GET /v1/webhooks/:id/deliveries, and kept small by pruneAttempts.
import type { Queryable } from '../platform/db/database.ts'

/** Attempts are kept this long at least (unless the endpoint's cap cuts sooner, below). */
export const ATTEMPT_RETENTION_MS = 7 * 24 * 3_600_000
/**
 * The newest attempts kept per endpoint, whatever their age: the log's size
 * bound. An endpoint taking more than this in 7 days keeps a shorter history
 * (10,000 rows of about 150 bytes: 1.5 MB per endpoint at most).
 */
export const MAX_ATTEMPTS_PER_WEBHOOK = 10_000

export type AttemptOutcome = 'delivered' | 'failed' | 'retrying'

export interface AttemptRecord {
  webhook_id: string
  event_id: string
  event_type: string
  attempt: number
  outcome: AttemptOutcome
  response_status: number | null
  error: string | null
  duration_ms: number
}

export interface AttemptRow extends AttemptRecord {
  id: string
  attempted_at: Date
  next_attempt_at: Date | null
}

/**
 * Records one attempt; a retry is due `nextAttemptInMs` after now (the same
 * now() as the delivery row's). Nothing when the webhook was deleted meanwhile.
 */
export async function insertAttempt(q: Queryable, record: AttemptRecord, nextAttemptInMs: number | null = null): Promise<void> {
  await q.query(
    `INSERT INTO webhook_attempts (webhook_id, event_id, event_type, attempt, outcome, response_status, error, duration_ms, next_attempt_at)
     SELECT id, $2::text, $3::text, $4::int, $5::text, $6::int, $7::text, $8::int, now() + $9::float8 * interval '1 millisecond'
       FROM webhooks WHERE id = $1`,
    [
      record.webhook_id,
      record.event_id,
      record.event_type,
      record.attempt,
      record.outcome,
      record.response_status,
      record.error,
      record.duration_ms,
      nextAttemptInMs,
    ],
  )
}

/**
 * A page of the endpoint's attempts, newest first, after the cursor (an attempt
 * id). Ordered by the table's bigint id, not the text `id` of the select list
 * (ORDER BY prefers an output column's name: "9" would sort above "12").
 */
export async function listAttemptsPage(q: Queryable, webhookId: string, limit: number, cursor: string | null): Promise<AttemptRow[]> {
  const result = await q.query<AttemptRow>(
    `SELECT id::text AS id, webhook_id, event_id, event_type, attempt, outcome, response_status, error, duration_ms,
            attempted_at, next_attempt_at
       FROM webhook_attempts
      WHERE webhook_id = $1 AND ($3::bigint IS NULL OR id < $3::bigint)
      ORDER BY webhook_attempts.id DESC LIMIT $2`,
    [webhookId, limit, cursor],
  )
  return result.rows
}

/**
 * Deletes what the log no longer keeps: every attempt older than the
 * retention (rows are inserted in id order, so the oldest are found from the
 * primary key's low end, reading only the rows deleted), and, for the
 * endpoints named, all but their newest `perWebhook` attempts (an index
 * probe of `perWebhook` entries each).
 */
export async function pruneAttempts(
  q: Queryable,
  options: { webhookIds: string[]; retentionMs: number; perWebhook: number },
): Promise<number> {
  const old = await q.query(
    `DELETE FROM webhook_attempts
      WHERE id < COALESCE(
        (SELECT id FROM webhook_attempts WHERE attempted_at >= now() - $1 * interval '1 millisecond' ORDER BY id LIMIT 1),
        (SELECT max(id) + 1 FROM webhook_attempts))`,
    [options.retentionMs],
  )
  if (options.webhookIds.length === 0) return old.rowCount
  const capped = await q.query(
    `DELETE FROM webhook_attempts a
      USING (SELECT w.id AS webhook_id,
                    (SELECT x.id FROM webhook_attempts x WHERE x.webhook_id = w.id ORDER BY x.id DESC OFFSET $2 LIMIT 1) AS cut
               FROM unnest($1::text[]) AS w(id)) c
      WHERE a.webhook_id = c.webhook_id AND a.id <= c.cut`,
    [options.webhookIds, options.perWebhook],
  )
  return old.rowCount + capped.rowCount
}
