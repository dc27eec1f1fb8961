// A broadcast's audience counted by push service (subscribers.push_service,
// the generated column of migration 0006), for the dry run of a send.
import type { Queryable } from '../platform/db/database.ts'
import type { PushService } from '../subscribers/subscribers.schemas.ts'
import { audienceCondition, type AudienceTarget } from './audience.store.ts'

export type PushServiceCounts = Record<PushService, number>

/** Active audience members per push service; all five keys, 0 where there are none. */
export async function countAudienceByPushService(q: Queryable, projectId: string, target: AudienceTarget): Promise<PushServiceCounts> {
  const where = audienceCondition(projectId, target)
  const result = await q.query<{ push_service: PushService; n: number }>(
    `SELECT s.push_service, count(*)::int AS n FROM subscribers s WHERE ${where.sql} GROUP BY s.push_service`,
    where.params,
  )
  const counts: PushServiceCounts = { fcm: 0, mozilla: 0, apple: 0, wns: 0, other: 0 }
  for (const row of result.rows) counts[row.push_service] = row.n
  return counts
}
