// SQL for a subscribe that replaces the browser's previous subscription
// (issue 23: pushsubscriptionchange and the SDK's migrate mode).
import type { Queryable } from '../platform/db/database.ts'
import type { Tags } from './subscribers.schemas.ts'

/** What the new subscriber takes over from the one it replaces. */
export interface Replaced {
  id: string
  auth: string
  external_id: string | null
  tags: Tags
  group_ids: string[]
}

/**
 * The project's subscriber with this endpoint, locked until the transaction
 * ends (FOR NO KEY UPDATE, as lockStatusByEndpoint), with its groups.
 */
export async function lockReplaced(q: Queryable, projectId: string, endpoint: string): Promise<Replaced | null> {
  const result = await q.query<Replaced>(
    `SELECT s.id, s.auth, s.external_id, s.tags,
            COALESCE((SELECT array_agg(m.group_id ORDER BY m.group_id) FROM group_members m WHERE m.subscriber_id = s.id), '{}') AS group_ids
       FROM subscribers s WHERE s.project_id = $1 AND s.endpoint = $2 FOR NO KEY UPDATE`,
    [projectId, endpoint],
  )
  return result.rows[0] ?? null
}

/** The replaced subscriber receives nothing more: active becomes expired (an unsubscribed one stays unsubscribed). */
export async function expireReplaced(q: Queryable, projectId: string, id: string): Promise<void> {
  await q.query(`UPDATE subscribers SET status = 'expired' WHERE project_id = $1 AND id = $2 AND status = 'active'`, [projectId, id])
}
