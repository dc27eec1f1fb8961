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
  /** Why it is disabled, in words for its owner; null while active. */
  disabled_reason: string | null
  created_at: Date
}

const COLUMNS = 'id, project_id, url, events, secret, status, disabled_at, disabled_reason, created_at'

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

/** The project's webhook, or null; `forUpdate` locks its row for the caller's transaction. */
export async function findWebhook(q: Queryable, projectId: string, id: string, forUpdate = false): Promise<WebhookRow | null> {
  const result = await q.query<WebhookRow>(
    `SELECT ${COLUMNS} FROM webhooks WHERE id = $1 AND project_id = $2${forUpdate ? ' FOR UPDATE' : ''}`,
    [id, projectId],
  )
  return result.rows[0] ?? null
}

/**
 * Changes what PATCH changes. A new URL is a new endpoint as far as failing
 * goes: its failing run starts over. `enabled` moves the status: disabling
 * records when and why, enabling clears both and the failing run (else the
 * first failure after a long outage would disable it again at once).
 */
export async function updateWebhook(
  q: Queryable,
  id: string,
  change: { url?: string; events?: WebhookEventType[]; enabled?: boolean; disabledReason: string },
): Promise<WebhookRow> {
  const result = await q.query<WebhookRow>(
    `UPDATE webhooks SET
        url = COALESCE($2::text, url),
        events = COALESCE($3::text[], events),
        failing_since = CASE WHEN ($2::text IS NOT NULL AND $2::text <> url) OR ($4::boolean IS TRUE AND status = 'disabled') THEN NULL ELSE failing_since END,
        status = CASE WHEN $4::boolean IS NULL THEN status WHEN $4::boolean THEN 'active' ELSE 'disabled' END,
        disabled_at = CASE WHEN $4::boolean IS NULL THEN disabled_at WHEN $4::boolean THEN NULL WHEN status = 'active' THEN now() ELSE disabled_at END,
        disabled_reason = CASE WHEN $4::boolean IS NULL THEN disabled_reason WHEN $4::boolean THEN NULL WHEN status = 'active' THEN $5::text ELSE disabled_reason END
      WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, change.url ?? null, change.events ?? null, change.enabled ?? null, change.disabledReason],
  )
  return result.rows[0]
}

/**
 * Replaces the secret: the current one becomes the previous one, honoured
 * for keepMs more (stored like the current one, in clear, since Herald signs
 * with it). A previous secret still honoured from an earlier rotation is
 * dropped. Returns the new expiry, or null when the project has no such webhook.
 */
export async function rotateWebhookSecret(q: Queryable, projectId: string, id: string, secret: string, keepMs: number): Promise<Date | null> {
  const result = await q.query<{ previous_secret_expires_at: Date }>(
    `UPDATE webhooks SET previous_secret = secret, previous_secret_expires_at = now() + $4 * interval '1 millisecond', secret = $3
      WHERE id = $1 AND project_id = $2 RETURNING previous_secret_expires_at`,
    [id, projectId, secret, keepMs],
  )
  return result.rows[0]?.previous_secret_expires_at ?? null
}

/** The secrets a request to the endpoint is signed with now: the current one, and the previous one while honoured. */
export async function signingSecrets(q: Queryable, id: string): Promise<{ secret: string; previous_secret: string | null }> {
  const result = await q.query<{ secret: string; previous_secret: string | null }>(
    `SELECT secret, CASE WHEN previous_secret_expires_at > now() THEN previous_secret END AS previous_secret FROM webhooks WHERE id = $1`,
    [id],
  )
  return result.rows[0]
}

/**
 * The event types the project's active webhook endpoints subscribe to, all
 * endpoints together (empty: none). Fan-out asks once per batch: a delivered
 * event is written only when an endpoint will carry it (docs/decisions.md, "Events").
 */
export async function activeWebhookEventTypes(q: Queryable, projectId: string): Promise<Set<string>> {
  const result = await q.query<{ type: string }>(
    "SELECT DISTINCT unnest(events) AS type FROM webhooks WHERE project_id = $1 AND status = 'active'",
    [projectId],
  )
  return new Set(result.rows.map((row) => row.type))
}
