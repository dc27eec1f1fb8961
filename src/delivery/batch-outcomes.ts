// What one batch of pushes came to, and how it is recorded: in one
// transaction with the batch job's completion (fanout.ts), the failed events,
// the delivered ones where a webhook endpoint takes them (with their webhooks), the subscriptions found gone, and the
// broadcast's counts (by reason and push service, retrying, the last error:
// tallied here, added in the one UPDATE of the broadcast row), in the lock
// order fanout.ts gives. The subscribers' health (last_delivered_at,
// consecutive_failures, expiry of those gone or failing too often: issue 23)
// is one statement over the batch's subscribers (health.store.ts
// recordPushHealth), never a statement per push.
import type { Queryable } from '../platform/db/database.ts'
import { newId } from '../platform/ids.ts'
import { addOutcomes, emptyDelta, type LastPushError, type PushServiceCounts, type SendingBroadcast } from '../broadcasts/broadcast-state.ts'
import type { FailReason } from '../broadcasts/broadcasts.schemas.ts'
import { recordEvents, type NewEvent } from '../events/events.store.ts'
import { activeWebhookEventTypes } from '../webhooks/webhooks.store.ts'
import type { PushService } from '../subscribers/subscribers.schemas.ts'
import { recordPushHealth } from '../subscribers/health.store.ts'
import { keyShareLockSubscribers } from '../subscribers/subscribers.store.ts'
import { addStats } from '../stats/stats.store.ts'
import { batchStats } from '../stats/stats-deltas.ts'

/** Failures that leave a subscriber's health as it was (recordPushHealth). */
const NOT_THE_SUBSCRIPTIONS_FAULT: ReadonlySet<string> = new Set(['capped', 'skipped', 'vapid_key_mismatch'])

export type { FailReason }

/** Pushes by push service (the retry jobs carry theirs in this form). */
export type PushServiceTally = Partial<Record<PushService, number>>

export interface Delivered {
  subscriberId: string
  externalId: string | null
  /** Counted in the broadcast's breakdown by push service; left out, the push counts only in the totals. */
  pushService?: PushService
}

export interface Failed extends Delivered {
  reason: FailReason
  /** The push service's HTTP status, or null when it never answered. */
  status: number | null
  /** Why a personalized broadcast skipped the subscriber (reason skipped), e.g. "missing_variable: tags.first_name". */
  cause?: string
}

export interface BatchOutcomes {
  delivered: Delivered[]
  failed: Failed[]
  /** The pushes this job queued for a retry, by push service. */
  retrying?: PushServiceTally
  /** The retry job that ran: the pushes it carried, by push service (no longer retrying), and how many of their subscribers had left meanwhile. */
  retried?: { byPushService: PushServiceTally; left: number }
  lastError?: LastPushError | null
}

/** The batch's counts as broadcast-state adds them: a pass over the outcomes, no query. */
function tally(outcomes: BatchOutcomes) {
  const delta = emptyDelta()
  const of = (service: PushService): PushServiceCounts => (delta.byPushService[service] ??= { delivered: 0, failed: 0, retrying: 0 })
  delta.delivered = outcomes.delivered.length
  delta.failed = outcomes.failed.length
  for (const d of outcomes.delivered) if (d.pushService) of(d.pushService).delivered++
  for (const f of outcomes.failed) {
    delta.failures[f.reason]++
    if (f.pushService) of(f.pushService).failed++
  }
  for (const [service, n] of Object.entries(outcomes.retrying ?? {}) as [PushService, number][]) {
    of(service).retrying += n
    delta.retrying += n
  }
  if (outcomes.retried) {
    for (const [service, n] of Object.entries(outcomes.retried.byPushService) as [PushService, number][]) {
      of(service).retrying -= n
      delta.retrying -= n
    }
    delta.left = outcomes.retried.left
  }
  delta.lastError = outcomes.lastError ?? null
  return delta
}

/**
 * Records one batch's outcomes. `jobsDelta` adjusts the broadcast's batches
 * outstanding (-1 for the finished job, +1 per job it enqueued). Returns true
 * when this was the broadcast's last outstanding job and it is now sent.
 *
 * The broadcast row, which every batch of the broadcast updates, is touched
 * last: it stays locked from that one UPDATE to the commit, not for the whole
 * transaction, so batches finishing together queue on it for a round trip each.
 */
export async function recordBatch(
  q: Queryable,
  broadcast: SendingBroadcast,
  outcomes: BatchOutcomes,
  jobsDelta: number,
  /** Runs after the subscribers' rows and before the broadcast row (the lock order): an A/B test's per-variant counts. */
  beforeBroadcastRow?: (q: Queryable) => Promise<void>,
): Promise<boolean> {
  const event = (who: Delivered, type: 'delivered' | 'failed', meta: NewEvent['meta']): NewEvent => ({
    id: newId('evt'),
    project_id: broadcast.project_id,
    broadcast_id: broadcast.id,
    subscriber_id: who.subscriberId,
    external_id: who.externalId,
    type,
    meta,
  })
  // A delivered push gets an events row only when a webhook endpoint of the
  // project will carry it: nothing else reads one (its count is on the
  // broadcast and in the hourly stats, its date in the subscriber's health),
  // and one row per push was the largest write of a fan-out (issue 26). A
  // failed push always gets its row: the only record of why, per subscriber.
  // One look at the project's webhook types per batch with outcomes: it also spares recordEvents its own.
  const outcomeCount = outcomes.delivered.length + outcomes.failed.length
  const webhookTypes = outcomeCount > 0 ? await activeWebhookEventTypes(q, broadcast.project_id) : new Set<string>()
  const delivered = webhookTypes.has('delivered') ? outcomes.delivered : []
  // In subscriber id order, the order erasure deletes a user's subscribers in,
  // so the key-share locks the events' foreign keys take queue the same way.
  const events = [
    ...delivered.map((d) => event(d, 'delivered', null)),
    ...outcomes.failed.map((f) => event(f, 'failed', f.cause === undefined ? { reason: f.reason, status: f.status } : { reason: f.reason, status: f.status, cause: f.cause })),
  ].sort((a, b) => (a.subscriber_id! < b.subscriber_id! ? -1 : a.subscriber_id! > b.subscriber_id! ? 1 : 0))
  // The events lock their subscribers (some of the batch's), then the health write locks the batch's (in
  // id order each time): two passes, which an erasure of a user with one subscriber in each could deadlock
  // with. So when there are events but not one per outcome, every subscriber of the batch is locked first,
  // in one pass; the statements after it then wait for nobody on subscribers.
  if (events.length > 0 && events.length < outcomeCount) {
    await keyShareLockSubscribers(q, [...outcomes.delivered, ...outcomes.failed].map((o) => o.subscriberId))
  }
  // The events of the broadcast being sent, under its own project: no ownership check needed.
  await recordEvents(q, events, { ownBroadcasts: true, webhookTypes })
  // Health tells whether the subscription works: a push never sent (capped, or a
  // template skipped the subscriber) says nothing of it, nor does a push service
  // refusing the key Herald signed with (vapid_key_mismatch: Herald's fault, and
  // the subscription still works with its own key).
  await recordPushHealth(q, broadcast.project_id, [
    ...outcomes.delivered.map((d) => ({ subscriberId: d.subscriberId, delivered: true, gone: false })),
    ...outcomes.failed
      .filter((f) => !NOT_THE_SUBSCRIPTIONS_FAULT.has(f.reason))
      .map((f) => ({ subscriberId: f.subscriberId, delivered: false, gone: f.reason === 'gone' })),
  ])
  // The project's numbers over time (issue 25): one upsert, after the subscribers, before the broadcast row.
  await addStats(q, [batchStats(broadcast.project_id, outcomes)])
  await beforeBroadcastRow?.(q)
  return addOutcomes(q, broadcast.id, tally(outcomes), jobsDelta)
}
