// The fan-out jobs. A broadcast is sent as a chain of batch jobs: each takes
// the next slice of the audience (keyset on subscriber id), enqueues the job
// for the slice after it at once, so other workers can take that one while
// this one sends, and records its outcomes in one transaction with its own
// completion. A crash re-runs only the slice that was in flight.
import type { Logger } from 'pino'
import type { Database } from '../platform/db/database.ts'
import { enqueue } from '../platform/jobs/queue.ts'
import { RetryLater, type Job, type JobHandlers } from '../platform/jobs/worker.ts'
import { monthlyPushLimitError, reservePushes } from '../broadcasts/push-budget.ts'
import { effectiveLimits } from '../projects/plans.ts'
import { findProjectById } from '../projects/projects.store.ts'
import { activeRecipients, audienceSlice, countAudience, nextAudienceIds, type Recipient } from './audience.store.ts'
import { findProjectKeys, findSendingBroadcast, recordBatch, type Failed, type SendingBroadcast } from './fanout.store.ts'
import { pushPlaintext } from './payload.ts'
import { sendToRecipients, type Retry, type SenderDeps } from './send-batch.ts'

export interface FanoutDeps extends SenderDeps {
  db: Database
  log: Logger
  batchSize: number
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

function plaintextOf(broadcast: SendingBroadcast): Buffer {
  return pushPlaintext({
    project_id: broadcast.project_id,
    broadcast_id: broadcast.id,
    title: broadcast.title,
    body: broadcast.body,
    icon: broadcast.icon,
    image: broadcast.image,
    url: broadcast.url,
  })
}

/** fire_broadcast: a scheduled broadcast's time has come. Reserves the month's budget, then starts the fan-out. */
async function fireBroadcast(deps: FanoutDeps, job: Job<'fire_broadcast'>): Promise<void> {
  await deps.db.transaction(async (tx) => {
    // Only a broadcast still 'scheduled' fires; a cancel that got there first wins, and vice versa.
    const fired = await tx.query<{ project_id: string; target: SendingBroadcast['target'] }>(
      `UPDATE broadcasts SET status = 'pending' WHERE id = $1 AND status = 'scheduled' RETURNING project_id, target`,
      [job.payload.broadcast_id],
    )
    const broadcast = fired.rows[0]
    if (broadcast) {
      const project = await findProjectById(tx, broadcast.project_id)
      const audience = await countAudience(tx, broadcast.project_id, broadcast.target)
      const cap = project ? effectiveLimits(project.plan, project.limits).monthly_pushes : 0
      try {
        await reservePushes(tx, broadcast.project_id, cap, audience, new Date())
        await tx.query('UPDATE broadcasts SET audience = $2, reserved = $2 WHERE id = $1', [job.payload.broadcast_id, audience])
        await enqueue(tx, 'fanout_broadcast', { broadcast_id: job.payload.broadcast_id })
      } catch (err) {
        if (!(err instanceof Error) || !('code' in err) || err.code !== 'monthly_push_limit_reached') throw err
        const reason = monthlyPushLimitError(cap, audience).message
        await tx.query(
          `UPDATE broadcasts SET status = 'failed', failure_reason = $2, audience = $3, finished_at = now() WHERE id = $1`,
          [job.payload.broadcast_id, `monthly_push_limit_reached: ${reason}`, audience],
        )
      }
    }
    await job.completeIn(tx)
  })
}

/** fanout_broadcast: fixes the audience, marks the broadcast sending and hands the first slice to a batch job. */
async function startFanout(deps: FanoutDeps, job: Job<'fanout_broadcast'>): Promise<void> {
  await deps.db.transaction(async (tx) => {
    const broadcast = await findSendingBroadcast(tx, job.payload.broadcast_id, true)
    if (broadcast && broadcast.status === 'pending') {
      const audience = await countAudience(tx, broadcast.project_id, broadcast.target)
      // Subscribers who joined between send and now are pushed too; count them in the month.
      if (audience > broadcast.reserved) {
        await tx.query(
          `INSERT INTO push_usage (project_id, month, pushes) VALUES ($1, date_trunc('month', now() AT TIME ZONE 'UTC')::date, $2)
           ON CONFLICT (project_id, month) DO UPDATE SET pushes = push_usage.pushes + EXCLUDED.pushes`,
          [broadcast.project_id, audience - broadcast.reserved],
        )
      }
      await tx.query(
        `UPDATE broadcasts SET status = 'sending', started_at = now(), audience = $2, reserved = GREATEST(reserved, $2),
                pending_batches = 1, planning_done = false
          WHERE id = $1`,
        [broadcast.id, audience],
      )
      await enqueue(tx, 'push_batch', { broadcast_id: broadcast.id, after: null, through: null })
    }
    await job.completeIn(tx)
  })
}

/** Turns retry answers into failures once the TTL or the attempts are spent, else into one retry job. */
async function settleRetries(
  deps: FanoutDeps,
  broadcast: SendingBroadcast,
  retries: Retry[],
  attempt: number,
): Promise<{ failed: Failed[]; retryJob: { ids: string[]; delayMs: number } | null }> {
  if (retries.length === 0) return { failed: [], retryJob: null }
  const delayMs = pushRetryDelay(deps.retryBaseMs, attempt, Math.max(0, ...retries.map((r) => r.retryAfterMs ?? 0)))
  const deadline = (broadcast.started_at?.getTime() ?? Date.now()) + broadcast.ttl * 1000
  if (attempt >= MAX_PUSH_ATTEMPTS || Date.now() + delayMs > deadline) {
    const failed = retries.map((r) => ({
      subscriberId: r.recipient.id,
      externalId: r.recipient.external_id,
      reason: 'unreachable' as const,
      status: r.status,
    }))
    return { failed, retryJob: null }
  }
  return { failed: [], retryJob: { ids: retries.map((r) => r.recipient.id), delayMs } }
}

/** Sends to recipients and records the outcome with the job's completion. */
async function sendAndRecord(
  deps: FanoutDeps,
  job: Job<'push_batch'> | Job<'push_retry'>,
  broadcast: SendingBroadcast,
  recipients: Recipient[],
  attempt: number,
  jobsAdded: number,
): Promise<void> {
  const project = await findProjectKeys(deps.db, broadcast.project_id)
  const sent = project && recipients.length > 0
    ? await sendToRecipients(deps, broadcast, project, plaintextOf(broadcast), recipients)
    : { delivered: [], failed: [], retry: [] }
  const settled = await settleRetries(deps, broadcast, sent.retry, attempt)
  await deps.db.transaction(async (tx) => {
    let added = jobsAdded
    if (settled.retryJob) {
      await enqueue(
        tx,
        'push_retry',
        { broadcast_id: broadcast.id, subscriber_ids: settled.retryJob.ids, attempt: attempt + 1 },
        { runAt: new Date(Date.now() + settled.retryJob.delayMs) },
      )
      added++
    }
    await recordBatch(tx, broadcast, { delivered: sent.delivered, failed: [...sent.failed, ...settled.failed] }, added - 1)
    await job.completeIn(tx)
  })
  deps.log.info(
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
}

/** push_batch: fixes its slice of the audience (enqueuing the next slice), then sends it. */
async function pushBatch(deps: FanoutDeps, job: Job<'push_batch'>): Promise<void> {
  const broadcast = await findSendingBroadcast(deps.db, job.payload.broadcast_id)
  if (!broadcast || broadcast.status !== 'sending') {
    await deps.db.transaction((tx) => job.completeIn(tx))
    return
  }
  let { after, through } = job.payload
  if (through === null) {
    // First run of this job: take the next slice and pass the rest on, in one transaction.
    const ids = await nextAudienceIds(deps.db, broadcast.project_id, broadcast.target, after, deps.batchSize)
    through = ids.at(-1) ?? null
    const last = ids.length < deps.batchSize
    await deps.db.transaction(async (tx) => {
      if (last) {
        await tx.query('UPDATE broadcasts SET planning_done = true WHERE id = $1', [broadcast.id])
      } else {
        await enqueue(tx, 'push_batch', { broadcast_id: broadcast.id, after: through, through: null })
        await tx.query('UPDATE broadcasts SET pending_batches = pending_batches + 1 WHERE id = $1', [broadcast.id])
      }
      if (through === null) {
        // Nothing left to send: this job ends here, and the broadcast with it if it was the last.
        await recordBatch(tx, broadcast, { delivered: [], failed: [] }, -1)
        await job.completeIn(tx)
      } else {
        await job.savePayloadIn(tx, { broadcast_id: broadcast.id, after, through })
      }
    })
    if (through === null) return
  }
  const recipients = await audienceSlice(deps.db, broadcast.project_id, broadcast.target, after, through)
  await sendAndRecord(deps, job, broadcast, recipients, 1, 0)
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
  await sendAndRecord(deps, job, broadcast, recipients, job.payload.attempt, 0)
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
  await db.query(
    `UPDATE broadcasts SET status = 'failed', failure_reason = $2, finished_at = now()
      WHERE id = $1 AND status IN ('scheduled', 'pending', 'sending')`,
    [broadcastId, `internal_error: ${message}`.slice(0, 500)],
  )
}
