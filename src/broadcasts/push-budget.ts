// The monthly push budget (api.md §8, decisions.md §1). Pushes are counted per
// project and calendar month (UTC) in push_usage. POST /v1/send checks the
// budget for the month a broadcast will fire in, and reserves it at once for
// an immediate broadcast; the scheduler reserves it for a scheduled one when
// it fires (api.md §3: "the push budget is reserved at fire time").
import type { Queryable } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'

/** The push_usage.month key of the UTC calendar month holding `at`: 'YYYY-MM-01'. */
export function monthKey(at: Date): string {
  const month = String(at.getUTCMonth() + 1).padStart(2, '0')
  return `${at.getUTCFullYear()}-${month}-01`
}

/** The 403 a send gets when its audience does not fit; cap and audience in the text and as fields. */
export function monthlyPushLimitError(limit: number, audience: number): AppError {
  return new AppError(
    'monthly_push_limit_reached',
    `The broadcast would take the project over its monthly push cap: estimated audience ${audience}, cap ${limit} pushes per month.`,
    { limit, audience },
  )
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
 * Throws monthly_push_limit_reached when `audience` more pushes would take the
 * month holding `at` over `cap`. Reserves nothing: a check only, so a send is
 * refused early (before media is stored); reservePushes is the binding step.
 * An empty audience is never refused, since it sends nothing.
 */
export async function checkPushBudget(q: Queryable, projectId: string, cap: number, audience: number, at: Date): Promise<void> {
  if (audience <= 0) return
  const used = await pushesUsed(q, projectId, at)
  if (used + audience > cap) throw monthlyPushLimitError(cap, audience)
}

/**
 * Adds `count` pushes to the month holding `at`, atomically and only if the
 * total stays within `cap`; otherwise throws monthly_push_limit_reached, so a
 * caller inside a transaction rolls back everything it wrote with it.
 *
 * The conditional UPDATE takes the row lock, so two concurrent reservations
 * cannot both fit into the last of the budget: the second re-reads the row
 * after the first commits and fails its WHERE.
 */
export async function reservePushes(q: Queryable, projectId: string, cap: number, count: number, at: Date): Promise<void> {
  if (count <= 0) return
  const month = monthKey(at)
  await q.query('INSERT INTO push_usage (project_id, month, pushes) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING', [projectId, month])
  const result = await q.query(
    `UPDATE push_usage SET pushes = pushes + $3
      WHERE project_id = $1 AND month = $2 AND pushes + $3 <= $4
      RETURNING pushes`,
    [projectId, month, count, cap],
  )
  if (result.rowCount === 0) throw monthlyPushLimitError(cap, count)
}
