// push_deferred (fanout.ts declares it): pushes a frequency cap held back
// (on_capped "defer", docs/frequency-caps.md), run when the window that held
// them allows one more push. The subscribers are checked against the caps
// again, as a first attempt is: another broadcast may have taken the room
// meanwhile, and they are then deferred again, to the new due time. Their TTL
// runs from now, as the pushes leave now. A broadcast stopped meanwhile sends
// nothing more, as for retries.
import { activeRecipients } from '../broadcasts/audience.store.ts'
import * as broadcastState from '../broadcasts/broadcast-state.ts'
import { findSendingBroadcast } from '../broadcasts/broadcast-state.ts'
import { RetryLater, type Job, type JobHandlers } from '../platform/jobs/worker.ts'
import { sendAndRecord, type FanoutDeps } from './fanout.ts'

async function pushDeferred(deps: FanoutDeps, job: Job<'push_deferred'>): Promise<void> {
  const broadcast = await findSendingBroadcast(deps.db, job.payload.broadcast_id)
  if (!broadcast || broadcast.status !== 'sending') {
    await deps.db.transaction((tx) => job.completeIn(tx))
    return
  }
  const ids = job.payload.subscriber_ids
  const recipients = await activeRecipients(deps.db, broadcast.project_id, ids, broadcast.personalization !== null)
  // Throttled: deferred pushes keep to the rate too, taking their slot once (as retries, fanout.ts pushRetry).
  const perMinute = broadcast.throttle_per_minute
  if (perMinute !== null && !job.payload.slotted && recipients.length > 0) {
    const slot = await deps.db.transaction(async (tx) => {
      await job.savePayloadIn(tx, { ...job.payload, slotted: true })
      return broadcastState.takeThrottleSlot(tx, broadcast.id, recipients.length, perMinute, 0)
    })
    if (slot.at > slot.now) throw new RetryLater(slot.at - slot.now, 'waiting for its throttle slot')
  }
  // Subscribers who left while deferred leave the audience, as those of a retry do.
  const left = ids.length - recipients.length
  await sendAndRecord(deps, job, broadcast, recipients, 1, left > 0 ? { byPushService: {}, left } : undefined, Date.now(), 'check')
}

export function deferredPushHandlers(deps: FanoutDeps): JobHandlers {
  return { push_deferred: (job) => pushDeferred(deps, job) }
}
