// The one polling loop of Herald's background work. Each engine (the job
// worker over `jobs`, the webhook dispatcher over `webhook_deliveries`) gives
// it one look for work, `poll`; the loop decides when to look: at once when
// woken (a NOTIFY on the engine's channel, from any process, or the engine
// itself when it has room again), after pollIntervalMs otherwise (work that
// comes due, such as retries and scheduled broadcasts, is found this way),
// and while the database is away, after a backoff that grows (logged once
// each way by the engine's DatabaseOutage, not once per poll).
import type { Database } from '../db/database.ts'
import type { DatabaseOutage } from './outage.ts'

export interface PollingLoopOptions {
  db: Database
  /** NOTIFY channel whose notifications wake the loop. */
  channel: string
  /** How often to look when nothing wakes the loop. */
  pollIntervalMs: number
  outage: DatabaseOutage
  /**
   * One look for work: claims what there is room for and starts it. Resolves
   * to true when there may be more right away (look again at once); throws
   * when the database failed it (the loop then backs off). It notes the
   * database answering with outage.succeeded() itself, as only it knows
   * whether it asked.
   */
  poll: () => Promise<boolean>
  /** Runs after every look, failed or not, once the outage is noted (the dispatcher starts what it holds). */
  afterPoll?: () => void
  /** Runs on each notification, before the loop is woken. */
  onNotify?: () => void
}

export class PollingLoop {
  private stopped = true
  private timer: NodeJS.Timeout | null = null
  private nextRunAt = Infinity
  private wakeAgain = false
  /** The look under way, if any: stop() waits for it. */
  private polling: Promise<void> | null = null
  private stopListening: (() => Promise<void>) | null = null

  constructor(private readonly options: PollingLoopOptions) {}

  get isRunning(): boolean {
    return !this.stopped
  }

  async start(): Promise<void> {
    this.stopped = false
    this.stopListening = await this.options.db.listen(this.options.channel, () => {
      this.options.onNotify?.()
      this.wake()
    })
    this.lookIn(0)
  }

  /** Looks for work now rather than at the next poll (not while the database is away: the backoff decides then). */
  wake(): void {
    if (!this.stopped && !this.options.outage.active) this.lookIn(0)
  }

  /** Looks for work after delayMs, unless a look is already due sooner. */
  lookIn(delayMs: number): void {
    if (this.stopped) return
    const at = Date.now() + delayMs
    if (this.timer && at >= this.nextRunAt) return
    this.setTimer(delayMs)
  }

  /** Stops looking and waits for a look already under way. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    await this.stopListening?.()
    await this.polling
  }

  private setTimer(delayMs: number): void {
    if (this.timer) clearTimeout(this.timer)
    this.nextRunAt = Date.now() + delayMs
    this.timer = setTimeout(() => {
      this.timer = null
      this.nextRunAt = Infinity
      void this.look()
    }, delayMs)
    // Never what keeps a process alive: serve holds the event loop until a signal.
    this.timer.unref?.()
  }

  private async look(): Promise<void> {
    if (this.stopped) return
    if (this.polling) {
      this.wakeAgain = true
      return
    }
    let more = false
    let retryInMs: number | null = null
    this.polling = (async () => {
      try {
        more = await this.options.poll()
      } catch (err) {
        // Logged once per outage, not once per poll; the next try waits longer each time.
        retryInMs = this.options.outage.failed(err)
      }
    })()
    await this.polling
    this.polling = null
    this.options.afterPoll?.()
    if (this.stopped) return
    // A backoff replaces any sooner look already due; otherwise the sooner one stands.
    if (retryInMs !== null) this.setTimer(retryInMs)
    else this.lookIn(more || this.wakeAgain ? 0 : this.options.pollIntervalMs)
    this.wakeAgain = false
  }
}
