// Sends webhook deliveries. Runs in the worker process beside the job worker
// but apart from it: its own loop, its own slots, its own connections, so a
// slow or dead customer endpoint never holds up fan-out. Several dispatchers
// (processes, machines) share the webhook_deliveries table: each claims due
// rows with FOR UPDATE SKIP LOCKED under a lease, so a crash loses nothing
// (at-least-once; webhook-id lets the customer drop a repeat).
//
// Throughput: a claim takes a batch of rows for each endpoint and holds them
// in memory, so a finished request is followed by the next one at once,
// without a query; successes are recorded a batch at a time (one DELETE for
// all those finished meanwhile). How many rows an endpoint may hold follows
// how fast it answers: as many as it can take in half of MAX_HELD_MS, between
// one and PREFETCH_PER_SLOT rounds of its slots. Slots stay bounded per
// endpoint and overall, and every endpoint has its own queue, so a slow
// endpoint's backlog never takes another's slots.
import { hostname } from 'node:os'
import { randomBytes } from 'node:crypto'
import type pino from 'pino'
import type { Database } from '../platform/db/database.ts'
import { mayBeConnectionError } from '../platform/db/availability.ts'
import { DatabaseOutage } from '../platform/jobs/outage.ts'
import { PollingLoop } from '../platform/jobs/polling-loop.ts'
import type { OutboundClient, OutboundResult } from '../platform/outbound/http-client.ts'
import { ATTEMPT_RETENTION_MS, MAX_ATTEMPTS_PER_WEBHOOK, pruneAttempts } from './webhook-attempts.store.ts'
import { judgeAttempt } from './retry-schedule.ts'
import { planFailure, recordFailure, recordGone } from './webhook-failures.ts'
import { webhookHeaders } from './signature.ts'
import {
  claimDueDeliveries,
  releaseDeliveries,
  releaseUnknownDeliveries,
  WEBHOOKS_CHANNEL,
  type ClaimedDelivery,
} from './webhook-deliveries.store.ts'
import { webhookEventBody } from './webhook-event.ts'
import { SuccessRecorder } from './webhook-successes.ts'
import type { Metrics } from '../platform/metrics/metrics.ts'

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
  /** Where attempts are counted by outcome (/metrics). */
  metrics?: Pick<Metrics, 'webhookDeliveries'>
}

/** Rows an endpoint may hold at most, per request slot: enough to keep a fast endpoint's slots busy between claims. */
export const PREFETCH_PER_SLOT = 16
/**
 * A claimed row waits in memory at most this long (or a quarter of the
 * lease, if shorter) before it is handed back unsent: its request must start
 * early enough to end (within its timeout) well before its lease lapses.
 */
export const MAX_HELD_MS = 5_000

/** How often a dispatcher prunes the delivery log (age, and the cap of the endpoints it logged attempts for). */
export const ATTEMPT_PRUNE_INTERVAL_MS = 10 * 60_000

interface HeldDelivery {
  delivery: ClaimedDelivery
  heldAt: number
}

export class WebhookDispatcher {
  readonly workerId: string
  private stopped = true
  /** Hand-backs started without awaiting (stale rows in pump, rows claimed after stop): stop() waits for them. */
  private readonly releasing = new Set<Promise<void>>()
  private running = 0
  /** Requests in flight per webhook id. */
  private readonly inFlight = new Map<string, number>()
  /** Claimed rows not yet sent, per webhook id, oldest first. */
  private readonly held = new Map<string, HeldDelivery[]>()
  private heldCount = 0
  /** Endpoints whose last claim found fewer due rows than it could take: no point asking again until woken. */
  private readonly drained = new Set<string>()
  /** Endpoints that answered 429, by webhook id: nothing is sent to them before this epoch ms (this process only). */
  private readonly pausedUntil = new Map<string, number>()
  private readonly active = new Set<Promise<void>>()
  /** Successful deliveries not yet deleted: recorded together (with their log rows), one statement per batch. */
  private readonly successes: SuccessRecorder
  private readonly maxHeldMs: number
  /** Each endpoint's answer time, ms (moving average): how many rows it may hold. */
  private readonly answerMs = new Map<string, number>()
  /** Claims failing in a row (the database away): logged once, retried with backoff. */
  private readonly outage: DatabaseOutage
  /** The polling loop every engine shares; a NOTIFY of new deliveries (any process) wakes it. */
  private readonly loop: PollingLoop
  /** A claim failed: the database may have applied it, leasing rows this worker does not know it holds. */
  private claimMayBeLost = false
  /** Ids of the deliveries in flight (sent, or their outcome being recorded). */
  private readonly runningIds = new Set<number>()
  /** Endpoints this dispatcher logged attempts for since its last prune: their logs may be over the cap. */
  private readonly logged = new Set<string>()
  private lastPruneAt = 0
  private pruning: Promise<void> | null = null

  constructor(private readonly options: WebhookDispatcherOptions) {
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:webhooks:${randomBytes(3).toString('hex')}`
    this.maxHeldMs = Math.min(MAX_HELD_MS, options.leaseMs / 4)
    this.successes = new SuccessRecorder({ db: options.db, log: options.log, workerId: this.workerId, leaseMs: options.leaseMs, stopped: () => this.stopped })
    this.outage = new DatabaseOutage(options.log, 'webhook dispatcher')
    this.loop = new PollingLoop({
      db: options.db,
      channel: WEBHOOKS_CHANNEL,
      pollIntervalMs: options.pollIntervalMs,
      outage: this.outage,
      poll: () => this.claimOnce(),
      afterPoll: () => this.pump(),
      // New deliveries were written: any endpoint may have work again.
      onNotify: () => this.drained.clear(),
    })
  }

  get isRunning(): boolean {
    return this.loop.isRunning
  }

  async start(): Promise<void> {
    this.stopped = false
    await this.loop.start()
  }

  /** Looks for work now (not while the database is away: the backoff decides then). */
  wake(): void {
    this.loop.wake()
  }

  /** Stops claiming, waits for requests in flight (each ends within its timeout) and hands back the rows not sent. */
  async stop(): Promise<void> {
    this.stopped = true
    // A claim already running may still take rows: once it ends, hold() hands them straight back.
    await this.loop.stop()
    await Promise.allSettled([...this.active])
    await this.successes.flush()
    const unsent = [...this.held.values()].flat().map((h) => h.delivery.id)
    this.held.clear()
    this.heldCount = 0
    await this.release(unsent, 0)
    await Promise.allSettled([...this.releasing])
    await this.pruning
  }

  /**
   * Prunes the delivery log at most every ATTEMPT_PRUNE_INTERVAL_MS, beside
   * claiming (not in its way): rows past the retention, and rows past the cap
   * of the endpoints this dispatcher logged for. Several dispatchers pruning
   * the same rows is harmless. stop() waits for it.
   */
  private maybePrune(): void {
    const now = Date.now()
    if (this.pruning || now - this.lastPruneAt < ATTEMPT_PRUNE_INTERVAL_MS) return
    this.lastPruneAt = now
    const webhookIds = [...this.logged]
    this.logged.clear()
    this.pruning = pruneAttempts(this.options.db, { webhookIds, retentionMs: ATTEMPT_RETENTION_MS, perWebhook: MAX_ATTEMPTS_PER_WEBHOOK })
      .then(
        () => undefined,
        (err) => {
          for (const id of webhookIds) this.logged.add(id)
          if (!mayBeConnectionError(err)) this.options.log.warn({ err }, 'pruning the webhook delivery log failed')
        },
      )
      .finally(() => {
        this.pruning = null
      })
  }

  /** One look for work (the polling loop's): hands back what a lost claim may hold, then claims for every endpoint with room. */
  private async claimOnce(): Promise<boolean> {
    const { concurrency } = this.options
    try {
      if (this.claimMayBeLost) {
        const known = [...this.held.values()].flat().map((h) => h.delivery.id)
        await releaseUnknownDeliveries(this.options.db, this.workerId, [...known, ...this.runningIds, ...this.successes.unrecordedIds()])
        this.claimMayBeLost = false
      }
      await this.releaseStale()
      const limit = concurrency * PREFETCH_PER_SLOT - this.running - this.heldCount
      if (limit > 0) {
        // Each endpoint may hold capacity(id) rows, sent or waiting; one that asked to wait gets none.
        const room = new Map<string, number>()
        for (const id of new Set([...this.inFlight.keys(), ...this.held.keys(), ...this.answerMs.keys()])) {
          room.set(id, this.capacity(id) - (this.inFlight.get(id) ?? 0) - (this.held.get(id)?.length ?? 0))
        }
        const now = Date.now()
        for (const [id, until] of this.pausedUntil) {
          if (until <= now) this.pausedUntil.delete(id)
          else room.set(id, 0)
        }
        const claimed = await claimDueDeliveries(this.options.db, {
          limit,
          perEndpoint: this.capacity(null),
          room,
          leaseMs: this.options.leaseMs,
          workerId: this.workerId,
        })
        this.hold(claimed, Date.now())
        if (claimed.length < limit) this.noteDrained(claimed, room)
        this.outage.succeeded()
        this.maybePrune()
      } else if (this.outage.active) {
        // No room to claim, but sending waits for the database: ask whether it is back.
        await this.options.db.query('SELECT 1')
        this.outage.succeeded()
      }
    } catch (err) {
      // The database may have applied the claim all the same: what it leased to us is handed back next time.
      this.claimMayBeLost = true
      throw err
    }
    return false
  }

  private hold(claimed: ClaimedDelivery[], now: number): void {
    if (this.stopped) {
      // Claimed while stopping: nothing will send them, so they go straight back.
      this.releaseLater(claimed.map((d) => d.id))
      return
    }
    for (const delivery of claimed) {
      let queue = this.held.get(delivery.webhook_id)
      if (!queue) this.held.set(delivery.webhook_id, (queue = []))
      queue.push({ delivery, heldAt: now })
      this.heldCount++
    }
  }

  /** After a claim that took less than it could: the endpoints that got less than their room have nothing more due. */
  private noteDrained(claimed: ClaimedDelivery[], room: Map<string, number>): void {
    const got = new Map<string, number>()
    for (const d of claimed) got.set(d.webhook_id, (got.get(d.webhook_id) ?? 0) + 1)
    for (const [id, n] of got) if (n < (room.get(id) ?? this.capacity(null))) this.drained.add(id)
    for (const [id, free] of room) if (free > 0 && !got.has(id)) this.drained.add(id)
  }

  /**
   * Rows the endpoint may hold, sent or waiting: what it can answer in half
   * of maxHeldMs at its pace, between one and PREFETCH_PER_SLOT rounds of its
   * slots; two rounds for an endpoint not heard from yet (null: any such).
   */
  private capacity(id: string | null): number {
    const { perEndpoint } = this.options
    const answerMs = id === null ? undefined : this.answerMs.get(id)
    if (answerMs === undefined) return perEndpoint * 2
    const fits = Math.floor((perEndpoint * this.maxHeldMs) / (2 * Math.max(answerMs, 1)))
    return Math.max(perEndpoint, Math.min(perEndpoint * PREFETCH_PER_SLOT, fits))
  }

  /** Starts held rows while slots are free: one per endpoint in turn, never past an endpoint's bound. */
  private pump(): void {
    // While the database is away nothing is sent: an outcome that cannot be
    // recorded would be sent again. The rows wait, or go back once stale.
    if (this.stopped || this.outage.active) return
    const { perEndpoint, concurrency } = this.options
    const now = Date.now()
    let started = true
    while (started && this.running < concurrency && this.heldCount > 0) {
      started = false
      for (const [id, queue] of this.held) {
        if (this.running >= concurrency) break
        if ((this.inFlight.get(id) ?? 0) >= perEndpoint || (this.pausedUntil.get(id) ?? 0) > now) continue
        const next = queue.shift()!
        this.heldCount--
        if (queue.length === 0) this.held.delete(id)
        started = true
        // Too old to be sent within its lease: handed back unsent.
        if (now - next.heldAt > this.maxHeldMs) this.releaseLater([next.delivery.id])
        else this.run(next.delivery)
      }
    }
  }

  /** Hands back held rows that waited too long (an endpoint slower than its backlog). */
  private async releaseStale(): Promise<void> {
    const now = Date.now()
    const stale: number[] = []
    for (const [id, queue] of this.held) {
      while (queue.length > 0 && now - queue[0].heldAt > this.maxHeldMs) {
        stale.push(queue.shift()!.delivery.id)
        this.heldCount--
      }
      if (queue.length === 0) this.held.delete(id)
    }
    await this.release(stale, 0)
  }

  /** Drops an endpoint's held rows from memory; returns their ids. */
  private forget(webhookId: string): number[] {
    const queue = this.held.get(webhookId) ?? []
    this.held.delete(webhookId)
    this.heldCount -= queue.length
    return queue.map((h) => h.delivery.id)
  }

  /** Hands rows back, due at once, without waiting here; stop() waits for it. */
  private releaseLater(ids: number[]): void {
    const task = this.release(ids, 0).finally(() => this.releasing.delete(task))
    this.releasing.add(task)
  }

  private async release(ids: number[], delayMs: number): Promise<void> {
    if (ids.length === 0) return
    try {
      await releaseDeliveries(this.options.db, ids, this.workerId, delayMs)
    } catch (err) {
      // Their lease lapses anyway: they are sent after it, by whichever worker
      // claims them. The database being away is the claim loop's to log, once.
      if (!mayBeConnectionError(err)) this.options.log.warn({ err, deliveries: ids.length }, 'handing back webhook deliveries failed')
    }
  }

  private run(delivery: ClaimedDelivery): void {
    this.running++
    const id = delivery.webhook_id
    this.inFlight.set(id, (this.inFlight.get(id) ?? 0) + 1)
    this.runningIds.add(delivery.id)
    const task = this.attempt(delivery)
      .catch((err) => {
        // Sent again after its lease. The database being away is the claim loop's to log, once.
        if (!mayBeConnectionError(err)) this.options.log.warn({ err, delivery_id: delivery.id }, 'recording a webhook attempt failed')
      })
      .finally(() => {
        this.runningIds.delete(delivery.id)
        this.running--
        const left = (this.inFlight.get(id) ?? 1) - 1
        if (left > 0) this.inFlight.set(id, left)
        else this.inFlight.delete(id)
        this.active.delete(task)
        // A slot is free: the next held row goes at once; more are claimed when the endpoint runs low.
        this.pump()
        if ((this.held.get(id)?.length ?? 0) <= this.capacity(id) / 2 && !this.drained.has(id)) this.wake()
      })
    this.active.add(task)
  }

  /** One POST of the event, and what its answer means. */
  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const body = webhookEventBody(delivery)
    const headers = webhookHeaders(delivery.secret, delivery.event_id, body, Date.now(), delivery.previous_secret)
    const started = performance.now()
    // An overall deadline: undici's bodyTimeout is only the longest gap between
    // chunks, so an endpoint trickling its answer could otherwise hold the
    // request past its lease (and the row would be sent twice).
    const { client } = this.options
    const result = await client.post(delivery.url, headers, body, AbortSignal.timeout(client.timeoutMs))
    const tookMs = performance.now() - started
    const average = this.answerMs.get(delivery.webhook_id)
    this.answerMs.set(delivery.webhook_id, average === undefined ? tookMs : average * 0.8 + tookMs * 0.2)
    await this.record(delivery, result, Math.round(tookMs))
  }

  private async record(delivery: ClaimedDelivery, result: OutboundResult, durationMs: number): Promise<void> {
    const { db, log } = this.options
    const verdict = judgeAttempt(result)
    this.logged.add(delivery.webhook_id)
    this.options.metrics?.webhookDeliveries.inc(verdict.kind === 'done' ? { outcome: 'delivered' } : { outcome: 'failed', reason: verdict.kind === 'disable' ? 'gone' : verdict.kind })
    if (verdict.kind === 'done') {
      // The slot is free at once; the row stays leased to this worker until the
      // batch is deleted (were that lost, the delivery would be sent again: at least once).
      this.successes.add({
        id: delivery.id,
        event_id: delivery.event_id,
        event_type: delivery.type,
        attempt: delivery.attempts,
        status: result.status as number,
        duration_ms: durationMs,
      })
      return
    }
    if (verdict.kind === 'disable') {
      // Its pending rows, the held ones included, are deleted with it.
      this.forget(delivery.webhook_id)
      await recordGone(db, delivery, result, durationMs)
      log.info({ webhook_id: delivery.webhook_id }, 'webhook endpoint answered 410 Gone: disabled')
      return
    }
    const failure = planFailure(delivery, result, verdict, this.options.retryBaseMs)
    const { delayMs, maxAttempts } = failure
    if (result.status === 429) {
      // The endpoint asked to slow down: its other deliveries wait too, the held ones back in the table.
      const until = Math.max(this.pausedUntil.get(delivery.webhook_id) ?? 0, Date.now() + delayMs)
      this.pausedUntil.set(delivery.webhook_id, until)
      await this.release(this.forget(delivery.webhook_id), until - Date.now())
    }
    const disabled = await recordFailure(db, delivery, result, durationMs, failure, this.workerId, this.options.disableAfterMs)
    if (disabled) {
      await this.release(this.forget(delivery.webhook_id), 0)
      log.warn({ webhook_id: delivery.webhook_id }, 'webhook endpoint failing for too long: disabled')
    } else if (delivery.attempts < maxAttempts) {
      // Retries sooner than the next poll are picked up on time.
      this.loop.lookIn(Math.min(delayMs + 20, this.options.pollIntervalMs))
    } else {
      log.warn({ delivery_id: delivery.id, webhook_id: delivery.webhook_id, ...failure.failure }, 'webhook delivery given up')
    }
  }
}
