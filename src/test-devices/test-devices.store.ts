// SQL of members' test devices (issue 25, migration 0034): a subscribers row
// with status 'test' (written by subscribers.store.ts, the table's one writer)
// and its member_test_devices link, which this module alone writes.
import type { Queryable } from '../platform/db/database.ts'
import type { PushService } from '../subscribers/subscribers.schemas.ts'
import { upsertTestSubscription } from '../subscribers/subscribers.store.ts'

export interface TestDeviceRow {
  id: string
  label: string
  push_service: PushService
  created_at: Date
  last_delivered_at: Date | null
  consecutive_failures: number
}

/**
 * The subscription as a test device: inserted with status 'test', or, when
 * this endpoint is already one of the project's test devices, refreshed (its
 * keys) and handed to this member: the browser holding the subscription is
 * the member's now (one browser shared by two members of a team). Null when
 * the endpoint is a real subscriber of the project, which stays untouched.
 */
export async function upsertTestDevice(
  q: Queryable,
  row: { id: string; projectId: string; userId: string; endpoint: string; p256dh: string; auth: string; label: string },
): Promise<string | null> {
  const id = await upsertTestSubscription(q, row)
  if (!id) return null
  await q.query(
    `INSERT INTO member_test_devices (subscriber_id, project_id, user_id, label) VALUES ($1, $2, $3, $4)
     ON CONFLICT (subscriber_id) DO UPDATE SET user_id = EXCLUDED.user_id, label = EXCLUDED.label`,
    [id, row.projectId, row.userId, row.label],
  )
  return id
}

/** The member's test devices in the project, newest first. */
export async function listTestDevices(q: Queryable, projectId: string, userId: string): Promise<TestDeviceRow[]> {
  const result = await q.query<TestDeviceRow>(
    `SELECT s.id, d.label, s.push_service, d.created_at, h.last_delivered_at, COALESCE(h.consecutive_failures, 0) AS consecutive_failures
       FROM member_test_devices d
       JOIN subscribers s ON s.id = d.subscriber_id
       LEFT JOIN subscriber_health h ON h.subscriber_id = s.id
      WHERE d.project_id = $1 AND d.user_id = $2
      ORDER BY d.created_at DESC, s.id DESC`,
    [projectId, userId],
  )
  return result.rows
}

/** Removes one of the member's test devices (the trigger of 0034 deletes its subscription); 0 when it is not theirs. */
export async function deleteTestDevice(q: Queryable, projectId: string, userId: string, id: string): Promise<number> {
  return (await q.query('DELETE FROM member_test_devices WHERE subscriber_id = $1 AND project_id = $2 AND user_id = $3', [id, projectId, userId])).rowCount
}
