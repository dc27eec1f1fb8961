// What a project has used so far: active subscribers and pushes counted this
// calendar month (UTC). Shown by GET /v1/me and the operator API.
import type { Queryable } from '../platform/db/database.ts'

export interface ProjectUsage {
  subscribers: number
  pushes_this_month: number
}

export async function projectUsage(q: Queryable, projectId: string): Promise<ProjectUsage> {
  // Active subscribers come from the counter kept by migration 0003's triggers.
  // push_usage.month is the first day of the month; date_trunc in UTC picks the
  // current row whatever the server's time zone.
  const result = await q.query<{ subscribers: number | string; pushes_this_month: number | string }>(
    `SELECT
       COALESCE((SELECT active_subscribers FROM project_counters WHERE project_id = $1), 0) AS subscribers,
       COALESCE((SELECT pushes FROM push_usage
                  WHERE project_id = $1
                    AND month = (date_trunc('month', now() AT TIME ZONE 'UTC'))::date), 0) AS pushes_this_month`,
    [projectId],
  )
  const row = result.rows[0]
  return { subscribers: Number(row.subscribers), pushes_this_month: Number(row.pushes_this_month) }
}
