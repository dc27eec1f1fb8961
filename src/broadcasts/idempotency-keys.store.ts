// SQL for idempotency_keys (migration 0009), the one module that writes it.
// A key is reserved by an INSERT … ON CONFLICT in a statement of its own, so
// every API process sees the reservation at once, completed in the send's own
// transaction (completeKey), and released when the send fails.
import type { Queryable } from '../platform/db/database.ts'

export interface IdempotencyKeyRow {
  request_hash: string
  status: 'in_progress' | 'done'
  response_status: number | null
  response_body: unknown
}

export interface Reservation {
  projectId: string
  key: string
  requestHash: string
  /** Names this request's hold on the key: completion and release check it. */
  token: string
  /** How long the hold lasts before a retry may presume its holder dead. */
  leaseMs: number
  /** How long the key and its answer are kept. */
  keepMs: number
}

/**
 * Reserves the key for this request, or says why not. The row is taken
 * (updated) rather than inserted when its 24 hours are over (any body), or
 * when it is still in progress past its lease with the same body: the
 * request holding it died before it committed, so nothing was sent, and this
 * retry runs it. The conditional update is re-checked against the committed
 * row (READ COMMITTED), so a holder committing at that moment wins.
 *
 * Returns 'reserved', the row that holds the key, or null when the row went
 * away between the two statements (its request failed and released it: try again).
 */
export async function reserveKey(q: Queryable, r: Reservation): Promise<'reserved' | IdempotencyKeyRow | null> {
  const taken = await q.query(
    `INSERT INTO idempotency_keys (project_id, key, request_hash, status, token, locked_until, expires_at)
     VALUES ($1, $2, $3, 'in_progress', $4, now() + $5 * interval '1 millisecond', now() + $6 * interval '1 millisecond')
     ON CONFLICT (project_id, key) DO UPDATE SET
       request_hash = EXCLUDED.request_hash, status = 'in_progress', token = EXCLUDED.token,
       locked_until = EXCLUDED.locked_until, response_status = NULL, response_body = NULL,
       created_at = now(), expires_at = EXCLUDED.expires_at
     WHERE idempotency_keys.expires_at <= now()
        OR (idempotency_keys.status = 'in_progress' AND idempotency_keys.locked_until <= now()
            AND idempotency_keys.request_hash = EXCLUDED.request_hash)
     RETURNING 1`,
    [r.projectId, r.key, r.requestHash, r.token, r.leaseMs, r.keepMs],
  )
  if (taken.rowCount > 0) return 'reserved'
  const held = await q.query<IdempotencyKeyRow>(
    `SELECT request_hash, status, response_status, response_body FROM idempotency_keys
      WHERE project_id = $1 AND key = $2 AND expires_at > now()`,
    [r.projectId, r.key],
  )
  return held.rows[0] ?? null
}

/**
 * Stores the answer of the request holding the key (its token), in that
 * request's transaction. False when the key is no longer this request's:
 * it outlived its lease and a retry took the key over, so this transaction
 * must roll back (the retry sends, not this one).
 */
export async function completeKey(
  q: Queryable,
  projectId: string,
  key: string,
  token: string,
  response: { status: number; body: unknown },
): Promise<boolean> {
  const done = await q.query(
    `UPDATE idempotency_keys SET status = 'done', token = NULL, locked_until = NULL, response_status = $4, response_body = $5
      WHERE project_id = $1 AND key = $2 AND token = $3 AND status = 'in_progress'`,
    [projectId, key, token, response.status, JSON.stringify(response.body)],
  )
  return done.rowCount > 0
}

/** Frees the key after its request failed (nothing was created): a retry runs afresh. Only the holder's own row. */
export async function releaseKey(q: Queryable, projectId: string, key: string, token: string): Promise<void> {
  await q.query(`DELETE FROM idempotency_keys WHERE project_id = $1 AND key = $2 AND token = $3 AND status = 'in_progress'`, [
    projectId,
    key,
    token,
  ])
}

/** Deletes up to `limit` keys whose 24 hours are over; returns how many. */
export async function pruneExpiredKeys(q: Queryable, limit: number): Promise<number> {
  const pruned = await q.query(
    `DELETE FROM idempotency_keys WHERE (project_id, key) IN (
       SELECT project_id, key FROM idempotency_keys WHERE expires_at <= now() ORDER BY expires_at LIMIT $1)`,
    [limit],
  )
  return pruned.rowCount
}
