// The push ledger: pushes counted per project and calendar month (UTC) in
// push_usage (api.md §8). This module is the table's one writer and reader;
// the monthly cap is checked against it by broadcasts/push-budget.ts, fan-out
// settles it on what was really pushed, and GET /v1/me shows it.
import type { Queryable } from '../platform/db/database.ts'

/** The push_usage.month key of the UTC calendar month holding `at`: 'YYYY-MM-01'. */
export function monthKey(at: Date): string {
  const month = String(at.getUTCMonth() + 1).padStart(2, '0')
  return `${at.getUTCFullYear()}-${month}-01`
}

/** Pushes already counted in the month holding `at`. */
export async function pushesUsed(q: Queryable, projectId: string, at: Date): Promise<number> {
  const result = await q.query<{ pushes: number }>('SELECT pushes FROM push_usage WHERE project_id = $1 AND month = $2', [
    projectId,
    monthKey(at),
  ])
  return Number(result.rows[0]?.pushes ?? 0)
}

/**
 * Adds `count` pushes to the month holding `at`, atomically and only if the
 * total stays within `cap`; false (and nothing written) when it would not.
 *
 * The conditional UPDATE takes the row lock, so two concurrent reservations
 * cannot both fit into the last of the budget: the second re-reads the row
 * after the first commits and fails its WHERE.
 */
export async function tryReservePushes(q: Queryable, projectId: string, cap: number, count: number, at: Date): Promise<boolean> {
  if (count <= 0) return true
  const month = monthKey(at)
  await q.query('INSERT INTO push_usage (project_id, month, pushes) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING', [projectId, month])
  const result = await q.query(
    `UPDATE push_usage SET pushes = pushes + $3
      WHERE project_id = $1 AND month = $2 AND pushes + $3 <= $4
      RETURNING pushes`,
    [projectId, month, count, cap],
  )
  return result.rowCount > 0
}

/**
 * Corrects the month holding `at` by `delta` pushes, whatever the cap (what
 * was really pushed counts even past it), never below zero: fan-out adds the
 * subscribers who joined after the send and gives back what was reserved for
 * those who left.
 */
export async function adjustPushes(q: Queryable, projectId: string, at: Date, delta: number): Promise<void> {
  if (delta === 0) return
  await q.query(
    `INSERT INTO push_usage (project_id, month, pushes) VALUES ($1, $2::date, GREATEST(0, $3::bigint))
     ON CONFLICT (project_id, month) DO UPDATE SET pushes = GREATEST(0, push_usage.pushes + $3::bigint)`,
    [projectId, monthKey(at), delta],
  )
}
