// Group commit for the events beacon. Each beacon waits for the transaction
// that writes it, and concurrent beacons share that transaction: the first
// one is written at the next turn of the event loop, and those arriving while
// a write is in flight go together into the next. No timer: alone, a beacon
// costs one transaction, as before; under load, one transaction carries as
// many beacons as arrived during the previous one (up to MAX_BATCH), so the
// database does one commit, and each busy broadcast row one update, per batch.
//
// When a batch's transaction fails, a connection-level error fails the whole
// batch at once (another try would fail the same way, and beacons queue
// behind it); a data error splits the batch in halves, recursively, so one
// bad beacon costs about 2 log2(N) extra transactions, not N, and loses no
// other beacon.
//
// A beacon's promise settles only once its transaction has committed (or
// finally failed). The route answers 202 either way (api.md 4.10), so a
// beacon that could not be written is logged here, at error level with the
// number lost, and counted in `lost`: never dropped without a trace.
import type pino from 'pino'
import { mayBeConnectionError } from '../platform/db/availability.ts'

/** Beacons per transaction at most: keeps the statements' arrays and the time the broadcast rows stay locked small. */
export const MAX_BEACONS_PER_TRANSACTION = 500
/**
 * Beacons waiting for a transaction at most (about 100 bytes each, plus the
 * request they hold open). Past it the database is not keeping up: a new
 * beacon is answered at once and dropped, counted and logged, rather than
 * queued without bound.
 */
export const MAX_QUEUED_BEACONS = 10_000
/** Beacons dropped past MAX_QUEUED_BEACONS are logged as one line per this long at most, with their count. */
export const DROPPED_LOG_INTERVAL_MS = 10_000

/** Rejects the beacons of a write that finally failed; the writer has already logged and counted them. */
export class BeaconsLostError extends Error {
  constructor(readonly lost: number, options: { cause: unknown }) {
    super(`${lost} beacon(s) could not be written`, options)
  }
}

interface Waiting<T> {
  item: T
  resolve(recorded: boolean): void
  reject(err: unknown): void
}

export interface BeaconWriterOptions {
  /** Beacons per transaction at most; default MAX_BEACONS_PER_TRANSACTION. */
  maxBatch?: number
  /** Beacons waiting at most before new ones are dropped; default MAX_QUEUED_BEACONS. */
  maxQueued?: number
}

export class BeaconWriter<T> {
  private queue: Array<Waiting<T>> = []
  private writing: Promise<void> | null = null
  private scheduled = false
  private readonly maxBatch: number
  private readonly maxQueued: number
  /** Transactions attempted, batches and their retried parts together (for tests and the bench). */
  transactions = 0
  /** Beacons that could not be written (each failed write also logged at error level). */
  lost = 0
  /** Beacons dropped unwritten because MAX_QUEUED_BEACONS were waiting. */
  dropped = 0
  private droppedUnlogged = 0
  private droppedLogTimer: NodeJS.Timeout | null = null

  /** write records a batch in one transaction and says, per item, whether it was recorded. */
  constructor(
    private readonly write: (items: T[]) => Promise<boolean[]>,
    private readonly log: pino.Logger,
    options: BeaconWriterOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? MAX_BEACONS_PER_TRANSACTION
    this.maxQueued = options.maxQueued ?? MAX_QUEUED_BEACONS
  }

  /**
   * Resolves once the item's transaction has committed (true: recorded,
   * false: dropped, also at once when too many are waiting); rejects with a
   * BeaconsLostError when it could not be written (already logged and counted).
   */
  record(item: T): Promise<boolean> {
    if (this.queue.length >= this.maxQueued) {
      this.noteDropped()
      return Promise.resolve(false)
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject })
      if (this.writing || this.scheduled) return
      this.scheduled = true
      setImmediate(() => {
        this.scheduled = false
        this.writing = this.drain()
      })
    })
  }

  /** Waits until everything recorded so far is written. */
  async close(): Promise<void> {
    for (;;) {
      if (this.writing) await this.writing
      else if (this.scheduled) await new Promise((resolve) => setImmediate(resolve))
      else break
    }
    if (this.droppedLogTimer) clearTimeout(this.droppedLogTimer)
    this.droppedLogTimer = null
    if (this.droppedUnlogged > 0) this.logDropped()
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) await this.writeBatch(this.queue.splice(0, this.maxBatch))
    this.writing = null
  }

  private async writeBatch(batch: Array<Waiting<T>>): Promise<void> {
    this.transactions++
    try {
      const recorded = await this.write(batch.map((w) => w.item))
      batch.forEach((w, i) => w.resolve(recorded[i]))
    } catch (err) {
      if (batch.length === 1 || mayBeConnectionError(err)) {
        this.fail(batch, err)
        return
      }
      // One beacon may be what failed the transaction: each half is tried
      // apart, and the failing half split again, so the others are not lost with it.
      const half = Math.ceil(batch.length / 2)
      await this.writeBatch(batch.slice(0, half))
      await this.writeBatch(batch.slice(half))
    }
  }

  /** The beacons could not be written: one error line for all of them, then each request is told. */
  private fail(batch: Array<Waiting<T>>, err: unknown): void {
    this.lost += batch.length
    this.log.error({ err, beacons_lost: batch.length, beacons_lost_total: this.lost }, 'writing beacons failed: beacons lost')
    const lost = new BeaconsLostError(batch.length, { cause: err })
    for (const w of batch) w.reject(lost)
  }

  /** Counts a beacon dropped for a full queue; logs at once, then at most once per DROPPED_LOG_INTERVAL_MS. */
  private noteDropped(): void {
    this.dropped++
    this.droppedUnlogged++
    if (!this.droppedLogTimer) this.logDropped()
  }

  private logDropped(): void {
    this.log.error(
      { beacons_dropped: this.droppedUnlogged, beacons_dropped_total: this.dropped, max_queued: this.maxQueued },
      'beacon queue full: beacons dropped unwritten',
    )
    this.droppedUnlogged = 0
    this.droppedLogTimer = setTimeout(() => {
      this.droppedLogTimer = null
      if (this.droppedUnlogged > 0) this.logDropped()
    }, DROPPED_LOG_INTERVAL_MS)
    this.droppedLogTimer.unref?.()
  }
}
