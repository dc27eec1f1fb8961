// What an attempt's answer means for a webhook delivery, when a failed one is
// tried again, and when Herald gives up.
// The schedule is Svix's: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h after the
// first attempt's failure, about 27.5 hours in all, so an endpoint that is
// down for a day still gets every event. HERALD_WEBHOOK_RETRY_BASE_MS scales
// the whole schedule (5000 is the real one; tests use a few ms).
import { parseRetryAfterMs, type OutboundResult } from '../platform/outbound/http-client.ts'

/** Delays after the 1st, 2nd … failed attempt, for a base of 5 s. */
export const RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]
const SCHEDULE_BASE_MS = RETRY_SCHEDULE_MS[0]

/** Attempts in all for 5xx, 429, timeouts and network errors: the first and one per scheduled retry. */
export const MAX_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1
/** Attempts in all for a 3xx or a 4xx other than 410 and 429: the endpoint refused, and will probably again. */
export const MAX_REJECTED_ATTEMPTS = 3
/** A Retry-After longer than this is capped: the schedule's own longest wait. */
export const MAX_RETRY_AFTER_MS = 36_000_000

/** Wait before attempt `attempts + 1`, with ±20% jitter so retries of one outage spread out. */
export function retryDelayMs(attempts: number, baseMs = SCHEDULE_BASE_MS, random = Math.random): number {
  const step = RETRY_SCHEDULE_MS[Math.min(Math.max(attempts, 1), RETRY_SCHEDULE_MS.length) - 1]
  const scaled = (step * baseMs) / SCHEDULE_BASE_MS
  return Math.max(1, Math.round(scaled * (0.8 + 0.4 * random())))
}

/**
 * How long after its event a delivery may still be retried: the whole
 * schedule at its longest jitter (about 33 h for a base of 5 s). A delivery
 * older than this, attempted at least once, would have been given up on.
 */
export function retryWindowMs(baseMs = SCHEDULE_BASE_MS): number {
  const total = RETRY_SCHEDULE_MS.reduce((sum, step) => sum + step, 0)
  return Math.round(((total * baseMs) / SCHEDULE_BASE_MS) * 1.2)
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
