// Successful webhook deliveries, recorded a batch at a time: one statement
// deletes the rows (and writes their delivery log lines) for all those
// finished meanwhile, one statement in flight at a time. The rows stay leased
// to this dispatcher until then; were the write lost, they would be sent
// again (at least once).
import type pino from 'pino'
import type { Database } from '../platform/db/database.ts'
import { mayBeConnectionError } from '../platform/db/availability.ts'
import { databaseRetryDelayMs } from '../platform/jobs/outage.ts'
import { completeDeliveries, type DeliveredAttempt } from './webhook-deliveries.store.ts'

/** Successes deleted by one statement, at most about; a full batch is written at once. */
const DONE_BATCH = 200
/** How long the first success waits for others before they are written (rows stay leased meanwhile). */
const DONE_WAIT_MS = 10

export class SuccessRecorder {
  private done: DeliveredAttempt[] = []
  private recording: Promise<void> | null = null
  private waitOver: (() => void) | null = null
  /** Ids in the statement running now. */
  private deleting: number[] = []

  constructor(
    private readonly options: {
      db: Database
      log: pino.Logger
      workerId: string
      leaseMs: number
      /** True once the dispatcher stops: write at once, and do not retry past it. */
      stopped: () => boolean
    },
  ) {}

  add(attempt: DeliveredAttempt): void {
    this.done.push(attempt)
    if (this.done.length >= DONE_BATCH) this.waitOver?.()
    void this.record()
  }

  /** Writes what is waiting now, and waits for it. */
  flush(): Promise<void> {
    this.waitOver?.()
    return this.record()
  }

  /** The rows this dispatcher holds as delivered but has not yet deleted. */
  unrecordedIds(): number[] {
    return [...this.done.map((d) => d.id), ...this.deleting]
  }

  /**
   * The first success waits up to DONE_WAIT_MS for company: with the embedded
   * database a statement runs in this thread, so nothing else finishes while
   * it runs and, without the wait, every success would be a statement of its own.
   */
  private record(): Promise<void> {
    this.recording ??= (async () => {
      if (this.done.length < DONE_BATCH && !this.options.stopped()) {
        await new Promise<void>((resolve) => {
          this.waitOver = resolve
          setTimeout(resolve, DONE_WAIT_MS).unref?.()
        })
        this.waitOver = null
      }
      let failures = 0
      let firstFailureAt = 0
      while (this.done.length > 0) {
        const ids = this.done
        this.done = []
        try {
          this.deleting = ids.map((d) => d.id)
          await completeDeliveries(this.options.db, ids, this.options.workerId)
          failures = 0
          firstFailureAt = 0
        } catch (err) {
          // The database away: written again with a backoff while the rows'
          // lease lasts, so what was delivered is not delivered again after a
          // short outage. Past the lease another dispatcher may send them anyway.
          firstFailureAt ||= Date.now()
          const delayMs = databaseRetryDelayMs(++failures)
          if (mayBeConnectionError(err) && !this.options.stopped() && Date.now() + delayMs - firstFailureAt < this.options.leaseMs) {
            this.done.unshift(...ids)
            await new Promise((resolve) => setTimeout(resolve, delayMs))
            continue
          }
          this.options.log.warn({ err, deliveries: ids.length }, 'recording webhook successes failed; they will be sent again')
        } finally {
          this.deleting = []
        }
      }
      this.recording = null
    })()
    return this.recording
  }
}
