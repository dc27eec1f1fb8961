// The monthly push budget (api.md §8, decisions.md §1). Pushes are counted per
// project and calendar month (UTC) in the push ledger, projects/push-usage.ts.
// POST /v1/send checks the budget for the month a broadcast will fire in, and
// reserves it at once for an immediate broadcast; the scheduler reserves it for
// a scheduled one when it fires (api.md §3: "the push budget is reserved at fire time").
import type { Queryable } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { howToLift } from '../projects/plans.ts'
import { pushesUsed, tryReservePushes } from '../projects/push-usage.ts'

/**
 * The 403 a send gets when its audience does not fit; cap and audience in the
 * text and as fields, and who can raise the cap.
 */
export function monthlyPushLimitError(projectId: string, limit: number, audience: number): AppError {
  return new AppError(
    'monthly_push_limit_reached',
    `The broadcast would take the project over its monthly push cap: estimated audience ${audience}, cap ${limit} pushes per month. ${howToLift(projectId, { limit: 'monthly_pushes', plan: null })}`,
    { limit, audience },
  )
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
  if (used + audience > cap) throw monthlyPushLimitError(projectId, cap, audience)
}

/**
 * Reserves `count` pushes of the month holding `at` within `cap`, or throws
 * monthly_push_limit_reached (so a caller inside a transaction rolls back
 * everything it wrote with it).
 */
export async function reservePushes(q: Queryable, projectId: string, cap: number, count: number, at: Date): Promise<void> {
  if (!(await tryReservePushes(q, projectId, cap, count, at))) throw monthlyPushLimitError(projectId, cap, count)
}
