// Enqueuing background work. A job is a row in `jobs`, written with the same
// transaction (q) as the row it is about, so either both exist or neither.
import type { Queryable } from '../db/database.ts'

/**
 * Every job kind and its payload. Empty here: each domain adds its own kinds
 * to it (TypeScript declaration merging) beside their handlers, e.g.
 * delivery/fanout.ts, and src/worker.ts registers the handlers.
 */
export interface JobPayloads {}

export type JobKind = keyof JobPayloads

/** NOTIFY channel that wakes workers (in any process) when a job is enqueued. */
export const JOBS_CHANNEL = 'herald_jobs'

export interface EnqueueOptions {
  /** When the job may first run. Default: now. */
  runAt?: Date
  /** Attempts before the job is given up. Default 25 (with exponential backoff, about a day). */
  maxAttempts?: number
  /**
   * The payload's shape, raised by a release that changes it (docs/upgrades.md);
   * only workers whose handler understands it claim the job. Default 1.
   */
  payloadVersion?: number
}

export async function enqueue<K extends JobKind>(
  q: Queryable,
  kind: K,
  payload: JobPayloads[K],
  options: EnqueueOptions = {},
): Promise<number> {
  const result = await q.query<{ id: number }>(
    `INSERT INTO jobs (kind, payload, run_at, max_attempts, payload_version) VALUES ($1, $2, COALESCE($3, now()), $4, $5) RETURNING id`,
    [kind, JSON.stringify(payload), options.runAt ?? null, options.maxAttempts ?? 25, options.payloadVersion ?? 1],
  )
  // Wakes the workers once the transaction commits; future jobs are found by polling.
  if (!options.runAt || options.runAt.getTime() <= Date.now()) q.notifyAfterCommit(JOBS_CHANNEL)
  return result.rows[0].id
}
