// Runs jobs from the `jobs` table. Several workers, in one process or on many
// machines, share one table: each claims due jobs with FOR UPDATE SKIP LOCKED
// and holds them under a lease it keeps renewing while the handler runs. A
// worker killed mid-job simply stops renewing; once the lease lapses another
// worker claims the job again, so nothing is lost. Each claim has its own
// lease token (jobs.store.ts): whatever a run writes about its job names it,
// so a run that lost its lease can no longer touch the job, even when the
// same worker has claimed it again since.
import { hostname } from 'node:os'
import { randomBytes } from 'node:crypto'
import type { Database, Queryable } from '../db/database.ts'
import type { JobKind, JobPayloads } from './queue.ts'
import { JOBS_CHANNEL } from './queue.ts'
import { claimJobs, completeJob, parkJob, releaseLostClaims, renewLease, retryJob, saveJobPayload, type JobLease, type JobRow } from './jobs.store.ts'
import { mayBeConnectionError } from '../db/availability.ts'
import { PollingLoop } from './polling-loop.ts'
import { DatabaseOutage, databaseRetryDelayMs, type OutageLog } from './outage.ts'
import type { Metrics } from '../metrics/metrics.ts'

export interface Job<K extends JobKind = JobKind> {
  id: number
  kind: K
  payload: JobPayloads[K]
  /** The payload's shape (EnqueueOptions.payloadVersion): at most the worker's payloadVersions for the kind. */
  payloadVersion: number
  /** 1 on the first run. */
  attempts: number
  maxAttempts: number
  /** Aborted when this worker lost the lease (reason: a LeaseLostError) or is stopping (a WorkerStoppingError). */
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
  /** Called when a job's run fails (its error), or when recording that failure fails too. */
  onError?: (err: unknown, job: { id: number; kind: string }) => void
  /** Where the claim loop says, once each, that the database went away and came back. Default: silent. */
  log?: OutageLog
  /** Called once when a job fails its last attempt and is parked, so its domain can record the failure. */
  onGiveUp?: (job: { id: number; kind: JobKind; payload: unknown }, err: unknown) => Promise<void>
  /**
   * The highest payload version each kind's handler understands (it takes
   * every lower one too). Default 1 for every kind with a handler. A job of a
   * newer version, or of a kind without a handler, is never claimed here: it
   * waits for a worker of the release that wrote it (docs/upgrades.md).
   */
  payloadVersions?: { [K in JobKind]?: number }
  /** Where jobs claimed, retried and failed are counted (/metrics). */
  metrics?: Pick<Metrics, 'jobsClaimed' | 'jobsRetried' | 'jobsFailed'>
}

/** Exponential backoff with ±50% jitter: 2 s, 4 s, 8 s … capped at one hour. */
export function backoffMs(attempts: number): number {
  const base = Math.min(3_600_000, 1000 * 2 ** Math.min(attempts, 12))
  return Math.round(base * (0.5 + Math.random()))
}


/** The reason a job's signal is aborted when the worker stops (a LeaseLostError when the lease is gone). */
export class WorkerStoppingError extends Error {
  constructor() {
    super('the job worker is stopping')
  }
}

/** First wait before writing a job's outcome again after the database failed it; doubled per failure. */
export const RECORD_RETRY_FIRST_MS = 100
/** Longest wait between two tries of that write: the outcome is saved at most this long after the database is back. */
export const RECORD_RETRY_MAX_MS = 2_000

/**
 * SQLSTATEs after which the same transaction may well work if run again: it
 * was rolled back by a deadlock (40P01) or a serialization failure (40001),
 * or cut short by a lock, statement or idle-in-transaction timeout (55P03,
 * 57014, 25P03: the server bounding a transaction stuck behind a worker cut
 * off mid-transaction).
 */
const RETRYABLE_SQLSTATES = new Set(['40P01', '40001', '55P03', '57014', '25P03'])

function worthRetrying(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return mayBeConnectionError(err) || (typeof code === 'string' && RETRYABLE_SQLSTATES.has(code))
}

/** Resolves after ms, or at once when signal is aborted. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done)
  })
}

/**
 * Runs write (a transaction that records a job's outcome together with
 * job.completeIn or job.savePayloadIn) until it commits. When the database
 * cannot be reached it tries again after a short backoff, while the job is
 * still this worker's: what was already done (pushes sent) is recorded once
 * the database is back, instead of the job failing and being done again in
 * full. A write that already committed but whose answer was lost is not
 * applied twice: its retry finds the job's lease gone and throws
 * LeaseLostError (the same as when another worker took the job over).
 *
 * A deadlock, serialization failure or server timeout is tried again too.
 * It stops, rethrowing the last error, on any other error (a data error
 * would fail again), when the worker is stopping,
 * or, once the lease was seen lost, after one more try (whose lease check
 * settles whether the outcome is still this worker's to write).
 */
export async function retryWhileLeased<T>(signal: AbortSignal, write: () => Promise<T>): Promise<T> {
  for (let failures = 1; ; failures++) {
    const lastTry = signal.aborted
    try {
      return await write()
    } catch (err) {
      if (err instanceof LeaseLostError || !worthRetrying(err) || lastTry) throw err
      if (signal.aborted && !(signal.reason instanceof LeaseLostError)) throw err
      await pause(databaseRetryDelayMs(failures, RECORD_RETRY_FIRST_MS, RECORD_RETRY_MAX_MS), signal)
    }
  }
}

const SILENT: OutageLog = { warn: () => undefined, info: () => undefined }

export class JobWorker {
  readonly workerId: string
  private readonly concurrency: number
  private readonly leaseMs: number
  private readonly outage: DatabaseOutage
  private readonly loop: PollingLoop
  private running = 0
  private readonly active = new Set<Promise<void>>()
  private readonly controllers = new Set<AbortController>()
  /** Tokens of claims that failed: the database may have applied them all the same. */
  private lostClaims: string[] = []

  constructor(
    private readonly db: Database,
    private readonly handlers: JobHandlers,
    private readonly options: WorkerOptions = {},
  ) {
    this.concurrency = options.concurrency ?? 4
    this.leaseMs = options.leaseMs ?? 30_000
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`
    this.outage = new DatabaseOutage(options.log ?? SILENT, 'job worker')
    // A NOTIFY from enqueue() (any process) wakes the worker at once.
    this.loop = new PollingLoop({ db, channel: JOBS_CHANNEL, pollIntervalMs: options.pollIntervalMs ?? 1000, outage: this.outage, poll: () => this.claimAndRun() })
  }

  get isRunning(): boolean {
    return this.loop.isRunning
  }

  async start(): Promise<void> {
    await this.loop.start()
  }

  /** Looks for work now rather than at the next poll (not while the database is away: the backoff decides then). */
  wake(): void {
    this.loop.wake()
  }

  /** Stops claiming, aborts running handlers' signals after graceMs, and waits for them. */
  async stop(graceMs = 10_000): Promise<void> {
    await this.loop.stop()
    const grace = setTimeout(() => this.controllers.forEach((c) => c.abort(new WorkerStoppingError())), graceMs)
    await Promise.allSettled([...this.active])
    clearTimeout(grace)
  }

  /** One look for work (the polling loop's): claims as many due jobs as there is room for and starts them. */
  private async claimAndRun(): Promise<boolean> {
    if (this.lostClaims.length > 0) {
      await releaseLostClaims(this.db, this.workerId, this.lostClaims)
      this.lostClaims = []
      this.outage.succeeded()
    }
    const free = this.concurrency - this.running
    if (free <= 0) return false
    const token = randomBytes(12).toString('base64url')
    // Kept until the claim's answer comes: a claim whose answer is lost is handed back by its token.
    this.lostClaims.push(token)
    const kinds = Object.keys(this.handlers) as JobKind[]
    const payloadVersions = kinds.map((kind) => this.options.payloadVersions?.[kind] ?? 1)
    const claimed = await claimJobs(this.db, { limit: free, kinds, payloadVersions, workerId: this.workerId, token, leaseMs: this.leaseMs })
    this.lostClaims.pop()
    this.outage.succeeded()
    for (const row of claimed) {
      this.options.metrics?.jobsClaimed.inc({ kind: row.kind })
      this.run(row)
    }
    return claimed.length > 0 && this.running < this.concurrency
  }

  private run(row: JobRow): void {
    this.running++
    const task = this.execute(row).finally(() => {
      this.running--
      this.active.delete(task)
      this.wake()
    })
    this.active.add(task)
  }

  private async execute(row: JobRow): Promise<void> {
    const controller = new AbortController()
    this.controllers.add(controller)
    const lease: JobLease = { id: row.id, token: row.lease_token }
    let completed = false
    // One renewal in flight at a time: while the database is away they would
    // otherwise pile up on the pool's connections, to arrive all at once later.
    let renewing = false
    const renew = setInterval(() => {
      if (renewing) return
      renewing = true
      void this.renewLease(lease, controller).finally(() => (renewing = false))
    }, Math.max(100, this.leaseMs / 3))
    const job: Job = {
      id: row.id,
      kind: row.kind,
      payload: row.payload as JobPayloads[JobKind],
      payloadVersion: row.payload_version,
      attempts: row.attempts,
      maxAttempts: row.max_attempts,
      signal: controller.signal,
      completeIn: async (tx) => {
        if (!(await completeJob(tx, lease))) throw new LeaseLostError(row.id)
        completed = true
      },
      savePayloadIn: async (tx, payload) => {
        if (!(await saveJobPayload(tx, lease, payload))) throw new LeaseLostError(row.id)
      },
    }
    try {
      const handler = this.handlers[row.kind] as JobHandler<JobKind>
      await handler(job)
      if (!completed) await retryWhileLeased(controller.signal, () => completeJob(this.db, lease))
    } catch (err) {
      if (!(err instanceof LeaseLostError)) await this.fail(row, lease, controller.signal, err).catch((e) => this.options.onError?.(e, row))
      if (!(err instanceof RetryLater)) this.options.onError?.(err, row)
    } finally {
      clearInterval(renew)
      this.controllers.delete(controller)
    }
  }

  private async renewLease(lease: JobLease, controller: AbortController): Promise<void> {
    try {
      if (!(await renewLease(this.db, lease, this.leaseMs))) controller.abort(new LeaseLostError(lease.id))
    } catch {
      // The database is away for a moment; the next renewal tries again.
    }
  }

  /**
   * Puts a failed job back with a delay, or parks it for good after its last
   * attempt. Written again until it lands (or the job is another worker's):
   * a job whose failure was never recorded would stay locked to this worker
   * until its lease lapsed, with nobody running it.
   */
  private async fail(row: JobRow, lease: JobLease, signal: AbortSignal, err: unknown): Promise<void> {
    const message = err instanceof Error ? err.message : String(err)
    const retryable = row.attempts < row.max_attempts || err instanceof RetryLater
    if (!retryable) {
      const parked = await retryWhileLeased(signal, () => parkJob(this.db, lease, message))
      if (parked) {
        this.options.metrics?.jobsFailed.inc({ kind: row.kind })
        await retryWhileLeased(signal, async () => this.options.onGiveUp?.(row, err))
      }
      return
    }
    const delayMs = err instanceof RetryLater ? err.delayMs : backoffMs(row.attempts)
    const retried = await retryWhileLeased(signal, () => retryJob(this.db, lease, { message, delayMs, keepAttempt: err instanceof RetryLater }))
    if (retried) this.options.metrics?.jobsRetried.inc({ kind: row.kind })
  }
}
