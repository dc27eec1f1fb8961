// How a push a push service asked to retry (429, 5xx, no answer) goes on:
// another attempt after a growing delay, within the broadcast's TTL and 12
// attempts, or a failure (unreachable) once either is spent. Fan-out
// (fanout.ts) queues one push_retry job per batch for those still going.
import type { SendingBroadcast } from '../broadcasts/broadcast-state.ts'
import type { Failed, PushServiceTally } from './batch-outcomes.ts'
import type { Retry } from './send-batch.ts'

/** What settleRetries needs of fan-out's dependencies. */
interface RetryDeps {
  /** First retry delay after a 5xx or timeout; doubled per attempt, with jitter. */
  retryBaseMs: number
}

/** Retries of one push stop after this many attempts even within a long TTL. */
const MAX_PUSH_ATTEMPTS = 12

/** Delay before retry `attempt` (1-based): exponential with ±50% jitter, at least the push service's Retry-After. */
export function pushRetryDelay(baseMs: number, attempt: number, retryAfterMs: number | null): number {
  const backoff = Math.min(3_600_000, baseMs * 2 ** (attempt - 1)) * (0.5 + Math.random())
  return Math.round(Math.max(backoff, retryAfterMs ?? 0))
}

/** Turns retry answers into failures once the TTL or the attempts are spent, else into one retry job. */
export async function settleRetries(
  deps: RetryDeps,
  broadcast: SendingBroadcast,
  retries: Retry[],
  attempt: number,
): Promise<{ failed: Failed[]; retryJob: { ids: string[]; byPushService: PushServiceTally; delayMs: number } | null }> {
  if (retries.length === 0) return { failed: [], retryJob: null }
  const delayMs = pushRetryDelay(deps.retryBaseMs, attempt, Math.max(0, ...retries.map((r) => r.retryAfterMs ?? 0)))
  const deadline = (broadcast.started_at?.getTime() ?? Date.now()) + broadcast.ttl * 1000
  if (attempt >= MAX_PUSH_ATTEMPTS || Date.now() + delayMs > deadline) {
    const failed = retries.map((r) => ({
      subscriberId: r.recipient.id,
      externalId: r.recipient.external_id,
      pushService: r.recipient.push_service,
      reason: 'unreachable' as const,
      status: r.status,
    }))
    return { failed, retryJob: null }
  }
  const byPushService: PushServiceTally = {}
  for (const r of retries) byPushService[r.recipient.push_service] = (byPushService[r.recipient.push_service] ?? 0) + 1
  return { failed: [], retryJob: { ids: retries.map((r) => r.recipient.id), byPushService, delayMs } }
}
