// What a failed webhook attempt does to its delivery and endpoint, in one
// transaction with its line in the delivery log: a 410 disables the endpoint;
// otherwise the delivery is retried on the schedule (or given up after its
// last attempt), and an endpoint with no success for too long is disabled.
import type { Database } from '../platform/db/database.ts'
import type { OutboundResult } from '../platform/outbound/http-client.ts'
import { describeNetworkError } from './attempt-error.ts'
import { insertAttempt, type AttemptRecord } from './webhook-attempts.store.ts'
import { MAX_ATTEMPTS, MAX_REJECTED_ATTEMPTS, MAX_RETRY_AFTER_MS, retryDelayMs, type AttemptVerdict } from './retry-schedule.ts'
import {
  disableWebhook,
  giveUpDelivery,
  markEndpointFailing,
  rescheduleDelivery,
  type AttemptFailure,
  type ClaimedDelivery,
} from './webhook-deliveries.store.ts'

/** `5 days`, `36 hours`, `90 minutes`, `45 seconds`: a duration as the owner reads it in disabled_reason. */
export function describeDuration(ms: number): string {
  for (const [unit, size] of [['day', 86_400_000], ['hour', 3_600_000], ['minute', 60_000]] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size} ${unit}${ms === size ? '' : 's'}`
  }
  if (ms >= 3_600_000) return `${Math.round(ms / 3_600_000)} hours`
  const seconds = Math.max(1, Math.round(ms / 1000))
  return `${seconds} second${seconds === 1 ? '' : 's'}`
}

/** The delivery log's line for a failed attempt; its outcome is settled in the transaction that records it. */
function attemptRecord(delivery: ClaimedDelivery, result: OutboundResult, durationMs: number): AttemptRecord {
  return {
    webhook_id: delivery.webhook_id,
    event_id: delivery.event_id,
    event_type: delivery.type,
    attempt: delivery.attempts,
    outcome: 'failed',
    response_status: result.status,
    error: result.status === null ? describeNetworkError(result.error) : null,
    duration_ms: durationMs,
  }
}

/** The endpoint answered 410 Gone: it is disabled, its pending deliveries deleted with it. */
export async function recordGone(db: Database, delivery: ClaimedDelivery, result: OutboundResult, durationMs: number): Promise<void> {
  await db.transaction(async (tx) => {
    await disableWebhook(tx, delivery.webhook_id, 'the endpoint answered 410 Gone', true)
    await insertAttempt(tx, attemptRecord(delivery, result, durationMs))
  })
}

export interface FailurePlan {
  /** What the delivery row keeps of the failure. */
  failure: AttemptFailure
  maxAttempts: number
  /** When the next attempt comes, from now (Retry-After where the endpoint gave one, capped). */
  delayMs: number
}

export function planFailure(delivery: ClaimedDelivery, result: OutboundResult, verdict: AttemptVerdict, retryBaseMs: number): FailurePlan {
  const failure: AttemptFailure = result.status === null ? { status: null, error: result.error } : { status: result.status, error: null }
  const maxAttempts = verdict.kind === 'rejected' ? MAX_REJECTED_ATTEMPTS : MAX_ATTEMPTS
  const retryAfterMs = verdict.kind === 'retry' ? verdict.retryAfterMs : null
  const delayMs = retryAfterMs !== null ? Math.min(retryAfterMs, MAX_RETRY_AFTER_MS) : retryDelayMs(delivery.attempts, retryBaseMs)
  return { failure, maxAttempts, delayMs }
}

/**
 * Retries or gives up the delivery and logs the attempt; disables the
 * endpoint when it has failed without a success for `disableAfterMs`.
 * Returns true when it did.
 */
export async function recordFailure(
  db: Database,
  delivery: ClaimedDelivery,
  result: OutboundResult,
  durationMs: number,
  plan: FailurePlan,
  workerId: string,
  disableAfterMs: number,
): Promise<boolean> {
  const logged = attemptRecord(delivery, result, durationMs)
  return db.transaction(async (tx) => {
    const failingMs = await markEndpointFailing(tx, delivery.webhook_id)
    const disable = failingMs >= disableAfterMs
    if (delivery.attempts >= plan.maxAttempts) {
      if (await giveUpDelivery(tx, delivery.id, workerId, plan.failure)) await insertAttempt(tx, logged)
    } else if (await rescheduleDelivery(tx, delivery.id, workerId, plan.delayMs, plan.failure)) {
      // Once the endpoint is disabled, the retry waits for it to be enabled again: no next attempt time.
      await insertAttempt(tx, { ...logged, outcome: 'retrying' }, disable ? null : plan.delayMs)
    }
    if (disable) {
      // Its pending deliveries (this one too) wait, unclaimed: re-enabling resumes those still within their retry window.
      const since = new Date(Date.now() - failingMs).toISOString()
      await disableWebhook(tx, delivery.webhook_id, `every attempt failed for ${describeDuration(disableAfterMs)} (no success since ${since})`, false)
    }
    return disable
  })
}
