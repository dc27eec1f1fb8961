// Enqueuing background work. A job is a row in `jobs`, written with the same
// transaction (q) as the row it is about, so either both exist or neither.
import type { Queryable } from '../db/database.ts'

/** Every job kind and its payload. Handlers are registered per kind by the worker. */
export interface JobPayloads {
  /** Fans a broadcast out to its audience (status pending). */
  fanout_broadcast: { broadcast_id: string }
  /** Fires a scheduled broadcast at its scheduled_at. */
  fire_broadcast: { broadcast_id: string }
  /**
   * Sends to the broadcast's audience with ids in (after, through]. `through`
   * is null until the job has fixed its slice (then it never changes, so a
   * re-run after a crash sends the same slice again, and no other).
   */
  push_batch: { broadcast_id: string; after: string | null; through: string | null }
  /** Sends again to the subscribers whose last push asked for a retry (429, 5xx, timeout). */
  push_retry: { broadcast_id: string; subscriber_ids: string[]; attempt: number }
}

export type JobKind = keyof JobPayloads

/** NOTIFY channel that wakes workers (in any process) when a job is enqueued. */
export const JOBS_CHANNEL = 'herald_jobs'

export interface EnqueueOptions {
  /** When the job may first run. Default: now. */
  runAt?: Date
  /** Attempts before the job is given up. Default 25 (with exponential backoff, about a day). */
  maxAttempts?: number
}

export async function enqueue<K extends JobKind>(
  q: Queryable,
  kind: K,
  payload: JobPayloads[K],
  options: EnqueueOptions = {},
): Promise<number> {
  const result = await q.query<{ id: number }>(
    `INSERT INTO jobs (kind, payload, run_at, max_attempts) VALUES ($1, $2, COALESCE($3, now()), $4) RETURNING id`,
    [kind, JSON.stringify(payload), options.runAt ?? null, options.maxAttempts ?? 25],
  )
  // Wakes the workers once the transaction commits; future jobs are found by polling.
  if (!options.runAt || options.runAt.getTime() <= Date.now()) q.notifyAfterCommit(JOBS_CHANNEL)
  return result.rows[0].id
}
