// SQL of stats_hourly (migration 0033, docs/stats.md), the one writer of its
// push and beacon counters (the subscriber counters are the migration's
// triggers on subscribers), and the read that GET /v1/stats sums into buckets.
import type { Queryable } from '../platform/db/database.ts'

/** The push and beacon counters one statement adds to (column names: a constant list, never input). */
export const STATS_COUNTERS = ['sent', 'delivered', 'failed', 'shown', 'clicked', 'dismissed'] as const
export type StatsCounter = (typeof STATS_COUNTERS)[number]

/** What one project's part of a batch adds to the current hour. */
export interface StatsDelta {
  project_id: string
  counts: Partial<Record<StatsCounter, number>>
  /** Of failed, by reason. */
  failed_by_reason?: Record<string, number>
}

/**
 * Adds the deltas to the current UTC hour's row of each project: one upsert
 * for the whole batch (a batch's transaction has one now(), so one hour), the
 * rows in project id order so two batches never wait for each other in a
 * circle. Call it after the batch's subscriber rows and before its broadcast
 * rows (the lock order in src/delivery/fanout.ts), in the batch's transaction.
 */
export async function addStats(q: Queryable, deltas: StatsDelta[]): Promise<void> {
  const byProject = new Map<string, StatsDelta>()
  for (const delta of deltas) {
    const into = byProject.get(delta.project_id)
    if (!into) {
      byProject.set(delta.project_id, { project_id: delta.project_id, counts: { ...delta.counts }, failed_by_reason: { ...delta.failed_by_reason } })
      continue
    }
    for (const [k, n] of Object.entries(delta.counts) as [StatsCounter, number][]) into.counts[k] = (into.counts[k] ?? 0) + n
    for (const [k, n] of Object.entries(delta.failed_by_reason ?? {})) into.failed_by_reason![k] = (into.failed_by_reason![k] ?? 0) + n
  }
  const rows = [...byProject.values()]
    .filter((d) => STATS_COUNTERS.some((k) => (d.counts[k] ?? 0) !== 0))
    .sort((a, b) => (a.project_id < b.project_id ? -1 : a.project_id > b.project_id ? 1 : 0))
  if (rows.length === 0) return
  const columns = STATS_COUNTERS.join(', ')
  await q.query(
    `INSERT INTO stats_hourly AS s (project_id, hour, ${columns}, failed_by_reason)
     SELECT d.project_id, date_trunc('hour', now(), 'UTC'), ${STATS_COUNTERS.map((k) => `d.${k}`).join(', ')}, d.failed_by_reason
       FROM unnest($1::text[], ${STATS_COUNTERS.map((_, i) => `$${i + 2}::int[]`).join(', ')}, $${STATS_COUNTERS.length + 2}::jsonb[])
            WITH ORDINALITY AS d(project_id, ${columns}, failed_by_reason, n)
      ORDER BY d.n
     ON CONFLICT (project_id, hour) DO UPDATE
        SET ${STATS_COUNTERS.map((k) => `${k} = s.${k} + EXCLUDED.${k}`).join(', ')},
            failed_by_reason = CASE WHEN EXCLUDED.failed_by_reason = '{}'::jsonb THEN s.failed_by_reason
                                    ELSE stats_add_counts(s.failed_by_reason, EXCLUDED.failed_by_reason) END`,
    [
      rows.map((d) => d.project_id),
      ...STATS_COUNTERS.map((k) => rows.map((d) => d.counts[k] ?? 0)),
      rows.map((d) => JSON.stringify(d.failed_by_reason ?? {})),
    ],
  )
}

/** One bucket's sums, as read. */
export interface StatsBucketRow {
  sent: number
  delivered: number
  failed: number
  failed_by_reason: Record<string, number>
  shown: number
  clicked: number
  dismissed: number
  gained_subscribe: number
  gained_import: number
  gained_migrated: number
  lost_unsubscribed: number
  lost_expired: number
  lost_erased: number
}

export interface StatsRead {
  buckets: StatsBucketRow[]
  /** Active subscribers now (project_counters), and the net change since the end of the last bucket: read in one statement, one snapshot. */
  active_now: number
  net_after: number
  stats_since: Date
}

const SUMS = [...STATS_COUNTERS, 'gained_subscribe', 'gained_import', 'gained_migrated', 'lost_unsubscribed', 'lost_expired', 'lost_erased'] as const

/**
 * The sums of the project's hours in each bucket [starts[i], ends[i]) (an hour
 * counts in the bucket its start lies in), by primary key ranges: a bucket is
 * one index range scan of at most a few dozen rows.
 */
export async function readStats(q: Queryable, projectId: string, starts: Date[], ends: Date[]): Promise<StatsRead | null> {
  const result = await q.query<{ kind: string; i: number | null; row: Record<string, unknown> }>(
    `WITH b AS (SELECT s, e, i FROM unnest($2::timestamptz[], $3::timestamptz[]) WITH ORDINALITY AS b(s, e, i)),
          sums AS (
            SELECT b.i, ${SUMS.map((k) => `coalesce(sum(h.${k}), 0)::int8 AS ${k}`).join(', ')},
                   coalesce(stats_sum_counts(h.failed_by_reason), '{}'::jsonb) AS failed_by_reason
              FROM b LEFT JOIN stats_hourly h ON h.project_id = $1 AND h.hour >= b.s AND h.hour < b.e
             GROUP BY b.i)
     SELECT 'bucket' AS kind, i, to_jsonb(sums) - 'i' AS row FROM sums
     UNION ALL
     SELECT 'project', NULL, jsonb_build_object(
              'active_now', coalesce(c.active_subscribers, 0),
              'stats_since', p.stats_since,
              'net_after', (SELECT coalesce(sum(h.gained_subscribe + h.gained_import + h.gained_migrated
                                                - h.lost_unsubscribed - h.lost_expired - h.lost_erased), 0)
                              FROM stats_hourly h WHERE h.project_id = $1 AND h.hour >= $4::timestamptz))
       FROM projects p LEFT JOIN project_counters c ON c.project_id = p.id
      WHERE p.id = $1`,
    [projectId, starts, ends, ends[ends.length - 1]],
  )
  const project = result.rows.find((r) => r.kind === 'project')
  if (!project) return null
  const buckets = result.rows.filter((r) => r.kind === 'bucket').sort((a, b) => Number(a.i) - Number(b.i))
  return {
    buckets: buckets.map((r) => {
      const row = r.row as Record<string, number | Record<string, number>>
      return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'string' ? Number(v) : v])) as unknown as StatsBucketRow
    }),
    active_now: Number(project.row.active_now),
    net_after: Number(project.row.net_after),
    stats_since: new Date(project.row.stats_since as string),
  }
}
