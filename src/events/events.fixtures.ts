// Rows the events tests need, written with SQL: the events domain only needs
// a broadcast to exist, not the send path that normally makes one.
import type { Queryable } from '../platform/db/database.ts'
import { newId } from '../platform/ids.ts'

export async function insertSentBroadcast(db: Queryable, projectId: string): Promise<string> {
  const id = newId('bdc')
  await db.query(
    `INSERT INTO broadcasts (id, project_id, status, target, title, body, url, ttl, urgency)
     VALUES ($1, $2, 'sent', '{"type":"all"}', 'T', 'B', '/', 86400, 'normal')`,
    [id, projectId],
  )
  return id
}
