// Runs jobs from the `jobs` table. Several workers, in one process or on many
// machines, share one table: each claims due jobs with FOR UPDATE SKIP LOCKED
// and holds them under a lease it keeps renewing while the handler runs. A
// worker killed mid-job simply stops renewing; once the lease lapses another
// worker claims the job again, so nothing is lost.
import { hostname } from 'node:os'
import { randomBytes } from 'node:crypto'
import type { Database, Queryable } from '../db/database.ts'
import type { JobKind, JobPayloads } from './queue.ts'
import { JOBS_CHANNEL } from './queue.ts'

export interface Job<K extends JobKind = JobKind> {
  id: number
  kind: K
  payload: JobPayloads[K]
  /** 1 on the first run. */
  attempts: number
  maxAttempts: number
  /** Aborted when this worker lost the lease or is stopping. */
  signal: AbortSignal
  /**
   * Deletes the job inside the handler's own transaction, so its effects and
   * its completion commit together. Throws LeaseLostError (rolling the
   * transaction back) when another worker has taken the job over.
   */
  completeIn(tx: Queryable): Promise<void>
  /** Replaces the payload inside tx (progress a re-run must see); throws LeaseLostError like completeIn. */
  savePayloadIn(tx: Queryable, payload: JobPayloads[K]): Promise<void>
}

export type JobHandler<K extends JobKind> = (job: Job<K>) => Promise<void>
export type JobHandlers = { [K in JobKind]?: JobHandler<K> }

/** Thrown by a handler to be retried after a chosen delay (e.g. a Retry-After) rather than the default backoff. */
export class RetryLater extends Error {
  constructor(
    readonly delayMs: number,
    message = 'retry later',
  ) {
    super(message)
  }
}

export class LeaseLostError extends Error {
  constructor(jobId: number) {
    super(`lease on job ${jobId} was lost to another worker`)
  }
}

export interface WorkerOptions {
  /** Jobs run at once by this worker. Default 4. */
  concurrency?: number
  /** How often to look for due jobs when nothing wakes the worker (scheduled jobs). Default 1000 ms. */
  pollIntervalMs?: number
  /** How long a claim lasts without renewal. Default 30 s: a crashed worker's jobs restart after at most this. */
  leaseMs?: number
  /** Name in locked_by, for operators. Default host:pid:random. */
  workerId?: string
  onError?: (err: unknown, job: { id: number; kind: string }) => void
  /** Called once when a job fails its last attempt and is parked, so its domain can record the failure. */
  onGiveUp?: (job: { id: number; kind: JobKind; payload: unknown }, err: unknown) => Promise<void>
}

/** Exponential backoff with ±50% jitter: 2 s, 4 s, 8 s … capped at one hour. */
export function backoffMs(attempts: number): number {
  const base = Math.min(3_600_000, 1000 * 2 ** Math.min(attempts, 12))
  return Math.round(base * (0.5 + Math.random()))
}

interface JobRow {
  id: number
  kind: JobKind
  payload: unknown
  attempts: number
  max_attempts: number
}

export class JobWorker {
  readonly workerId: string
  private readonly concurrency: number
  private readonly pollIntervalMs: number
  private readonly leaseMs: number
  private running = 0
  private stopped = true
  private timer: NodeJS.Timeout | null = null
  private claiming = false
  private wakeAgain = false
  private stopListening: (() => Promise<void>) | null = null
  private readonly active = new Set<Promise<void>>()
  private readonly controllers = new Set<AbortController>()

  constructor(
    private readonly db: Database,
    private readonly handlers: JobHandlers,
    private readonly options: WorkerOptions = {},
  ) {
    this.concurrency = options.concurrency ?? 4
    this.pollIntervalMs = options.pollIntervalMs ?? 1000
    this.leaseMs = options.leaseMs ?? 30_000
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`
  }

  get isRunning(): boolean {
    return !this.stopped
  }

  async start(): Promise<void> {
    this.stopped = false
    // A NOTIFY from enqueue() (any process) wakes the worker at once.
    this.stopListening = await this.db.listen(JOBS_CHANNEL, () => this.wake())
    this.schedule(0)
  }

  /** Looks for work now rather than at the next poll. */
  wake(): void {
    if (this.stopped) return
    this.schedule(0)
  }

  /** Stops claiming, aborts running handlers' signals after graceMs, and waits for them. */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    await this.stopListening?.()
    const grace = setTimeout(() => this.controllers.forEach((c) => c.abort()), graceMs)
    await Promise.allSettled([...this.active])
    clearTimeout(grace)
  }

  private schedule(delayMs: number): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = setTimeout(() => void this.claimAndRun(), delayMs)
    this.timer.unref?.()
  }

  private async claimAndRun(): Promise<void> {
    if (this.stopped) return
    if (this.claiming) {
      this.wakeAgain = true
      return
    }
    this.claiming = true
    let claimed: JobRow[] = []
    try {
      const free = this.concurrency - this.running
      if (free > 0) claimed = await this.claim(free)
    } catch (err) {
      this.options.onError?.(err, { id: 0, kind: 'claim' })
    } finally {
      this.claiming = false
    }
    for (const row of claimed) this.run(row)
    if (this.stopped) return
    const more = claimed.length > 0 && this.running < this.concurrency
    this.schedule(more || this.wakeAgain ? 0 : this.pollIntervalMs)
    this.wakeAgain = false
  }

  private async claim(limit: number): Promise<JobRow[]> {
    const kinds = Object.keys(this.handlers)
    const result = await this.db.query<JobRow>(
      `WITH next AS (
         SELECT id FROM jobs
          WHERE run_at <= now() AND (locked_until IS NULL OR locked_until < now()) AND kind = ANY($4::text[])
          ORDER BY run_at, id
          LIMIT $1
          FOR UPDATE SKIP LOCKED)
       UPDATE jobs SET locked_by = $2, locked_until = now() + $3 * interval '1 millisecond', attempts = jobs.attempts + 1
         FROM next WHERE jobs.id = next.id
       RETURNING jobs.id, jobs.kind, jobs.payload, jobs.attempts, jobs.max_attempts`,
      [limit, this.workerId, this.leaseMs, kinds],
    )
    return result.rows
  }

  private run(row: JobRow): void {
    this.running++
    const task = this.execute(row).finally(() => {
      this.running--
      this.active.delete(task)
      if (!this.stopped) this.schedule(0)
    })
    this.active.add(task)
  }

  private async execute(row: JobRow): Promise<void> {
    const controller = new AbortController()
    this.controllers.add(controller)
    let completed = false
    const renew = setInterval(() => void this.renewLease(row.id, controller), Math.max(100, this.leaseMs / 3))
    const job: Job = {
      id: row.id,
      kind: row.kind,
      payload: row.payload as JobPayloads[JobKind],
      attempts: row.attempts,
      maxAttempts: row.max_attempts,
      signal: controller.signal,
      completeIn: async (tx) => {
        const done = await tx.query('DELETE FROM jobs WHERE id = $1 AND locked_by = $2', [row.id, this.workerId])
        if (done.rowCount === 0) throw new LeaseLostError(row.id)
        completed = true
      },
      savePayloadIn: async (tx, payload) => {
        const saved = await tx.query('UPDATE jobs SET payload = $3 WHERE id = $1 AND locked_by = $2', [
          row.id,
          this.workerId,
          JSON.stringify(payload),
        ])
        if (saved.rowCount === 0) throw new LeaseLostError(row.id)
      },
    }
    try {
      const handler = this.handlers[row.kind] as JobHandler<JobKind>
      await handler(job)
      if (!completed) await this.db.query('DELETE FROM jobs WHERE id = $1 AND locked_by = $2', [row.id, this.workerId])
    } catch (err) {
      if (!(err instanceof LeaseLostError)) await this.fail(row, err).catch((e) => this.options.onError?.(e, row))
      if (!(err instanceof RetryLater)) this.options.onError?.(err, row)
    } finally {
      clearInterval(renew)
      this.controllers.delete(controller)
    }
  }

  private async renewLease(id: number, controller: AbortController): Promise<void> {
    try {
      const renewed = await this.db.query(
        `UPDATE jobs SET locked_until = now() + $3 * interval '1 millisecond' WHERE id = $1 AND locked_by = $2`,
        [id, this.workerId, this.leaseMs],
      )
      if (renewed.rowCount === 0) controller.abort()
    } catch {
      // The database is away for a moment; the next renewal tries again.
    }
  }

  /** Puts a failed job back with a delay, or parks it for good after its last attempt. */
  private async fail(row: JobRow, err: unknown): Promise<void> {
    const message = err instanceof Error ? err.message : String(err)
    const retryable = row.attempts < row.max_attempts || err instanceof RetryLater
    if (!retryable) {
      // Kept (never claimed again) so an operator can see what failed and why.
      await this.db.query(
        `UPDATE jobs SET locked_by = NULL, locked_until = 'infinity', last_error = $3 WHERE id = $1 AND locked_by = $2`,
        [row.id, this.workerId, message],
      )
      await this.options.onGiveUp?.(row, err)
      return
    }
    const delay = err instanceof RetryLater ? err.delayMs : backoffMs(row.attempts)
    await this.db.query(
      `UPDATE jobs SET locked_by = NULL, locked_until = NULL, last_error = $3,
              run_at = now() + $4 * interval '1 millisecond',
              attempts = CASE WHEN $5::boolean THEN attempts - 1 ELSE attempts END
        WHERE id = $1 AND locked_by = $2`,
      [row.id, this.workerId, message, delay, err instanceof RetryLater],
    )
  }
}
