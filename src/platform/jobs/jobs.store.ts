// SQL for the jobs table, the one place that writes it (enqueue() in queue.ts
// aside). A claim hands out a lease: the worker's id, for operators, and a
// token of that claim. Every later write about the job names the token, so a
// write left over from an earlier claim (a renewal or completion that sat in
// TCP during a network cut, or a run of the same worker that lost its lease
// and was claimed again) matches nothing and changes nothing.
import type { Queryable } from '../db/database.ts'
import type { JobKind } from './queue.ts'

export interface JobRow {
  id: number
  kind: JobKind
  payload: unknown
  /** 1 unless the enqueuing release wrote a newer payload shape (migration 0022). */
  payload_version: number
  attempts: number
  max_attempts: number
  lease_token: string
}

/** What a worker holds of a claimed job. */
export interface JobLease {
  id: number
  token: string
}

export interface ClaimOptions {
  limit: number
  kinds: string[]
  /** The highest payload version understood for each of kinds, in the same order. */
  payloadVersions: number[]
  workerId: string
  /** Distinct per claim: two claims of one job, even by one worker, never share it. */
  token: string
  leaseMs: number
}

/**
 * Claims up to limit due jobs of these kinds and payload versions, skipping
 * those another worker is claiming at this moment. A job of another kind or a
 * newer payload version is left alone (not claimed, not counted, not
 * parked): it waits for a worker of a release that knows it.
 */
export async function claimJobs(q: Queryable, options: ClaimOptions): Promise<JobRow[]> {
  const result = await q.query<JobRow>(
    `WITH next AS (
       SELECT id FROM jobs
        WHERE run_at <= now() AND (locked_until IS NULL OR locked_until < now()) AND kind = ANY($4::text[])
              AND payload_version <= ($6::int[])[array_position($4::text[], kind)]
        ORDER BY run_at, id
        LIMIT $1
        FOR UPDATE SKIP LOCKED)
     UPDATE jobs SET locked_by = $2, lease_token = $5, locked_until = now() + $3 * interval '1 millisecond', attempts = jobs.attempts + 1
       FROM next WHERE jobs.id = next.id
     RETURNING jobs.id, jobs.kind, jobs.payload, jobs.payload_version, jobs.attempts, jobs.max_attempts, jobs.lease_token`,
    [options.limit, options.workerId, options.leaseMs, options.kinds, options.token, options.payloadVersions],
  )
  return result.rows
}

/**
 * Extends a lease its holder still holds: the same claim (token), and not
 * yet lapsed. A lapsed lease is never brought back, even when nobody has
 * claimed the job since: a renewal that reaches the database late (held in
 * TCP during a cut) must not keep a job nobody may be running locked for
 * another lease. False when the lease is gone.
 */
export async function renewLease(q: Queryable, lease: JobLease, leaseMs: number): Promise<boolean> {
  const renewed = await q.query(
    `UPDATE jobs SET locked_until = now() + $3 * interval '1 millisecond'
      WHERE id = $1 AND lease_token = $2 AND locked_until > now()`,
    [lease.id, lease.token, leaseMs],
  )
  return renewed.rowCount > 0
}

/**
 * Deletes a finished job. Only the token is checked, not the lease's time:
 * a job whose lease lapsed but that nobody claimed since was run by this
 * holder alone, and recording its end is right. False when another claim
 * took the job over (or it is already gone).
 */
export async function completeJob(q: Queryable, lease: JobLease): Promise<boolean> {
  const done = await q.query('DELETE FROM jobs WHERE id = $1 AND lease_token = $2', [lease.id, lease.token])
  return done.rowCount > 0
}

/**
 * Deletes the jobs of a kind about one broadcast (payload.broadcast_id): work
 * made pointless by the caller's change, e.g. an A/B test's decision once a
 * person decided. Run first in the caller's transaction (a job's own row
 * comes first in the lock order); a run in flight then finds its lease lost
 * and its transaction rolls back. Returns how many were deleted.
 */
export async function deleteBroadcastJobs(q: Queryable, kind: string, broadcastId: string): Promise<number> {
  const deleted = await q.query(`DELETE FROM jobs WHERE kind = $1 AND payload ->> 'broadcast_id' = $2`, [kind, broadcastId])
  return deleted.rowCount
}

/** Replaces the payload (progress a re-run must see). False when another claim took the job over. */
export async function saveJobPayload(q: Queryable, lease: JobLease, payload: unknown): Promise<boolean> {
  const saved = await q.query('UPDATE jobs SET payload = $3 WHERE id = $1 AND lease_token = $2', [lease.id, lease.token, JSON.stringify(payload)])
  return saved.rowCount > 0
}

/**
 * Hands a failed job back, due again after delayMs; with keepAttempt the
 * claim's attempt is not counted (the handler asked to wait, it did not fail).
 * Clears the lease, so nothing of this claim can touch the job afterwards.
 */
export async function retryJob(
  q: Queryable,
  lease: JobLease,
  failure: { message: string; delayMs: number; keepAttempt: boolean },
): Promise<boolean> {
  const released = await q.query(
    `UPDATE jobs SET locked_by = NULL, lease_token = NULL, locked_until = NULL, last_error = $3,
            run_at = now() + $4 * interval '1 millisecond',
            attempts = CASE WHEN $5::boolean THEN attempts - 1 ELSE attempts END
      WHERE id = $1 AND lease_token = $2`,
    [lease.id, lease.token, failure.message, failure.delayMs, failure.keepAttempt],
  )
  return released.rowCount > 0
}

/** Parks a job that failed its last attempt: kept (never claimed again) so an operator can see what failed and why. */
export async function parkJob(q: Queryable, lease: JobLease, message: string): Promise<boolean> {
  const parked = await q.query(
    `UPDATE jobs SET locked_by = NULL, lease_token = NULL, locked_until = 'infinity', last_error = $3
      WHERE id = $1 AND lease_token = $2`,
    [lease.id, lease.token, message],
  )
  return parked.rowCount > 0
}

/**
 * Hands back the jobs of claims whose answer never arrived (the connection
 * dropped with the claim in flight, after the database had applied it): this
 * worker holds them without knowing it, and they would wait for their lease
 * to lapse. The claim's attempt is not counted.
 */
export async function releaseLostClaims(q: Queryable, workerId: string, tokens: string[]): Promise<number> {
  const released = await q.query(
    `UPDATE jobs SET locked_by = NULL, lease_token = NULL, locked_until = NULL, attempts = attempts - 1
      WHERE lease_token = ANY($2::text[]) AND locked_by = $1`,
    [workerId, tokens],
  )
  return released.rowCount
}
