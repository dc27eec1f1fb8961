// SQL for click and dismiss events and the counts they bump on broadcasts.
import type { Queryable } from '../platform/db/database.ts'

export type BeaconEventType = 'clicked' | 'dismissed'

/** Adds one to the broadcast's clicked or dismissed count; false when the project has no such broadcast. */
export async function incrementBroadcastCount(q: Queryable, projectId: string, broadcastId: string, type: BeaconEventType): Promise<boolean> {
  // The column name comes from this fixed choice, never from the request.
  const column = type === 'clicked' ? 'clicked' : 'dismissed'
  const result = await q.query(`UPDATE broadcasts SET ${column} = ${column} + 1 WHERE id = $1 AND project_id = $2`, [
    broadcastId,
    projectId,
  ])
  return result.rowCount > 0
}

export interface NewBeaconEvent {
  id: string
  project_id: string
  broadcast_id: string
  type: BeaconEventType
}

/** Click and dismiss events carry no subscriber identity (api.md 4.10 rule 3, §6): both columns are NULL. */
export async function insertBeaconEvent(q: Queryable, event: NewBeaconEvent): Promise<void> {
  await q.query(
    `INSERT INTO events (id, project_id, broadcast_id, subscriber_id, external_id, type, meta)
     VALUES ($1, $2, $3, NULL, NULL, $4, NULL)`,
    [event.id, event.project_id, event.broadcast_id, event.type],
  )
}
