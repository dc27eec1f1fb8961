// SQL for webhook endpoints.
import type { Queryable } from '../platform/db/database.ts'
import type { WebhookEventType } from './webhooks.schemas.ts'

export interface WebhookRow {
  id: string
  project_id: string
  url: string
  events: WebhookEventType[]
  /** The signing secret, kept in clear: Herald needs it to sign every delivery. */
  secret: string
  status: 'active' | 'disabled'
  disabled_at: Date | null
  created_at: Date
}

const COLUMNS = 'id, project_id, url, events, secret, status, disabled_at, created_at'

export async function insertWebhook(
  q: Queryable,
  row: Pick<WebhookRow, 'id' | 'project_id' | 'url' | 'events' | 'secret'>,
): Promise<WebhookRow> {
  const result = await q.query<WebhookRow>(
    `INSERT INTO webhooks (id, project_id, url, events, secret) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [row.id, row.project_id, row.url, row.events, row.secret],
  )
  return result.rows[0]
}

export async function countWebhooks(q: Queryable, projectId: string): Promise<number> {
  const result = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM webhooks WHERE project_id = $1', [projectId])
  return result.rows[0].n
}

/** A page of the project's webhooks, newest first, after the cursor (an id). */
export async function listWebhooksPage(q: Queryable, projectId: string, limit: number, cursor: string | null): Promise<WebhookRow[]> {
  const result = await q.query<WebhookRow>(
    `SELECT ${COLUMNS} FROM webhooks
      WHERE project_id = $1 AND ($3::text IS NULL OR id < $3)
      ORDER BY id DESC LIMIT $2`,
    [projectId, limit, cursor],
  )
  return result.rows
}

/** Deletes the project's webhook; false when the project has none with that id. */
export async function deleteWebhook(q: Queryable, projectId: string, id: string): Promise<boolean> {
  const result = await q.query('DELETE FROM webhooks WHERE id = $1 AND project_id = $2', [id, projectId])
  return result.rowCount > 0
}
