// Throttled fan-out (issue 12): a broadcast with throttle_per_minute r sends
// at most r pushes a minute, whatever the number of workers, retries
// included. Every job that sends takes a time slot of its pushes × 60 s / r
// from the broadcast row first (broadcast-state.ts takeThrottleSlot): the
// slots are handed out back to back, so they never overlap, and a job whose
// slot lies ahead waits for it (RetryLater, which spends no attempt). Batches
// are a second's worth of pushes (r / 60, at most HERALD_FANOUT_BATCH_SIZE),
// so the pushes of a minute are spread over it rather than sent at its start,
// and each batch queues the next for the end of its own slot, when it is due.
//
// Pushes leave at the start of their slot, so over any minute the pushes that
// start are at most r, give or take one batch's worth (a second's, or the few
// pushes of a retry) sent at the start of its slot rather than spread across it.
import type { SendingBroadcast } from '../broadcasts/broadcast-state.ts'

/** Pushes per batch job: a second's worth at the broadcast's rate, within the configured batch size. */
export function batchSizeFor(broadcast: Pick<SendingBroadcast, 'throttle_per_minute'>, batchSize: number): number {
  const perMinute = broadcast.throttle_per_minute
  return perMinute === null ? batchSize : Math.max(1, Math.min(batchSize, Math.ceil(perMinute / 60)))
}

/**
 * The broadcast as a batch sends it, with its TTL counted from ttlFrom
 * instead of the fan-out's start: a throttled fan-out may last longer than
 * the TTL itself, and its customer chose to spread it, so each push's TTL
 * (the header, and the deadline of its retries) runs from its batch's turn.
 * Unthrottled broadcasts keep counting from started_at.
 */
export function withTtlFrom(broadcast: SendingBroadcast, ttlFrom: number | undefined): SendingBroadcast {
  return ttlFrom === undefined ? broadcast : { ...broadcast, started_at: new Date(ttlFrom) }
}
