// Sends webhook deliveries. Runs in the worker process beside the job worker
// but apart from it: its own loop, its own slots, its own connections, so a
// slow or dead customer endpoint never holds up fan-out. Several dispatchers
// (processes, machines) share the webhook_deliveries table: each claims due
// rows with FOR UPDATE SKIP LOCKED under a lease, so a crash loses nothing
// (at-least-once; webhook-id lets the customer drop a repeat).
import { hostname } from 'node:os'
import { randomBytes } from 'node:crypto'
import type pino from 'pino'
import type { Database } from '../platform/db/database.ts'
import { parseRetryAfterMs, type OutboundClient, type OutboundResult } from '../platform/outbound/http-client.ts'
import { MAX_ATTEMPTS, MAX_REJECTED_ATTEMPTS, MAX_RETRY_AFTER_MS, retryDelayMs } from './retry-schedule.ts'
import { webhookHeaders } from './signature.ts'
import {
  claimDueDeliveries,
  completeDeliveries,
  disableWebhook,
  giveUpDelivery,
  markEndpointFailing,
  rescheduleDelivery,
  WEBHOOKS_CHANNEL,
  type ClaimedDelivery,
} from './webhook-deliveries.store.ts'
import { webhookEventBody } from './webhook-event.ts'

export interface WebhookDispatcherOptions {
  db: Database
  log: pino.Logger
  client: OutboundClient
  /** Requests in flight at once, over all endpoints. */
  concurrency: number
  /** Requests in flight at once to one endpoint. */
  perEndpoint: number
  /** How long a claim lasts: longer than a request can take (its timeout), so a live claim never lapses. */
  leaseMs: number
  /** How often to look for due deliveries when nothing wakes the dispatcher (retries come due this way). */
  pollIntervalMs: number
  /** Scales the retry schedule (5000 = the real one). */
  retryBaseMs: number
  /** An endpoint failing without a success for this long is disabled. */
  disableAfterMs: number
  workerId?: string
}

/** What an attempt's result means for the delivery. */
export type AttemptVerdict =
  | { kind: 'done' }
  /** 410 Gone: the customer asks Herald to stop. */
  | { kind: 'disable' }
  /** 5xx, 408, 429, timeout, network error or refused address: retried on the full schedule. */
  | { kind: 'retry'; retryAfterMs: number | null }
  /** 3xx (never followed) or another 4xx: retried a few times, then dropped. */
  | { kind: 'rejected' }

export function judgeAttempt(result: OutboundResult): AttemptVerdict {
  if (result.status === null) return { kind: 'retry', retryAfterMs: null }
  const { status } = result
  if (status >= 200 && status < 300) return { kind: 'done' }
  if (status === 410) return { kind: 'disable' }
  if (status === 429) return { kind: 'retry', retryAfterMs: parseRetryAfterMs(result.retryAfter) }
  if (status === 408 || status >= 500) return { kind: 'retry', retryAfterMs: null }
  return { kind: 'rejected' }
}

export class WebhookDispatcher {
  readonly workerId: string
  private stopped = true
  private timer: NodeJS.Timeout | null = null
  private nextRunAt = Infinity
  private claiming = false
  private wakeAgain = false
  private running = 0
  /** Requests in flight per webhook id. */
  private readonly inFlight = new Map<string, number>()
  /** Endpoints that answered 429, by webhook id: nothing is sent to them before this epoch ms (this process only). */
  private readonly pausedUntil = new Map<string, number>()
  private readonly active = new Set<Promise<void>>()
  /** Successful deliveries not yet deleted: recorded together, one statement per batch. */
  private done: number[] = []
  private flushTimer: NodeJS.Immediate | null = null
  private stopListening: (() => Promise<void>) | null = null

  constructor(private readonly options: WebhookDispatcherOptions) {
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:webhooks:${randomBytes(3).toString('hex')}`
  }

  async start(): Promise<void> {
    this.stopped = false
    this.stopListening = await this.options.db.listen(WEBHOOKS_CHANNEL, () => this.wake())
    this.schedule(0)
  }

  wake(): void {
    if (!this.stopped) this.schedule(0)
  }

  /** Stops claiming and waits for requests in flight (each ends within its timeout). */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    await this.stopListening?.()
    await Promise.allSettled([...this.active])
    await this.flushDone()
  }

  /** Looks for work after delayMs, unless a look is already due sooner. */
  private schedule(delayMs: number): void {
    const at = Date.now() + delayMs
    if (this.timer && at >= this.nextRunAt) return
    if (this.timer) clearTimeout(this.timer)
    this.nextRunAt = at
    this.timer = setTimeout(() => {
      this.timer = null
      this.nextRunAt = Infinity
      void this.claimAndRun()
    }, delayMs)
    this.timer.unref?.()
  }

  private async claimAndRun(): Promise<void> {
    if (this.stopped) return
    if (this.claiming) {
      this.wakeAgain = true
      return
    }
    this.claiming = true
    let claimed: ClaimedDelivery[] = []
    try {
      const free = this.options.concurrency - this.running
      if (free > 0) {
        const room = new Map([...this.inFlight].map(([id, n]) => [id, this.options.perEndpoint - n]))
        const now = Date.now()
        for (const [id, until] of this.pausedUntil) {
          if (until <= now) this.pausedUntil.delete(id)
          else room.set(id, 0)
        }
        claimed = await claimDueDeliveries(this.options.db, {
          limit: free,
          perEndpoint: this.options.perEndpoint,
          room,
          leaseMs: this.options.leaseMs,
          workerId: this.workerId,
        })
      }
    } catch (err) {
      this.options.log.warn({ err }, 'claiming webhook deliveries failed')
    } finally {
      this.claiming = false
    }
    for (const delivery of claimed) this.run(delivery)
    if (this.stopped) return
    const more = claimed.length > 0 && this.running < this.options.concurrency
    this.schedule(more || this.wakeAgain ? 0 : this.options.pollIntervalMs)
    this.wakeAgain = false
  }

  private run(delivery: ClaimedDelivery): void {
    this.running++
    this.inFlight.set(delivery.webhook_id, (this.inFlight.get(delivery.webhook_id) ?? 0) + 1)
    const task = this.attempt(delivery)
      .catch((err) => this.options.log.warn({ err, delivery_id: delivery.id }, 'recording a webhook attempt failed'))
      .finally(() => {
        this.running--
        const left = (this.inFlight.get(delivery.webhook_id) ?? 1) - 1
        if (left > 0) this.inFlight.set(delivery.webhook_id, left)
        else this.inFlight.delete(delivery.webhook_id)
        this.active.delete(task)
        // A slot is free: there may be due work that did not fit before.
        this.wake()
      })
    this.active.add(task)
  }

  /** One POST of the event, and what its answer means. */
  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const body = webhookEventBody(delivery)
    const headers = webhookHeaders(delivery.secret, delivery.event_id, body)
    const result = await this.options.client.post(delivery.url, headers, body)
    await this.record(delivery, result)
  }

  private async flushDone(): Promise<void> {
    if (this.flushTimer) clearImmediate(this.flushTimer)
    this.flushTimer = null
    const ids = this.done
    this.done = []
    if (ids.length === 0) return
    try {
      await completeDeliveries(this.options.db, ids, this.workerId)
    } catch (err) {
      this.options.log.warn({ err, deliveries: ids.length }, 'recording webhook successes failed; they will be sent again')
    }
  }

  private async record(delivery: ClaimedDelivery, result: OutboundResult): Promise<void> {
    const { db, log } = this.options
    const verdict = judgeAttempt(result)
    if (verdict.kind === 'done') {
      // The slot is free at once; the row stays leased to this worker until the
      // batch is deleted (were that lost, the delivery would be sent again: at least once).
      this.done.push(delivery.id)
      this.flushTimer ??= setImmediate(() => void this.flushDone())
      return
    }
    if (verdict.kind === 'disable') {
      await db.transaction((tx) => disableWebhook(tx, delivery.webhook_id))
      log.info({ webhook_id: delivery.webhook_id }, 'webhook endpoint answered 410 Gone: disabled')
      return
    }
    const failure = result.status === null ? { status: null, error: result.error } : { status: result.status, error: null }
    const maxAttempts = verdict.kind === 'rejected' ? MAX_REJECTED_ATTEMPTS : MAX_ATTEMPTS
    const retryAfterMs = verdict.kind === 'retry' ? verdict.retryAfterMs : null
    const delayMs =
      retryAfterMs !== null ? Math.min(retryAfterMs, MAX_RETRY_AFTER_MS) : retryDelayMs(delivery.attempts, this.options.retryBaseMs)
    if (result.status === 429) {
      // The endpoint asked to slow down: its other deliveries wait too.
      this.pausedUntil.set(delivery.webhook_id, Math.max(this.pausedUntil.get(delivery.webhook_id) ?? 0, Date.now() + delayMs))
    }
    const disabled = await db.transaction(async (tx) => {
      const failingMs = await markEndpointFailing(tx, delivery.webhook_id)
      if (failingMs >= this.options.disableAfterMs) {
        await disableWebhook(tx, delivery.webhook_id)
        return true
      }
      if (delivery.attempts >= maxAttempts) await giveUpDelivery(tx, delivery.id, this.workerId, failure)
      else await rescheduleDelivery(tx, delivery.id, this.workerId, delayMs, failure)
      return false
    })
    if (disabled) {
      log.warn({ webhook_id: delivery.webhook_id }, 'webhook endpoint failing for too long: disabled')
    } else if (delivery.attempts < maxAttempts) {
      // Retries sooner than the next poll are picked up on time.
      this.schedule(Math.min(delayMs + 20, this.options.pollIntervalMs))
    } else {
      log.warn({ delivery_id: delivery.id, webhook_id: delivery.webhook_id, ...failure }, 'webhook delivery given up')
    }
  }
}
