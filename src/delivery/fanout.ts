// The fan-out jobs. A broadcast is sent as a chain of batch jobs: each takes
// the next slice of the audience (keyset on subscriber id), enqueues the job
// for the slice after it at once, so other workers can take that one while
// this one sends, and records its outcomes in one transaction with its own
// completion. A crash re-runs only the slice that was in flight.
//
// Lock order, the same in every transaction that touches a broadcast row
// (here, batch-outcomes.ts, broadcasts/broadcast-state.ts, the beacon
// writer, cancel and stop): first the job's own row (completeIn / savePayloadIn come
// first, which also ends a run that lost its lease before it writes
// anything), then subscribers (and through their trigger project_counters),
// then rows inserted (events, webhook deliveries, jobs: new rows wait for
// nobody), then the broadcasts rows, in id order when there are several,
// never FOR UPDATE (FOR NO KEY UPDATE, which no foreign key check of a row
// inserted meanwhile conflicts with), and push_usage last. The
// broadcast row every batch of a broadcast updates is so taken at the end of
// each transaction, and held until its commit only. One exception, for
// throttled broadcasts only (throttle.ts): the transaction that fixes a slice
// takes its slot on the broadcast row before it inserts the next slice's job,
// whose run_at is the slot's end; an insert waits for nobody, and such a
// broadcast has one batch a second, so the row is held one statement longer.
//
// Stopping (broadcast-state.ts stop) is a status change on the broadcast row.
// Every job reads the status when it starts, and a batch reads it again just
// before it sends (checkBeforeSend, the same statement that reads the VAPID
// keys): a job that finds the broadcast no longer sending ends without a
// push. Only batches already past that check when the stop commits still
// send; their outcomes are recorded as usual. Retry jobs queued before the
// stop find it canceled when they run and end the same way.
import type { Logger } from 'pino'
import type { Database } from '../platform/db/database.ts'
import { enqueue } from '../platform/jobs/queue.ts'
import { RetryLater, retryWhileLeased, type Job, type JobHandlers } from '../platform/jobs/worker.ts'
import { monthlyPushLimitError } from '../broadcasts/push-budget.ts'
import * as broadcastState from '../broadcasts/broadcast-state.ts'
import { findSendingBroadcast, type SendingBroadcast } from '../broadcasts/broadcast-state.ts'
import { activeRecipients, audienceSlice, countAudience, nextAudience, type Recipient } from '../broadcasts/audience.store.ts'
import { effectiveLimits } from '../projects/plans.ts'
import { findProjectById } from '../projects/projects.store.ts'
import { tryReservePushes } from '../projects/push-usage.ts'
import { recordBatch, type BatchOutcomes, type PushServiceTally } from './batch-outcomes.ts'
import { pushPlaintext } from '../broadcasts/push-payload.ts'
import { clickLinkKey, siteOrigin } from '../broadcasts/click-link.ts'
import { sendToRecipients, type SenderDeps } from './send-batch.ts'
import { logSendingFinished, logSendingStarted } from './broadcast-log.ts'
import { batchSizeFor, withTtlFrom } from './throttle.ts'
import { settleRetries } from './push-retries.ts'

declare module '../platform/jobs/queue.ts' {
  /** Fan-out's job kinds (enqueued by a send, by the scheduler and by fan-out itself). */
  interface JobPayloads {
    /** Fans a broadcast out to its audience (status pending). */
    fanout_broadcast: { broadcast_id: string }
    /** Fires a scheduled broadcast at its scheduled_at. */
    fire_broadcast: { broadcast_id: string }
    /**
     * Sends to the broadcast's audience with ids in (after, through]. `through`
     * is null until the job has fixed its slice (then it never changes, so a
     * re-run after a crash sends the same slice again, and no other). A
     * throttled broadcast's batch takes its slot in the run that fixes its
     * slice (throttle.ts); a re-run only sends.
     */
    push_batch: { broadcast_id: string; after: string | null; through: string | null }
    /**
     * Sends again to the subscribers whose last push asked for a retry (429,
     * 5xx, timeout). by_push_service counts them by push service, as the
     * broadcast's retrying counts took them; absent in jobs queued before
     * migration 0007, which those counts never took.
     */
    push_retry: {
      broadcast_id: string
      subscriber_ids: string[]
      attempt: number
      by_push_service?: PushServiceTally
      /** Throttled broadcasts: when the pushes' TTL started (their batch's turn; throttle.ts withTtlFrom). */
      ttl_from?: number
      /** Throttled broadcasts: this retry took its slot already (a run that waited for it must not take another). */
      slotted?: boolean
    }
  }
}

/** Longest a batch waits for the pushes before it to leave (a push service that hangs holds them up to its timeout). */
const ROOM_WAIT_MS = 500

export interface FanoutDeps extends SenderDeps {
  db: Database
  log: Logger
  batchSize: number
  /** Herald's public URL (HERALD_PUBLIC_URL): the base of the click links pushes carry. */
  publicUrl: string
  /** First retry delay after a 5xx or timeout; doubled per attempt, with jitter. */
  retryBaseMs: number
}

/** The push's bytes; its click links are signed with the project's key (broadcasts/click-link.ts). */
function plaintextOf(deps: FanoutDeps, broadcast: SendingBroadcast, vapidPrivate: string, domain: string | null): Buffer {
  const declarative = { publicUrl: deps.publicUrl, origin: siteOrigin(domain), key: clickLinkKey(vapidPrivate) }
  return pushPlaintext({
    project_id: broadcast.project_id,
    broadcast_id: broadcast.id,
    title: broadcast.title,
    body: broadcast.body,
    icon: broadcast.icon,
    image: broadcast.image,
    url: broadcast.url,
    actions: broadcast.actions,
  }, declarative)
}

/** fire_broadcast: a scheduled broadcast's time has come. Reserves the month's budget, then starts the fan-out. */
async function fireBroadcast(deps: FanoutDeps, job: Job<'fire_broadcast'>): Promise<void> {
  await deps.db.transaction(async (tx) => {
    await job.completeIn(tx)
    const id = job.payload.broadcast_id
    const broadcast = await broadcastState.markFired(tx, id)
    if (broadcast) {
      const project = await findProjectById(tx, broadcast.project_id)
      const audience = await countAudience(tx, broadcast.project_id, broadcast.target)
      const cap = project ? effectiveLimits(project.plan, project.limits).monthly_pushes : 0
      if (await tryReservePushes(tx, broadcast.project_id, cap, audience, new Date())) {
        await broadcastState.setReserved(tx, id, audience)
        await enqueue(tx, 'fanout_broadcast', { broadcast_id: id })
      } else {
        await broadcastState.failForPushLimit(tx, id, audience, monthlyPushLimitError(broadcast.project_id, cap, audience).message)
      }
    }
  })
}

/** fanout_broadcast: fixes the audience, marks the broadcast sending and hands the first slice to a batch job. */
async function startFanout(deps: FanoutDeps, job: Job<'fanout_broadcast'>): Promise<void> {
  const started = await deps.db.transaction(async (tx) => {
    await job.completeIn(tx)
    const broadcast = await findSendingBroadcast(tx, job.payload.broadcast_id, true)
    if (broadcast && broadcast.status === 'pending') {
      const audience = await countAudience(tx, broadcast.project_id, broadcast.target)
      // Subscribers who joined between send and now are pushed too; startSending counts them in the month.
      await enqueue(tx, 'push_batch', { broadcast_id: broadcast.id, after: null, through: null })
      await broadcastState.startSending(tx, broadcast, audience)
      return { broadcast, audience }
    }
    return null
  })
  if (started) logSendingStarted(deps.log, started.broadcast, started.audience)
}

/**
 * Sends to recipients and records the outcome with the job's completion.
 * The pushes are out once sent, so recording them is retried while the
 * database is away (retryWhileLeased) rather than failing the job, which
 * would send the whole slice again: only if the lease is lost meanwhile (a
 * cut longer than the lease, and another worker took the job) is the slice
 * sent twice, by that worker, and counted once.
 */
async function sendAndRecord(
  deps: FanoutDeps,
  job: Job<'push_batch'> | Job<'push_retry'>,
  broadcast: SendingBroadcast,
  recipients: Recipient[],
  attempt: number,
  retried: BatchOutcomes['retried'],
  ttlFrom?: number,
): Promise<void> {
  // The last look at the status before anything leaves: a stop that committed since the job started ends it here.
  const gate = await broadcastState.checkBeforeSend(deps.db, broadcast.id)
  if (gate?.status !== 'sending') {
    await deps.db.transaction((tx) => job.completeIn(tx))
    deps.log.info({ broadcast_id: broadcast.id, job_id: job.id, kind: job.kind, status: gate?.status ?? null }, 'batch not sent: the broadcast is no longer sending')
    return
  }
  const timed = withTtlFrom(broadcast, ttlFrom)
  const sent = recipients.length > 0
    ? await sendToRecipients(deps, timed, gate.project, plaintextOf(deps, broadcast, gate.project.click_link_secret ?? gate.project.vapid_private, gate.domain), recipients)
    : { delivered: [], failed: [], retry: [], lastError: null }
  const settled = await settleRetries(deps, timed, sent.retry, attempt)
  const outcomes: BatchOutcomes = {
    delivered: sent.delivered,
    failed: settled.failed.length > 0 ? [...sent.failed, ...settled.failed] : sent.failed,
    retrying: settled.retryJob?.byPushService,
    retried,
    lastError: sent.lastError,
  }
  deps.pushMetrics?.record(sent.tally, broadcast.id, settled.retryJob?.delayMs ?? null)
  const finished = await retryWhileLeased(job.signal, () => deps.db.transaction(async (tx) => {
    await job.completeIn(tx)
    let added = 0
    if (settled.retryJob) {
      await enqueue(
        tx,
        'push_retry',
        {
          broadcast_id: broadcast.id,
          subscriber_ids: settled.retryJob.ids,
          attempt: attempt + 1,
          by_push_service: settled.retryJob.byPushService,
          ...(ttlFrom === undefined ? {} : { ttl_from: ttlFrom }),
        },
        { runAt: new Date(Date.now() + settled.retryJob.delayMs) },
      )
      added++
    }
    return recordBatch(tx, broadcast, outcomes, added - 1)
  }))
  deps.log.debug(
    {
      broadcast_id: broadcast.id,
      job_id: job.id,
      kind: job.kind,
      pushes: recipients.length,
      delivered: sent.delivered.length,
      failed: sent.failed.length + settled.failed.length,
      retrying: settled.retryJob?.ids.length ?? 0,
    },
    'batch sent',
  )
  if (finished) await logSendingFinished(deps.db, deps.log, broadcast)
}

/** push_batch: fixes its slice of the audience (enqueuing the next slice), then sends it. */
async function pushBatch(deps: FanoutDeps, job: Job<'push_batch'>): Promise<void> {
  const broadcast = await findSendingBroadcast(deps.db, job.payload.broadcast_id)
  if (!broadcast || broadcast.status !== 'sending') {
    await deps.db.transaction((tx) => job.completeIn(tx))
    return
  }
  let { after, through } = job.payload
  const size = batchSizeFor(broadcast, deps.batchSize)
  const perMinute = broadcast.throttle_per_minute
  // The slice's recipients: read with the slice on a first run, by its bounds on a run after a crash or a throttle wait.
  let recipients: Recipient[] | null = null
  if (through === null) {
    // Not while the pushes already planned fill the connections for a round trip (push-client.ts whenRoom).
    await deps.pushClient.whenRoom(ROOM_WAIT_MS)
    // First run of this job: take the next slice (rows and all, sent to below) and pass the rest on, in one transaction.
    const slice = await nextAudience(deps.db, broadcast.project_id, broadcast.target, after, size)
    through = slice.at(-1)?.id ?? null
    const last = slice.length < size
    const { finished, slot } = await deps.db.transaction(async (tx) => {
      if (through === null) await job.completeIn(tx)
      else await job.savePayloadIn(tx, { broadcast_id: broadcast.id, after, through })
      // Throttled: this slice's slot, whose end is when the next slice is due.
      const slot = perMinute !== null && through !== null ? await broadcastState.takeThrottleSlot(tx, broadcast.id, slice.length, perMinute, slice.length) : null
      if (last) {
        await broadcastState.markPlanningDone(tx, broadcast.id)
      } else {
        await enqueue(tx, 'push_batch', { broadcast_id: broadcast.id, after: through, through: null }, slot ? { runAt: new Date(slot.until) } : {})
        await broadcastState.addPendingBatch(tx, broadcast.id)
      }
      // Nothing left to send: this job ends here, and the broadcast with it if it was the last.
      return { finished: through === null && (await recordBatch(tx, broadcast, { delivered: [], failed: [] }, -1)), slot }
    })
    if (finished) await logSendingFinished(deps.db, deps.log, broadcast)
    if (through === null) return
    // Retries took the slots up to a later time: the slice is fixed, and sent when its slot comes (no attempt spent).
    if (slot && slot.at > slot.now) throw new RetryLater(slot.at - slot.now, 'waiting for its throttle slot')
    recipients = slice
  }
  recipients ??= await audienceSlice(deps.db, broadcast.project_id, broadcast.target, after, through)
  await sendAndRecord(deps, job, broadcast, recipients, 1, undefined, perMinute === null ? undefined : Date.now())
}

/** push_retry: sends again to those whose last push asked to retry. */
async function pushRetry(deps: FanoutDeps, job: Job<'push_retry'>): Promise<void> {
  const broadcast = await findSendingBroadcast(deps.db, job.payload.broadcast_id)
  if (!broadcast || broadcast.status !== 'sending') {
    await deps.db.transaction((tx) => job.completeIn(tx))
    return
  }
  const recipients = await activeRecipients(deps.db, broadcast.project_id, job.payload.subscriber_ids)
  // Every push service concerned still in its 429 pause: wait it out rather than spend an attempt.
  const pauses = recipients.map((r) => {
    try {
      return deps.pushClient.pausedFor(new URL(r.endpoint))
    } catch {
      return 0
    }
  })
  if (pauses.length > 0 && pauses.every((ms) => ms > 0)) throw new RetryLater(Math.min(...pauses), 'push service asked to slow down')
  // Throttled: retries count against the rate too. The slot is taken once (marked in the payload first, the job's row before the broadcast's).
  const perMinute = broadcast.throttle_per_minute
  if (perMinute !== null && !job.payload.slotted && recipients.length > 0) {
    const slot = await deps.db.transaction(async (tx) => {
      await job.savePayloadIn(tx, { ...job.payload, slotted: true })
      return broadcastState.takeThrottleSlot(tx, broadcast.id, recipients.length, perMinute, 0)
    })
    if (slot.at > slot.now) throw new RetryLater(slot.at - slot.now, 'waiting for its throttle slot')
  }
  // The pushes this job carried leave retrying; those whose subscriber left meanwhile leave the audience too.
  const retried = { byPushService: job.payload.by_push_service ?? {}, left: job.payload.subscriber_ids.length - recipients.length }
  await sendAndRecord(deps, job, broadcast, recipients, job.payload.attempt, retried, job.payload.ttl_from)
}

export function fanoutHandlers(deps: FanoutDeps): JobHandlers {
  return {
    fire_broadcast: (job) => fireBroadcast(deps, job),
    fanout_broadcast: (job) => startFanout(deps, job),
    push_batch: (job) => pushBatch(deps, job),
    push_retry: (job) => pushRetry(deps, job),
  }
}


/**
 * A fan-out job that failed every attempt (a bug, or the database refusing
 * the same write for a day) would leave its broadcast 'sending' for ever;
 * it ends 'failed' instead, with the error as its reason.
 */
export async function giveUpOnBroadcast(db: Database, payload: unknown, err: unknown): Promise<void> {
  const broadcastId = (payload as { broadcast_id?: unknown } | null)?.broadcast_id
  if (typeof broadcastId !== 'string') return
  const message = err instanceof Error ? err.message : String(err)
  await broadcastState.fail(db, broadcastId, `internal_error: ${message}`)
}
