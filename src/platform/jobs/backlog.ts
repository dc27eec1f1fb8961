// The jobs waiting to run, for /metrics: due, not held by a live lease, not
// parked. A range scan of jobs_ready_idx over what is due; the table holds
// only work not yet done.
import type { Queryable } from '../db/database.ts'
import type { Backlog } from '../metrics/metrics.ts'

export async function waitingJobs(q: Queryable): Promise<Backlog[]> {
  const result = await q.query<{ kind: string; waiting: number; oldest: number }>(
    `SELECT kind, count(*)::int AS waiting, extract(epoch FROM now() - min(run_at))::float8 AS oldest
       FROM jobs
      WHERE run_at <= now() AND (locked_until IS NULL OR locked_until < now())
      GROUP BY kind`,
  )
  return result.rows.map((row) => ({ label: row.kind, waiting: row.waiting, oldestSeconds: Math.max(0, row.oldest) }))
}
