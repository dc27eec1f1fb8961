// Group commit for the events beacon. Each beacon waits for the transaction
// that writes it, and concurrent beacons share that transaction: the first
// one is written at the next turn of the event loop, and those arriving while
// a write is in flight go together into the next. No timer: alone, a beacon
// costs one transaction, as before; under load, one transaction carries as
// many beacons as arrived during the previous one (up to MAX_BATCH), so the
// database does one commit, and each busy broadcast row one update, per batch.
//
// A beacon's promise settles only once its transaction has committed (or
// finally failed). The route answers 202 either way (api.md 4.10), so a
// beacon that could not be written is logged here, at error level with the
// number lost, and counted in `lost`: never dropped without a trace.
import type pino from 'pino'

/** Beacons per transaction at most: keeps the statements' arrays and the time the broadcast rows stay locked small. */
export const MAX_BEACONS_PER_TRANSACTION = 500

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

export class BeaconWriter<T> {
  private queue: Array<Waiting<T>> = []
  private writing: Promise<void> | null = null
  private scheduled = false
  /** Transactions attempted, batches and single retries together (for tests and the bench). */
  transactions = 0
  /** Beacons that could not be written (each also logged at error level). */
  lost = 0

  /** write records a batch in one transaction and says, per item, whether it was recorded. */
  constructor(
    private readonly write: (items: T[]) => Promise<boolean[]>,
    private readonly log: pino.Logger,
    private readonly maxBatch = MAX_BEACONS_PER_TRANSACTION,
  ) {}

  /**
   * Resolves once the item's transaction has committed (true: recorded,
   * false: dropped); rejects with a BeaconsLostError when it could not be
   * written (already logged and counted).
   */
  record(item: T): Promise<boolean> {
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
      else return
    }
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
      if (batch.length === 1) {
        this.fail(batch, err)
        return
      }
      // One beacon may be what failed the transaction: each is tried alone,
      // so the others are not lost with it.
      for (const w of batch) await this.writeBatch([w])
    }
  }

  /** The beacons could not be written: one error line for all of them, then each request is told. */
  private fail(batch: Array<Waiting<T>>, err: unknown): void {
    this.lost += batch.length
    this.log.error({ err, beacons_lost: batch.length, beacons_lost_total: this.lost }, 'writing beacons failed: beacons lost')
    const lost = new BeaconsLostError(batch.length, { cause: err })
    for (const w of batch) w.reject(lost)
  }
}
