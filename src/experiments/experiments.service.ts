// An A/B test's life (docs/experiments.md), every transition in one place:
//
//   waiting ──startTestIn──▶ testing ──decision job or a person──▶ sending_winner
//                               │                                   (the rest gets the winner)
//                               └──────────────────────────────▶ stopped (no winner: on_inconclusive stop,
//                                                                          or the broadcast was stopped)
//   With test_share 1 there is nothing to decide: the view reads complete once the broadcast is over.
//
// The decision job is enqueued when the fan-out starts, in its transaction,
// and counts as one of the broadcast's outstanding batches: the broadcast
// stays sending (the rest of the audience pending) until the winner has gone
// to the rest. Lock order: the job's row, the experiment row (FOR UPDATE),
// rows inserted (jobs), then the broadcast row (addOutcomes), as fan-out.
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError, invalidField } from '../platform/errors.ts'
import { isId } from '../platform/ids.ts'
import { enqueue } from '../platform/jobs/queue.ts'
import { RetryLater, type Job, type JobHandlers } from '../platform/jobs/worker.ts'
import { deleteBroadcastJobs } from '../platform/jobs/jobs.store.ts'
import { addOutcomes, addPendingBatch, emptyDelta } from '../broadcasts/broadcast-state.ts'
import { BROADCAST_PAYLOAD_VERSION } from '../broadcasts/payload-version.ts'
import type { BroadcastRecord } from '../broadcasts/broadcasts.store.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'
import { analyse, decide, decideByPerson, TEST_NAME, type Decision } from './decision.ts'
import { findExperiment, findExperiments, recordDecision, startTest, type Experiment, type VariantContent } from './experiments.store.ts'
import type { ExperimentView } from './experiments.schemas.ts'
import { durationText } from './experiment-send.ts'

declare module '../platform/jobs/queue.ts' {
  interface JobPayloads {
    /** An A/B test's decide_after has come: decide, and send the winner to the rest of the audience. */
    decide_experiment: { broadcast_id: string }
  }
}

/**
 * The fan-out of a broadcast with a test starts (fanout.ts startFanout, in
 * its transaction, the broadcast row already locked): the test begins, and
 * unless every subscriber is in it, its decision is queued for decide_after
 * from now, holding the broadcast sending until then.
 */
export async function startTestIn(tx: Queryable, broadcastId: string): Promise<void> {
  const experiment = await findExperiment(tx, broadcastId)
  if (!experiment) return
  if (experiment.test_share >= 1) {
    await startTest(tx, broadcastId, null)
    return
  }
  const decideAt = new Date(Date.now() + experiment.decide_after_ms)
  await startTest(tx, broadcastId, decideAt)
  await enqueue(tx, 'decide_experiment', { broadcast_id: broadcastId }, { runAt: decideAt, payloadVersion: BROADCAST_PAYLOAD_VERSION })
  await addPendingBatch(tx, broadcastId)
}

/**
 * Records a decision and acts on it: with a winner, a chain of batches that
 * pushes the rest of the audience (experiment-fanout.ts, part "rest");
 * without, nothing more. `endsHold`: the decision job is ending, and with it
 * its place among the broadcast's outstanding batches (which may end the
 * broadcast when nothing else is left).
 */
async function applyDecision(tx: Queryable, experiment: Experiment, decision: Decision, endsHold: boolean): Promise<void> {
  const id = experiment.broadcast_id
  await recordDecision(tx, id, decision.winner ? 'sending_winner' : 'stopped', decision)
  let jobs = endsHold ? -1 : 0
  if (decision.winner) {
    await enqueue(tx, 'push_batch', { broadcast_id: id, after: null, through: null, part: 'rest' }, { payloadVersion: BROADCAST_PAYLOAD_VERSION })
    jobs++
  }
  // The broadcast row last (the lock order); a change of 0 still settles nothing and finishes nothing.
  if (jobs !== 0) await addOutcomes(tx, id, emptyDelta(), jobs)
}

async function broadcastStatus(q: Queryable, id: string, projectId?: string): Promise<string | null> {
  const found = await q.query<{ status: string }>(
    projectId ? 'SELECT status FROM broadcasts WHERE id = $1 AND project_id = $2' : 'SELECT status FROM broadcasts WHERE id = $1',
    projectId ? [id, projectId] : [id],
  )
  return found.rows[0]?.status ?? null
}

/** decide_experiment: the automatic decision at decide_after. Safe to run again: a test no longer testing is left as it is. */
/** How soon a decision that found test pushes still to go looks again. */
export const TEST_PENDING_RECHECK_MS = 5 * 60_000

/**
 * Whether the test part still has pushes to hand out: a chain of the test
 * (part 'test') not yet done, e.g. a wave held for local time or quiet hours,
 * or a throttled chain. Deciding then would judge variants on a part of
 * their share (none at all, when every test wave waits).
 */
async function testStillSending(q: Queryable, broadcastId: string): Promise<boolean> {
  const pending = await q.query("SELECT 1 FROM jobs WHERE kind = 'push_batch' AND payload ->> 'broadcast_id' = $1 AND payload ->> 'part' = 'test' LIMIT 1", [broadcastId])
  return pending.rows.length > 0
}

async function decideJob(db: Database, job: Job<'decide_experiment'>): Promise<void> {
  const id = job.payload.broadcast_id
  // decide_after counts from the start, but never ends before the test's last push is out.
  if (await testStillSending(db, id)) throw new RetryLater(TEST_PENDING_RECHECK_MS, 'the test part is still sending')
  await db.transaction(async (tx) => {
    await job.completeIn(tx)
    const experiment = await findExperiment(tx, id, true)
    if (!experiment) return
    const status = await broadcastStatus(tx, id)
    if (experiment.phase !== 'testing') {
      // Decided already (a person's decision deletes this job, so only a run from before it gets here): its hold ends.
      if (status === 'sending') await addOutcomes(tx, id, emptyDelta(), -1)
      return
    }
    if (status !== 'sending') {
      await recordDecision(tx, id, 'stopped', null)
      return
    }
    const { variants } = experiment
    const decision = decide(variants, experiment.metric, experiment.min_per_variant, experiment.confidence, experiment.on_inconclusive)
    await applyDecision(tx, experiment, decision, true)
  })
}

export function experimentJobHandlers(db: Database): JobHandlers {
  return { decide_experiment: (job) => decideJob(db, job) }
}

function notFound(id: string): AppError {
  return new AppError('broadcast_not_found', `No broadcast ${id} in this project.`)
}

/**
 * POST /v1/broadcasts/:id/experiment/decide: a person ends the test early,
 * with their choice of winner or the leader now. Only a test that is
 * running (its broadcast sending) with a winner phase can be decided.
 */
export async function decideExperiment(db: Database, audit: AuditContext, projectId: string, id: string, winner: string | undefined): Promise<void> {
  if (!isId('bdc', id)) throw notFound(id)
  await db.transaction(async (tx) => {
    const status = await broadcastStatus(tx, id, projectId)
    if (status === null) throw notFound(id)
    // The decision job's row first (the lock order: a job's row, then the experiment's). Deleted
    // here, it releases its hold on the broadcast below; a refusal further down rolls it back.
    const held = await deleteBroadcastJobs(tx, 'decide_experiment', id)
    const experiment = await findExperiment(tx, id, true)
    if (!experiment) throw new AppError('experiment_not_found', `Broadcast ${id} has no A/B test.`)
    if (winner !== undefined && !experiment.variants.some((v) => v.key === winner)) {
      throw invalidField('winner', `"${winner}" is not a variant of this test (${experiment.variants.map((v) => v.key).join(', ')})`)
    }
    if (experiment.test_share >= 1) throw new AppError('experiment_not_decidable', 'This test has no winner phase (test_share 1): every subscriber got a variant.')
    if (experiment.phase !== 'testing' || status !== 'sending') {
      const why = experiment.phase === 'waiting' ? 'has not started' : experiment.phase === 'testing' ? `belongs to a broadcast that is ${status}` : `is already decided (${experiment.phase})`
      throw new AppError('experiment_not_decidable', `The test of broadcast ${id} ${why}.`)
    }
    const decision = decideByPerson(experiment.variants, experiment.metric, experiment.min_per_variant, experiment.confidence, winner)
    await applyDecision(tx, experiment, decision, held > 0)
    await recordAudit(tx, {
      projectId,
      context: audit,
      action: 'broadcast.experiment_decide',
      target: { type: 'broadcast', id },
      details: { winner: decision.winner, chosen: winner !== undefined, leader: decision.analysis.leader, significant: decision.analysis.significant },
    })
  })
}

const rate = (x: number, n: number) => (n > 0 ? Math.min(1, x / n) : null)

/** The experiment as GET /v1/broadcasts/:id shows it: counts, rates, the statistic now, the decision and why. */
export function toExperimentView(experiment: Experiment, broadcast: Pick<BroadcastRecord, 'status' | 'audience'>): ExperimentView {
  const analysis = analyse(experiment.variants, experiment.metric, experiment.min_per_variant, experiment.confidence)
  const over = ['sent', 'failed', 'canceled'].includes(broadcast.status)
  const noWinnerPhase = experiment.test_share >= 1
  const undecided = experiment.phase === 'testing' || experiment.phase === 'waiting'
  // A test whose broadcast was stopped reads stopped at once, not when its decision job next runs (up to decide_after later).
  const phase = broadcast.status === 'canceled' && undecided ? 'stopped' : noWinnerPhase && over && experiment.phase === 'testing' ? 'complete' : experiment.phase
  const decision = experiment.decision
  let reason = decision?.reason ?? null
  if (reason === null && phase === 'complete') {
    reason = `test_share 1: every subscriber got a variant, so there is no winner phase. ` +
      (analysis.leader ? `${analysis.leader} leads; its lead is ${analysis.significant ? '' : 'not '}significant at ${experiment.confidence * 100}% confidence.` : 'Nothing was delivered.')
  } else if (reason === null && phase === 'stopped') {
    reason = 'The broadcast was stopped before the test was decided: the rest of the audience got nothing.'
  }
  const tested = experiment.variants.reduce((sum, v) => sum + v.audience, 0)
  return {
    phase,
    test_share: experiment.test_share,
    metric: experiment.metric,
    decide_after: durationText(experiment.decide_after_ms),
    min_per_variant: experiment.min_per_variant,
    on_inconclusive: experiment.on_inconclusive,
    confidence: experiment.confidence,
    test: TEST_NAME,
    decide_at: experiment.decide_at?.getTime() ?? null,
    decided_at: experiment.decided_at?.getTime() ?? null,
    leader: analysis.leader,
    significant: analysis.significant,
    winner: experiment.winner,
    decided_by: decision?.decided_by ?? null,
    reason,
    variants: experiment.variants.map((v, i) => ({
      key: v.key,
      notification: { title: v.title, body: v.body, icon: v.icon, image: v.image, url: v.url, ...(v.actions.length > 0 ? { actions: v.actions } : {}) },
      audience: v.audience,
      sent: v.sent,
      delivered: v.delivered,
      failed: v.failed,
      clicked: v.clicked,
      shown: v.shown,
      dismissed: v.dismissed,
      click_rate: rate(v.clicked, v.delivered),
      shown_rate: rate(v.shown, v.delivered),
      z: analysis.comparisons[i].z,
      p_value: analysis.comparisons[i].p_value,
    })),
    rest: { audience: noWinnerPhase ? 0 : Math.max(0, broadcast.audience - tested) },
  }
}

/** Adds `experiment` to the views of the broadcasts that have one: one query for a page of them. */
export async function withExperiments<V extends { id: string }>(q: Queryable, projectId: string, rows: BroadcastRecord[], views: V[]): Promise<V[]> {
  const ids = rows.filter((r) => r.has_experiment).map((r) => r.id)
  if (ids.length === 0) return views
  const experiments = await findExperiments(q, projectId, ids)
  return views.map((view, i) => {
    const experiment = experiments.get(view.id)
    return experiment ? { ...view, experiment: toExperimentView(experiment, rows[i]) } : view
  })
}

/**
 * What GET /v1/notifications/:broadcast_id serves for a broadcast with a
 * test: the variant named (with its key, echoed in beacons), or, without
 * one, the winner's content (the rest of the audience's pushes name no
 * variant). Null: the broadcast's own content.
 */
export async function experimentContent(q: Queryable, broadcastId: string, variant: string | undefined): Promise<(VariantContent & { variant: string | null }) | null> {
  const experiment = await findExperiment(q, broadcastId)
  if (!experiment) return null
  const named = variant !== undefined ? experiment.variants.find((v) => v.key === variant) : undefined
  if (named) return { ...named, variant: named.key }
  const winner = experiment.variants.find((v) => v.key === experiment.winner)
  return winner ? { ...winner, variant: null } : null
}
