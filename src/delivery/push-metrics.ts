// What a batch's pushes came to, for /metrics and the log, at a cost per push
// of a few array writes and one histogram observation (bench/push-metrics.ts
// measures it): counts are kept per batch in a small typed array and added to
// the counters once per label set when the batch is recorded. A push service
// that answers 429, 5xx or not at all is logged as a warning at most once per
// origin per minute, naming it and the retry delay.
import type { Logger } from 'pino'
import type { Metrics, PushServiceLabel } from '../platform/metrics/metrics.ts'
import { PUSH_SERVICES } from '../platform/metrics/metrics.ts'
import type { PushOutcome } from './push-client.ts'

/** One warning per push service origin at most this often. */
export const SLOW_ORIGIN_WARNING_INTERVAL_MS = 60_000

/** What a push attempt came to, as the columns of a batch's counts. */
const KINDS = ['delivered', 'gone', 'rejected', 'rate_limited', 'server_error', 'timeout'] as const
const DELIVERED = 0
const GONE = 1
const REJECTED = 2
const RATE_LIMITED = 3
const SERVER_ERROR = 4
const TIMEOUT = 5

/** The histogram's label sets, made once rather than per push. */
const SERVICE_LABELS = PUSH_SERVICES.map((push_service) => ({ push_service }))

function serviceIndex(service: string | undefined): number {
  switch (service) {
    case 'fcm': return 0
    case 'mozilla': return 1
    case 'apple': return 2
    case 'wns': return 3
    default: return 4
  }
}

function kindIndex(outcome: PushOutcome): number {
  switch (outcome.kind) {
    case 'delivered': return DELIVERED
    case 'gone': return GONE
    case 'rejected': return REJECTED
    case 'retry': return outcome.status === 429 ? RATE_LIMITED : outcome.status === null ? TIMEOUT : SERVER_ERROR
  }
}

/** A push service origin that asked for retries in this batch: the first answer, and how many. */
interface Trouble {
  pushes: number
  status: number | null
  error: string | null
}

/** One batch's counts, filled per push by sendToRecipients and recorded once by fan-out. */
export class PushTally {
  readonly counts = new Uint32Array(PUSH_SERVICES.length * KINDS.length)
  /** Only for pushes asked to retry: the happy path allocates nothing. */
  trouble: Map<string, Trouble> | null = null

  constructor(private readonly seconds: Metrics['pushSeconds']) {}

  /** One push attempt's answer; startedAt from performance.now() when it was handed to the push client. */
  add(service: string | undefined, outcome: PushOutcome, startedAt: number, endpoint: URL): void {
    const s = serviceIndex(service)
    this.counts[s * KINDS.length + kindIndex(outcome)]++
    this.seconds.observe(SERVICE_LABELS[s], (performance.now() - startedAt) / 1000)
    if (outcome.kind === 'retry') {
      this.trouble ??= new Map()
      const seen = this.trouble.get(endpoint.origin)
      if (seen) seen.pushes++
      else this.trouble.set(endpoint.origin, { pushes: 1, status: outcome.status, error: outcome.error ?? null })
    }
  }
}

export class PushMetrics {
  private readonly warnedAt = new Map<string, { at: number; suppressed: number }>()

  constructor(
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly warningIntervalMs = SLOW_ORIGIN_WARNING_INTERVAL_MS,
  ) {}

  tally(): PushTally {
    return new PushTally(this.metrics.pushSeconds)
  }

  /**
   * Adds a batch's counts to the counters, once per label set. retryDelayMs:
   * when the pushes asked to retry go to a retry job, its delay; null when
   * they were given up on (attempts or TTL spent), so they count as failed
   * unreachable rather than retried.
   */
  record(tally: PushTally | undefined, broadcastId: string, retryDelayMs: number | null): void {
    if (!tally) return
    const { counts } = tally
    for (let s = 0; s < PUSH_SERVICES.length; s++) {
      for (let k = 0; k < KINDS.length; k++) {
        const n = counts[s * KINDS.length + k]
        if (n === 0) continue
        const push_service: PushServiceLabel = PUSH_SERVICES[s]
        if (k === DELIVERED) this.metrics.pushes.inc({ push_service, outcome: 'delivered' }, n)
        else if (k === GONE || k === REJECTED) this.metrics.pushes.inc({ push_service, outcome: 'failed', reason: KINDS[k] }, n)
        else if (retryDelayMs === null) this.metrics.pushes.inc({ push_service, outcome: 'failed', reason: 'unreachable' }, n)
        else this.metrics.pushes.inc({ push_service, outcome: 'retried', reason: KINDS[k] }, n)
      }
    }
    if (tally.trouble) this.warn(tally.trouble, broadcastId, retryDelayMs)
  }

  /** At most one line per origin per interval; the lines left out meanwhile are counted in the next. */
  private warn(trouble: Map<string, Trouble>, broadcastId: string, retryDelayMs: number | null): void {
    const now = Date.now()
    for (const [origin, t] of trouble) {
      const last = this.warnedAt.get(origin)
      if (last && now - last.at < this.warningIntervalMs) {
        last.suppressed++
        continue
      }
      this.warnedAt.set(origin, { at: now, suppressed: 0 })
      const answer = t.status === 429 ? 'answered 429 Too Many Requests' : t.status !== null ? `answered ${t.status}` : `did not answer (${t.error ?? 'timeout'})`
      const next = retryDelayMs === null ? 'given up (attempts or TTL spent)' : `retrying in ${(retryDelayMs / 1000).toFixed(1)} s`
      this.log.warn(
        {
          push_origin: origin,
          broadcast_id: broadcastId,
          status: t.status,
          error: t.error,
          pushes: t.pushes,
          retry_in_ms: retryDelayMs,
          warnings_suppressed: last?.suppressed ?? 0,
        },
        `push service ${origin} ${answer} to ${t.pushes} push${t.pushes === 1 ? '' : 'es'}: ${next}`,
      )
    }
  }
}
