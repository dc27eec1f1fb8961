// The broadcast_experiments and broadcast_variants tables (migration 0032):
// the one module that writes them.
import type { Queryable } from '../platform/db/database.ts'
import type { NotificationContent } from '../broadcasts/notification-payload.ts'
import type { ExperimentMetric, ExperimentPhase, OnInconclusive } from './experiments.schemas.ts'
import type { Decision } from './decision.ts'
import { markHasExperiment } from '../broadcasts/broadcasts.store.ts'

/** A variant's notification: the content fields of every push (notification-payload.ts), and its key. */
export interface VariantContent extends Pick<NotificationContent, 'title' | 'body' | 'icon' | 'image' | 'url' | 'actions'> {
  key: string
}

export interface VariantRow extends VariantContent {
  position: number
  audience: number
  sent: number
  delivered: number
  failed: number
  clicked: number
  dismissed: number
  shown: number
}

export interface ExperimentConfig {
  test_share: number
  metric: ExperimentMetric
  decide_after_ms: number
  min_per_variant: number
  on_inconclusive: OnInconclusive
  confidence: number
}

export interface ExperimentRow extends ExperimentConfig {
  broadcast_id: string
  project_id: string
  phase: ExperimentPhase
  decide_at: Date | null
  winner: string | null
  decision: Decision | null
  decided_at: Date | null
}

export interface Experiment extends ExperimentRow {
  /** In their order (position). */
  variants: VariantRow[]
}

export async function insertExperiment(q: Queryable, broadcastId: string, projectId: string, config: ExperimentConfig, variants: VariantContent[]): Promise<void> {
  // The broadcast was inserted by this transaction: nobody else sees it yet.
  await markHasExperiment(q, broadcastId)
  await q.query(
    `INSERT INTO broadcast_experiments (broadcast_id, project_id, test_share, metric, decide_after_ms, min_per_variant, on_inconclusive, confidence)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [broadcastId, projectId, config.test_share, config.metric, config.decide_after_ms, config.min_per_variant, config.on_inconclusive, config.confidence],
  )
  await q.query(
    `INSERT INTO broadcast_variants (broadcast_id, key, position, title, body, icon, image, url, actions)
     SELECT $1, v.key, v.position, v.title, v.body, v.icon, v.image, v.url, v.actions
       FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::jsonb[])
         AS v(key, position, title, body, icon, image, url, actions)`,
    [
      broadcastId,
      variants.map((v) => v.key),
      variants.map((_, i) => i),
      variants.map((v) => v.title),
      variants.map((v) => v.body),
      variants.map((v) => v.icon),
      variants.map((v) => v.image),
      variants.map((v) => v.url),
      variants.map((v) => JSON.stringify(v.actions)),
    ],
  )
}

const EXPERIMENT_COLUMNS = `e.broadcast_id, e.project_id, e.test_share, e.metric, e.decide_after_ms::float8 AS decide_after_ms, e.min_per_variant, e.on_inconclusive, e.confidence,
  e.phase, e.decide_at, e.winner, e.decision, e.decided_at`
const VARIANT_COLUMNS = 'broadcast_id, key, position, title, body, icon, image, url, actions, audience, sent, delivered, failed, clicked, dismissed, shown'

/** The experiments of these broadcasts (of one project), with their variants. */
export async function findExperiments(q: Queryable, projectId: string, broadcastIds: string[]): Promise<Map<string, Experiment>> {
  if (broadcastIds.length === 0) return new Map()
  const found = await q.query<ExperimentRow>(
    `SELECT ${EXPERIMENT_COLUMNS} FROM broadcast_experiments e WHERE e.project_id = $1 AND e.broadcast_id = ANY ($2::text[])`,
    [projectId, broadcastIds],
  )
  const byId = new Map(found.rows.map((row) => [row.broadcast_id, { ...row, variants: [] as VariantRow[] }]))
  if (byId.size === 0) return byId
  const variants = await q.query<VariantRow & { broadcast_id: string }>(
    `SELECT ${VARIANT_COLUMNS} FROM broadcast_variants WHERE broadcast_id = ANY ($1::text[]) ORDER BY broadcast_id, position`,
    [[...byId.keys()]],
  )
  for (const { broadcast_id, ...variant } of variants.rows) byId.get(broadcast_id)?.variants.push(variant)
  return byId
}

/**
 * One broadcast's experiment with its variants, in one statement (fan-out
 * reads it once per batch), its row locked (FOR UPDATE) when asked: the
 * decision job and a person deciding take it first.
 */
export async function findExperiment(q: Queryable, broadcastId: string, lock = false): Promise<Experiment | null> {
  const found = await q.query<Experiment>(
    `SELECT ${EXPERIMENT_COLUMNS},
            (SELECT COALESCE(json_agg(json_build_object(${VARIANT_COLUMNS.split(', ').filter((c) => c !== 'broadcast_id').map((c) => `'${c}', v.${c}`).join(', ')}) ORDER BY v.position), '[]')
               FROM broadcast_variants v WHERE v.broadcast_id = e.broadcast_id) AS variants
       FROM broadcast_experiments e WHERE e.broadcast_id = $1${lock ? ' FOR UPDATE OF e' : ''}`,
    [broadcastId],
  )
  return found.rows[0] ?? null
}

/** waiting → testing (or complete with no winner phase), and when the decision is due. */
export async function startTest(q: Queryable, broadcastId: string, decideAt: Date | null): Promise<void> {
  await q.query(`UPDATE broadcast_experiments SET phase = 'testing', decide_at = $2 WHERE broadcast_id = $1`, [broadcastId, decideAt])
}

/** testing → sending_winner or stopped, with the decision. */
export async function recordDecision(q: Queryable, broadcastId: string, phase: ExperimentPhase, decision: Decision | null): Promise<void> {
  await q.query(
    `UPDATE broadcast_experiments SET phase = $2, winner = $3, decision = $4, decided_at = now() WHERE broadcast_id = $1`,
    [broadcastId, phase, decision?.winner ?? null, decision ? JSON.stringify(decision) : null],
  )
}

/** Counts to add to one variant of one broadcast. */
export interface VariantDelta {
  broadcast_id: string
  key: string
  audience?: number
  sent?: number
  delivered?: number
  failed?: number
  clicked?: number
  dismissed?: number
  shown?: number
}

/**
 * Adds the deltas in one statement. The rows are taken in (broadcast_id, key)
 * order (an INSERT … SELECT … ORDER BY that always lands on ON CONFLICT, as
 * the join keeps only existing variants), so fan-out and beacon transactions
 * touching the same variants never wait for each other in a circle; a key
 * that is not one of the broadcast's variants changes nothing.
 */
export async function addVariantCounts(q: Queryable, given: VariantDelta[]): Promise<void> {
  // One row per variant: ON CONFLICT may not touch a row twice in one statement.
  const merged = new Map<string, Required<VariantDelta>>()
  for (const d of given) {
    const id = `${d.broadcast_id} ${d.key}`
    const m = merged.get(id) ?? { broadcast_id: d.broadcast_id, key: d.key, audience: 0, sent: 0, delivered: 0, failed: 0, clicked: 0, dismissed: 0, shown: 0 }
    for (const field of ['audience', 'sent', 'delivered', 'failed', 'clicked', 'dismissed', 'shown'] as const) m[field] += d[field] ?? 0
    merged.set(id, m)
  }
  const deltas = [...merged.values()]
  if (deltas.length === 0) return
  const n = (pick: (d: VariantDelta) => number | undefined) => deltas.map((d) => pick(d) ?? 0)
  await q.query(
    `INSERT INTO broadcast_variants AS t (broadcast_id, key, position, title, body, url, audience, sent, delivered, failed, clicked, dismissed, shown)
     SELECT v.broadcast_id, v.key, v.position, v.title, v.body, v.url, d.audience, d.sent, d.delivered, d.failed, d.clicked, d.dismissed, d.shown
       FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::int[], $6::int[], $7::int[], $8::int[], $9::int[])
         AS d(broadcast_id, key, audience, sent, delivered, failed, clicked, dismissed, shown)
       JOIN broadcast_variants v ON v.broadcast_id = d.broadcast_id AND v.key = d.key
      ORDER BY v.broadcast_id, v.key
     ON CONFLICT (broadcast_id, key) DO UPDATE SET
       audience = t.audience + excluded.audience, sent = t.sent + excluded.sent, delivered = t.delivered + excluded.delivered,
       failed = t.failed + excluded.failed, clicked = t.clicked + excluded.clicked, dismissed = t.dismissed + excluded.dismissed,
       shown = t.shown + excluded.shown`,
    [
      deltas.map((d) => d.broadcast_id),
      deltas.map((d) => d.key),
      n((d) => d.audience),
      n((d) => d.sent),
      n((d) => d.delivered),
      n((d) => d.failed),
      n((d) => d.clicked),
      n((d) => d.dismissed),
      n((d) => d.shown),
    ],
  )
}
