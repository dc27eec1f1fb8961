// SQL of stats_hourly (migration 0033, docs/stats.md), the one writer of its
// push and beacon counters (the subscriber counters are the migration's
// triggers on subscribers), and the read that GET /v1/stats sums into buckets.
import type { Queryable } from '../platform/db/database.ts'
import type { FailReason } from '../broadcasts/broadcasts.schemas.ts'

/**
 * The failure reasons with a column of their own (migration 0033): those of
 * FAIL_REASONS when it was written. A reason added later counts in failed
 * alone until a migration gives it a column and it joins this list: never a
 * column that does not exist, which would fail the batch's transaction.
 */
export const COUNTED_FAIL_REASONS: readonly FailReason[] = ['gone', 'rejected', 'unreachable', 'vapid_key_mismatch', 'capped', 'skipped']
const counted: ReadonlySet<string> = new Set(COUNTED_FAIL_REASONS)
export const isCountedReason = (reason: string): reason is FailReason => counted.has(reason)

/** The column of failed by reason. */
export const failedColumn = (reason: FailReason) => `failed_${reason}` as const
type FailedColumn = ReturnType<typeof failedColumn>

/** The push and beacon counters one statement adds to (column names: a constant list, never input). */
export const STATS_COUNTERS = ['sent', 'delivered', 'failed', ...COUNTED_FAIL_REASONS.map(failedColumn), 'shown', 'clicked', 'dismissed'] as const
export type StatsCounter = 'sent' | 'delivered' | 'failed' | FailedColumn | 'shown' | 'clicked' | 'dismissed'

/** The subscriber counters, written by the triggers of migration 0033. */
const SUBSCRIBER_COUNTERS = ['gained_subscribe', 'gained_import', 'gained_migrated', 'lost_unsubscribed', 'lost_expired', 'lost_erased'] as const
type SubscriberCounter = (typeof SUBSCRIBER_COUNTERS)[number]

/** What one project's part of a batch adds to the current hour. */
export interface StatsDelta {
  project_id: string
  counts: Partial<Record<StatsCounter, number>>
}

/**
 * Adds the deltas to the current UTC hour's row of each project: one upsert
 * for the whole batch (a batch's transaction has one now(), so one hour), the
 * rows in project id order so two batches never wait for each other in a
 * circle. Call it after the batch's subscriber rows and before its broadcast
 * rows (the lock order in src/delivery/fanout.ts), in the batch's transaction.
 */
export async function addStats(q: Queryable, deltas: StatsDelta[]): Promise<void> {
  const byProject = new Map<string, Partial<Record<StatsCounter, number>>>()
  for (const delta of deltas) {
    const into = byProject.get(delta.project_id) ?? {}
    byProject.set(delta.project_id, into)
    for (const [k, n] of Object.entries(delta.counts) as [StatsCounter, number][]) into[k] = (into[k] ?? 0) + n
  }
  const rows = [...byProject.entries()]
    .filter(([, counts]) => STATS_COUNTERS.some((k) => (counts[k] ?? 0) !== 0))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  if (rows.length === 0) return
  const columns = STATS_COUNTERS.join(', ')
  await q.query(
    `INSERT INTO stats_hourly AS s (project_id, hour, ${columns})
     SELECT d.project_id, date_trunc('hour', now(), 'UTC'), ${STATS_COUNTERS.map((k) => `d.${k}`).join(', ')}
       FROM unnest($1::text[], ${STATS_COUNTERS.map((_, i) => `$${i + 2}::int[]`).join(', ')})
            WITH ORDINALITY AS d(project_id, ${columns}, n)
      ORDER BY d.n
     ON CONFLICT (project_id, hour) DO UPDATE
        SET ${STATS_COUNTERS.map((k) => `${k} = s.${k} + EXCLUDED.${k}`).join(', ')}`,
    [rows.map(([id]) => id), ...STATS_COUNTERS.map((k) => rows.map(([, counts]) => counts[k] ?? 0))],
  )
}

/** One bucket's sums, as read. */
export type StatsBucketRow = Record<StatsCounter | SubscriberCounter, number>

export interface StatsRead {
  buckets: StatsBucketRow[]
  /** Active subscribers now (project_counters), and the net change since the end of the last bucket: read in one statement, one snapshot. */
  active_now: number
  net_after: number
  stats_since: Date
}

const SUMS = [...STATS_COUNTERS, ...SUBSCRIBER_COUNTERS] as const
const EMPTY = Object.fromEntries(SUMS.map((k) => [k, 0])) as StatsBucketRow

/**
 * Which bucket (1 to n) an hour h.hour falls in: an hour counts in the bucket
 * its start lies in, and buckets are contiguous from $3. Hours are an hour
 * apart even in a zone whose offset is not whole hours; days are the local
 * dates of the zone ($5), which PostgreSQL's time zone data computes per row;
 * a zone it lacks falls back to a binary search over the bucket starts
 * (width_bucket over $2), correct and slower.
 */
const BUCKET_OF = {
  hour: `floor(extract(epoch FROM h.hour - $3::timestamptz) / 3600)::int + 1`,
  day: `((h.hour AT TIME ZONE $5::text)::date - ($3::timestamptz AT TIME ZONE $5::text)::date) + 1`,
  search: `width_bucket(h.hour, $2::timestamptz[])`,
} as const

/**
 * The sums of the project's hours in each bucket: one primary key range scan
 * over the hours of the whole range (720 rows for 30 days of hours, 8,784 for
 * a year), grouped by bucket; then, in the same statement (one snapshot), the
 * active count now and the net change since the last bucket's end.
 */
export async function readStats(q: Queryable, projectId: string, interval: 'hour' | 'day', zone: string, starts: Date[], ends: Date[]): Promise<StatsRead | null> {
  const read = (bucketOf: string) => q.query<{ kind: string; i: number | null; row: Record<string, unknown> }>(
    `WITH sums AS (
            SELECT ${bucketOf} AS i, ${SUMS.map((k) => `sum(h.${k})::int8 AS ${k}`).join(', ')}
              FROM stats_hourly h
             WHERE h.project_id = $1 AND h.hour >= $3::timestamptz AND h.hour < $4::timestamptz
             GROUP BY 1)
     SELECT 'bucket' AS kind, sums.i, to_jsonb(sums) - 'i' AS row FROM sums
     UNION ALL
     SELECT 'project', NULL, jsonb_build_object(
              'active_now', coalesce(c.active_subscribers, 0),
              'stats_since', p.stats_since,
              'net_after', (SELECT coalesce(sum(h.gained_subscribe + h.gained_import + h.gained_migrated
                                                - h.lost_unsubscribed - h.lost_expired - h.lost_erased), 0)
                              FROM stats_hourly h WHERE h.project_id = $1 AND h.hour >= $4::timestamptz))
       FROM projects p LEFT JOIN project_counters c ON c.project_id = p.id
      WHERE p.id = $1 AND ($2::timestamptz[] IS NULL OR true) AND ($5::text IS NULL OR true)`,
    // The bucket starts only for the binary search: an array of hundreds of times costs its parse.
    [projectId, bucketOf === BUCKET_OF.search ? starts : null, starts[0], ends[ends.length - 1], zone],
  )
  let result
  try {
    result = await read(BUCKET_OF[interval])
  } catch (err) {
    // 22023: time zone not recognized (a zone Node knows and this PostgreSQL's data does not).
    if (interval !== 'day' || (err as { code?: string }).code !== '22023') throw err
    result = await read(BUCKET_OF.search)
  }
  const project = result.rows.find((r) => r.kind === 'project')
  if (!project) return null
  const buckets: StatsBucketRow[] = starts.map(() => ({ ...EMPTY }))
  for (const r of result.rows) {
    if (r.kind !== 'bucket') continue
    const i = Number(r.i) - 1
    if (i < 0 || i >= buckets.length) continue
    buckets[i] = Object.fromEntries(SUMS.map((k) => [k, Number(r.row[k] ?? 0)])) as StatsBucketRow
  }
  return {
    buckets,
    active_now: Number(project.row.active_now),
    net_after: Number(project.row.net_after),
    stats_since: new Date(project.row.stats_since as string),
  }
}
