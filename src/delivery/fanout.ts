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
// nobody), then an A/B test's broadcast_variants rows (in broadcast and key
// order, experiments.store.ts addVariantCounts), then the broadcasts rows, in id order when there are several,
// never FOR UPDATE (FOR NO KEY UPDATE, which no foreign key check of a row
// inserted meanwhile conflicts with), and push_usage last. The
// broadcast row every batch of a broadcast updates is so taken at the end of
// each transaction, and held until its commit only. One exception, for
// throttled broadcasts only (throttle.ts): the transaction that fixes a slice
// takes its slot on the broadcast row before it inserts the next slice's job,
// whose run_at is the slot's end; an insert waits for nobody, and such a
// broadcast has one batch a second, so the row is held one statement longer.
// Frequency caps (caps-check.ts): a batch counts its recipients' pushes in a
// transaction of its own that locks push_counts rows only (in subscriber id
// order); the outcome transaction gives back failed pushes' counts right
// after the job's row, before anything else.
//
// Stopping (broadcast-state.ts stop) is a status change on the broadcast row.
// Every job reads the status when it starts, and a batch reads it again just
// before it sends (checkBeforeSend, the same statement that reads the VAPID
// keys): a job that finds the broadcast no longer sending ends without a
// push. Only batches already past that check when the stop commits still
// send; their outcomes are recorded as usual. Retry jobs queued before the
// stop find it canceled when they run and end the same way.
import type { Logger } from 'pino'
import type { Database, Queryable } from '../platform/db/database.ts'
import { enqueue } from '../platform/jobs/queue.ts'
import { RetryLater, retryWhileLeased, type Job, type JobHandlers } from '../platform/jobs/worker.ts'
import { monthlyPushLimitError } from '../broadcasts/push-budget.ts'
import * as broadcastState from '../broadcasts/broadcast-state.ts'
import { findSendingBroadcast, type SendingBroadcast } from '../broadcasts/broadcast-state.ts'
import { activeRecipients, audienceSlice, countAudience, nextAudience, type Recipient, type ZoneFilter } from '../broadcasts/audience.store.ts'
import { insertWaves, markWaveStarted } from '../broadcasts/waves.store.ts'
import { planWaves } from './waves.ts'
import { BROADCAST_PAYLOAD_VERSION } from '../broadcasts/payload-version.ts'
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
import { personalPayloads } from './personal-payloads.ts'
import { applyFrequencyCaps } from './caps-check.ts'
import { giveBackPushes } from '../frequency-caps/push-counts.store.ts'
import { experimentPayloads, inPart, loadFanoutExperiment, variantDeltas, type AudiencePart } from '../experiments/experiment-fanout.ts'
import { startTestIn } from '../experiments/experiments.service.ts'
import { addVariantCounts, type Experiment } from '../experiments/experiments.store.ts'

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
    push_batch: {
      broadcast_id: string
      after: string | null
      through: string | null
      /**
       * A broadcast sent in waves (waves.ts): the wave this chain sends, and
       * its zones. Jobs with it are written at payload_version 2.
       */
      wave?: { n: number } & ZoneFilter
      /** A broadcast with an A/B test: the part of the audience this chain pushes (experiments/experiment-fanout.ts). */
      part?: AudiencePart
    }
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
      /** These pushes were counted against the project's frequency caps: those that end failed are given back. */
      counted?: boolean
    }
    /**
     * Sends to subscribers a frequency cap held back (on_capped defer), due
     * when the window allows one more push (caps-check.ts); they are checked
     * again then, and deferred again if another push took the room.
     */
    push_deferred: {
      broadcast_id: string
      subscriber_ids: string[]
      /** Throttled broadcasts: this job took its slot already. */
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
function plaintextOf(deps: FanoutDeps, broadcast: SendingBroadcast, vapidPrivate: string, domain: string | null, variant: string | null = null): Buffer {
  // An A/B test's pushes carry no declarative form (as a personalized one's): its click links redirect to the
  // URLs the broadcast row stores, not a variant's, and a click Safari handles by itself names no variant.
  const declarative = broadcast.has_experiment ? null : { publicUrl: deps.publicUrl, origin: siteOrigin(domain), key: clickLinkKey(vapidPrivate) }
  return pushPlaintext({
    project_id: broadcast.project_id,
    broadcast_id: broadcast.id,
    title: broadcast.title,
    body: broadcast.body,
    icon: broadcast.icon,
    image: broadcast.image,
    url: broadcast.url,
    actions: broadcast.actions,
    variant,
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
        // The fired job's version carries over: a personalized broadcast's jobs all stay version 2.
        await enqueue(tx, 'fanout_broadcast', { broadcast_id: id }, { payloadVersion: job.payloadVersion })
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
      const inputs = await broadcastState.findWaveInputs(tx, broadcast.id)
      const plan = inputs ? await planWaves(tx, inputs, Date.now()) : null
      if (plan) {
        // Local time or quiet hours: one chain per wave, each first job due at its wave's instant.
        const part = broadcast.has_experiment ? { part: 'test' as const } : {}
        for (const wave of plan.waves) {
          const payload = { broadcast_id: broadcast.id, after: null, through: null, wave: { n: wave.wave, ...wave.filter }, ...part }
          await enqueue(tx, 'push_batch', payload, { payloadVersion: BROADCAST_PAYLOAD_VERSION, ...(wave.reason === 'now' ? {} : { runAt: new Date(wave.at) }) })
        }
        await insertWaves(tx, broadcast.id, plan.waves)
        await broadcastState.startSending(tx, broadcast, plan.audience)
        await broadcastState.startWaves(tx, broadcast.id, plan.waves.length, plan.skipped)
        if (broadcast.has_experiment) await startTestIn(tx, broadcast.id)
        return { broadcast, audience: plan.audience }
      }
      const audience = await countAudience(tx, broadcast.project_id, broadcast.target)
      // Subscribers who joined between send and now are pushed too; startSending counts them in the month.
      await enqueue(tx, 'push_batch', { broadcast_id: broadcast.id, after: null, through: null, ...(broadcast.has_experiment ? { part: 'test' as const } : {}) }, { payloadVersion: BROADCAST_PAYLOAD_VERSION })
      await broadcastState.startSending(tx, broadcast, audience)
      // An A/B test: its decision is due decide_after from now, and holds the broadcast sending until then.
      if (broadcast.has_experiment) await startTestIn(tx, broadcast.id)
      return { broadcast, audience }
    }
    return null
  })
  if (started) logSendingStarted(deps.log, started.broadcast, started.audience)
}

/**
 * How a job's pushes stand with frequency caps: 'check' (a first attempt:
 * checked and counted now, when the project has caps), 'counted' (retries of
 * pushes counted by their first attempt) or 'uncounted'.
 */
export type CapsMode = 'check' | 'counted' | 'uncounted'

/**
 * Sends to recipients and records the outcome with the job's completion.
 * The pushes are out once sent, so recording them is retried while the
 * database is away (retryWhileLeased) rather than failing the job, which
 * would send the whole slice again: only if the lease is lost meanwhile (a
 * cut longer than the lease, and another worker took the job) is the slice
 * sent twice, by that worker, and counted once.
 */
export async function sendAndRecord(
  deps: FanoutDeps,
  job: Job<'push_batch'> | Job<'push_retry'> | Job<'push_deferred'>,
  broadcast: SendingBroadcast,
  audience: Recipient[],
  attempt: number,
  retried: BatchOutcomes['retried'],
  ttlFrom: number | undefined,
  capsMode: CapsMode,
  /** The broadcast's A/B test, when it has one (loaded by the caller, else here). */
  experiment?: Experiment | null,
): Promise<void> {
  // The last look at the status before anything leaves: a stop that committed since the job started ends it here.
  const gate = await broadcastState.checkBeforeSend(deps.db, broadcast.id)
  if (gate?.status !== 'sending') {
    await deps.db.transaction((tx) => job.completeIn(tx))
    deps.log.info({ broadcast_id: broadcast.id, job_id: job.id, kind: job.kind, status: gate?.status ?? null }, 'batch not sent: the broadcast is no longer sending')
    return
  }
  const caps = capsMode === 'check'
    ? await applyFrequencyCaps(deps.db, broadcast, gate.frequencyCaps, audience)
    : { send: audience, capped: [], deferred: [], counted: capsMode === 'counted' }
  const recipients = caps.send
  const timed = withTtlFrom(broadcast, ttlFrom)
  const clickKey = gate.project.click_link_secret ?? gate.project.vapid_private
  const test = experiment === undefined ? await loadFanoutExperiment(deps.db, broadcast) : experiment
  // A personalized broadcast: one payload per recipient, rendered here; the skipped get none. An A/B test: each recipient's variant.
  const personal = test
    ? experimentPayloads(broadcast, test, recipients, (content, variant) => plaintextOf(deps, content, clickKey, gate.domain, variant))
    : broadcast.personalization ? personalPayloads(broadcast, recipients) : null
  const sendTo = personal ? personal.recipients : recipients
  const sent = sendTo.length > 0
    ? await sendToRecipients(deps, timed, gate.project, personal ? personal.plaintexts : plaintextOf(deps, broadcast, clickKey, gate.domain), sendTo)
    : { delivered: [], failed: [], retry: [], lastError: null }
  const settled = await settleRetries(deps, timed, sent.retry, attempt)
  const failed = personal && personal.skipped.length > 0 ? [...sent.failed, ...personal.skipped] : sent.failed
  const outcomes: BatchOutcomes = {
    delivered: sent.delivered,
    failed: settled.failed.length > 0 || caps.capped.length > 0 ? [...failed, ...settled.failed, ...caps.capped] : failed,
    retrying: settled.retryJob?.byPushService,
    retried,
    lastError: sent.lastError,
  }
  deps.pushMetrics?.record(sent.tally, broadcast.id, settled.retryJob?.delayMs ?? null)
  const finished = await retryWhileLeased(job.signal, () => deps.db.transaction(async (tx) => {
    await job.completeIn(tx)
    // Counted pushes that failed for good, or that a template skipped, never reached anyone: their counts are given back.
    const unsent = [...sent.failed, ...settled.failed, ...(personal?.skipped ?? [])]
    if (caps.counted && unsent.length > 0) await giveBackPushes(tx, unsent.map((f) => f.subscriberId))
    let added = 0
    for (const deferred of caps.deferred) {
      await enqueue(tx, 'push_deferred', { broadcast_id: broadcast.id, subscriber_ids: deferred.ids }, { runAt: deferred.runAt })
      added++
    }
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
          ...(caps.counted ? { counted: true } : {}),
        },
        { runAt: new Date(Date.now() + settled.retryJob.delayMs), payloadVersion: BROADCAST_PAYLOAD_VERSION },
      )
      added++
    }
    // An A/B test's counts per variant, one statement, after the subscribers' rows and before the broadcast row (the lock order).
    const variantCounts = test
      ? (q: Queryable) => addVariantCounts(q, variantDeltas(test, broadcast.id, job.kind === 'push_batch' ? audience : null, job.kind === 'push_retry' ? null : sendTo, outcomes))
      : undefined
    return recordBatch(tx, broadcast, outcomes, added - 1, variantCounts)
  }))
  deps.log.debug(
    {
      broadcast_id: broadcast.id,
      job_id: job.id,
      kind: job.kind,
      pushes: recipients.length,
      capped: caps.capped.length,
      deferred: caps.deferred.reduce((n, d) => n + d.ids.length, 0),
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
  const wave = job.payload.wave
  // An A/B test's chains say which part of the audience they push; the first ones, the test.
  const part = job.payload.part ?? (broadcast.has_experiment ? 'test' : undefined)
  const test = await loadFanoutExperiment(deps.db, broadcast)
  const size = batchSizeFor(broadcast, deps.batchSize)
  const perMinute = broadcast.throttle_per_minute
  // The slice's recipients: read with the slice on a first run, by its bounds on a run after a crash or a throttle wait.
  let recipients: Recipient[] | null = null
  if (through === null) {
    // Not while the pushes already planned fill the connections for a round trip (push-client.ts whenRoom).
    await deps.pushClient.whenRoom(ROOM_WAIT_MS)
    // First run of this job: take the next slice (rows and all, sent to below) and pass the rest on, in one transaction.
    const slice = await nextAudience(deps.db, broadcast.project_id, broadcast.target, after, size, broadcast.personalization !== null, wave)
    // A cold push service's first connections open while the slice is saved, checked and encrypted
    // (not for a throttled broadcast: its slice may wait for a later slot).
    if (perMinute === null) deps.pushClient.preconnect(slice)
    through = slice.at(-1)?.id ?? null
    const last = slice.length < size
    const { finished, slot } = await deps.db.transaction(async (tx) => {
      if (through === null) await job.completeIn(tx)
      else await job.savePayloadIn(tx, { broadcast_id: broadcast.id, after, through, ...(wave ? { wave } : {}), ...(part ? { part } : {}) })
      // A wave's first batch: it no longer waits (the broadcast view's waiting).
      if (wave && after === null) await markWaveStarted(tx, broadcast.id, wave.n)
      // Throttled: this slice's slot, whose end is when the next slice is due.
      // An A/B test's chain pushes its part of the slice only: the slot is for those pushes.
      const pushes = test && part ? inPart(test, broadcast.id, slice, part).length : slice.length
      const slot = perMinute !== null && through !== null ? await broadcastState.takeThrottleSlot(tx, broadcast.id, pushes, perMinute, pushes) : null
      if (last) {
        if (wave) await broadcastState.markWavePlanned(tx, broadcast.id)
        else await broadcastState.markPlanningDone(tx, broadcast.id)
      } else {
        await enqueue(
          tx,
          'push_batch',
          { broadcast_id: broadcast.id, after: through, through: null, ...(wave ? { wave } : {}), ...(part ? { part } : {}) },
          { payloadVersion: BROADCAST_PAYLOAD_VERSION, ...(slot ? { runAt: new Date(slot.until) } : {}) },
        )
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
  recipients ??= await audienceSlice(deps.db, broadcast.project_id, broadcast.target, after, through, broadcast.personalization !== null, wave)
  // An A/B test: this chain pushes its part of the slice only (the test's variants, or the rest).
  if (test && part) recipients = inPart(test, broadcast.id, recipients, part)
  // A wave's TTL runs from its turn, as a throttled batch's does (throttle.ts withTtlFrom): it may come a day after the start.
  await sendAndRecord(deps, job, broadcast, recipients, 1, undefined, perMinute === null && !wave ? undefined : Date.now(), 'check', test)
}

/** push_retry: sends again to those whose last push asked to retry. */
async function pushRetry(deps: FanoutDeps, job: Job<'push_retry'>): Promise<void> {
  const broadcast = await findSendingBroadcast(deps.db, job.payload.broadcast_id)
  if (!broadcast || broadcast.status !== 'sending') {
    await deps.db.transaction((tx) => job.completeIn(tx))
    return
  }
  const recipients = await activeRecipients(deps.db, broadcast.project_id, job.payload.subscriber_ids, broadcast.personalization !== null)
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
  await sendAndRecord(deps, job, broadcast, recipients, job.payload.attempt, retried, job.payload.ttl_from, job.payload.counted ? 'counted' : 'uncounted')
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
