// SQL of the subscriber export (issue 23): one page at a time in id order
// (keyset: each page starts after the last id of the one before), so an
// export of millions holds one page in memory and no long transaction.
import type { Queryable } from '../platform/db/database.ts'
import type { SubscriberSource, SubscriberStatus, Tags } from './subscribers.schemas.ts'

export interface ExportRow {
  id: string
  endpoint: string
  p256dh: string
  auth: string
  external_id: string | null
  status: SubscriberStatus
  tags: Tags
  source: SubscriberSource
  created_at: Date
  last_seen_at: Date
  /** Group names, sorted: ids mean nothing to another project or another sender. */
  groups: string[]
}

export async function exportPage(q: Queryable, projectId: string, afterId: string | null, limit: number): Promise<ExportRow[]> {
  const result = await q.query<ExportRow>(
    `SELECT s.id, s.endpoint, s.p256dh, s.auth, s.external_id, s.status, s.tags, s.source, s.created_at, s.last_seen_at,
            COALESCE((SELECT array_agg(g.name ORDER BY g.name) FROM group_members m JOIN groups g ON g.id = m.group_id
                       WHERE m.subscriber_id = s.id), '{}') AS groups
       FROM subscribers s
      WHERE s.project_id = $1 AND ($2::text IS NULL OR s.id > $2)
      ORDER BY s.id
      LIMIT $3`,
    [projectId, afterId, limit],
  )
  return result.rows
}
