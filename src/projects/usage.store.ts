// What a project has used so far: active subscribers and pushes counted this
// calendar month (UTC). Shown by GET /v1/me and the operator API.
import type { Queryable } from '../platform/db/database.ts'
import { pushesUsed } from './push-usage.ts'

export interface ProjectUsage {
  subscribers: number
  pushes_this_month: number
}

export async function projectUsage(q: Queryable, projectId: string): Promise<ProjectUsage> {
  // Active subscribers come from the counter kept by migration 0003's triggers.
  const result = await q.query<{ subscribers: number | string }>(
    'SELECT COALESCE((SELECT active_subscribers FROM project_counters WHERE project_id = $1), 0) AS subscribers',
    [projectId],
  )
  return { subscribers: Number(result.rows[0].subscribers), pushes_this_month: await pushesUsed(q, projectId, new Date()) }
}
