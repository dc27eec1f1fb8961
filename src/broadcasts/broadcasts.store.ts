// SQL for broadcasts.
import type { Queryable } from '../platform/db/database.ts'
import type { Target } from './broadcasts.schemas.ts'

export type BroadcastStatus = 'scheduled' | 'pending' | 'sending' | 'sent' | 'failed' | 'canceled'

export interface BroadcastRow {
  id: string
  project_id: string
  status: BroadcastStatus
  source: 'api' | 'dashboard'
  target: Target
  title: string
  body: string
  icon: string | null
  image: string | null
  url: string
  ttl: number
  urgency: string
  topic: string | null
  audience: number
  reserved: number
  delivered: number
  failed: number
  clicked: number
  dismissed: number
  failure_reason: string | null
  scheduled_at: Date | null
  started_at: Date | null
  finished_at: Date | null
  created_at: Date
}

export type NewBroadcast = Pick<
  BroadcastRow,
  | 'id' | 'project_id' | 'status' | 'source' | 'target' | 'title' | 'body' | 'icon' | 'image' | 'url'
  | 'ttl' | 'urgency' | 'topic' | 'audience' | 'reserved' | 'scheduled_at'
>

const COLUMNS = `id, project_id, status, source, target, title, body, icon, image, url, ttl, urgency, topic,
  audience, reserved, delivered, failed, clicked, dismissed, failure_reason,
  scheduled_at, started_at, finished_at, created_at`

export async function insertBroadcast(q: Queryable, row: NewBroadcast): Promise<void> {
  await q.query(
    `INSERT INTO broadcasts (id, project_id, status, source, target, title, body, icon, image, url, ttl, urgency, topic,
                             audience, reserved, scheduled_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
    [
      row.id, row.project_id, row.status, row.source, JSON.stringify(row.target), row.title, row.body, row.icon,
      row.image, row.url, row.ttl, row.urgency, row.topic, row.audience, row.reserved, row.scheduled_at,
    ],
  )
}

export async function findBroadcast(q: Queryable, projectId: string, id: string): Promise<BroadcastRow | null> {
  const result = await q.query<BroadcastRow>(`SELECT ${COLUMNS} FROM broadcasts WHERE project_id = $1 AND id = $2`, [projectId, id])
  return result.rows[0] ?? null
}

export interface ListOptions {
  limit: number
  /** Return broadcasts older than this id (the previous page's last id). */
  cursor?: string
  status?: BroadcastStatus
}

/** Newest first, keyset-paginated on id (ids are time-ordered). */
export async function listBroadcasts(q: Queryable, projectId: string, options: ListOptions): Promise<BroadcastRow[]> {
  const result = await q.query<BroadcastRow>(
    `SELECT ${COLUMNS} FROM broadcasts
      WHERE project_id = $1
        AND ($2::text IS NULL OR id < $2)
        AND ($3::text IS NULL OR status = $3)
      ORDER BY id DESC
      LIMIT $4`,
    [projectId, options.cursor ?? null, options.status ?? null, options.limit],
  )
  return result.rows
}

/**
 * scheduled → canceled in one statement, so a broadcast the scheduler is
 * firing at the same moment is either canceled or fired, never both.
 * True when it was canceled.
 */
export async function cancelScheduledBroadcast(q: Queryable, projectId: string, id: string): Promise<boolean> {
  const result = await q.query(
    `UPDATE broadcasts SET status = 'canceled'
      WHERE project_id = $1 AND id = $2 AND status = 'scheduled'
      RETURNING id`,
    [projectId, id],
  )
  return result.rowCount > 0
}
