// Reading and canceling broadcasts (decisions.md §3).
import type { Queryable } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { isId } from '../platform/ids.ts'
import type { BroadcastView, ListBroadcastsQuery } from './broadcasts.schemas.ts'
import { cancelScheduledBroadcast, findBroadcast, listBroadcasts, type BroadcastRow } from './broadcasts.store.ts'

const DEFAULT_PAGE_SIZE = 50

function ms(date: Date | null): number | null {
  return date ? date.getTime() : null
}

export function toBroadcastView(row: BroadcastRow): BroadcastView {
  return {
    id: row.id,
    status: row.status,
    source: row.source,
    target: row.target,
    notification: { title: row.title, body: row.body, icon: row.icon, image: row.image, url: row.url },
    ttl: row.ttl,
    urgency: row.urgency,
    topic: row.topic,
    audience: row.audience,
    delivered: row.delivered,
    failed: row.failed,
    clicked: row.clicked,
    dismissed: row.dismissed,
    failure_reason: row.failure_reason,
    scheduled_at: ms(row.scheduled_at),
    started_at: ms(row.started_at),
    finished_at: ms(row.finished_at),
    created_at: row.created_at.getTime(),
  }
}

function notFound(id: string): AppError {
  return new AppError('broadcast_not_found', `No broadcast ${id} in this project.`)
}

export async function getBroadcast(q: Queryable, projectId: string, id: string): Promise<BroadcastView> {
  const row = isId('bdc', id) ? await findBroadcast(q, projectId, id) : null
  if (!row) throw notFound(id)
  return toBroadcastView(row)
}

export async function listBroadcastViews(
  q: Queryable,
  projectId: string,
  query: ListBroadcastsQuery,
): Promise<{ broadcasts: BroadcastView[]; next_cursor: string | null }> {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE
  // One row more than asked tells whether another page exists, so the last
  // page says next_cursor null instead of leading to an empty page.
  const rows = await listBroadcasts(q, projectId, { limit: limit + 1, cursor: query.cursor, status: query.status })
  const page = rows.slice(0, limit)
  return {
    broadcasts: page.map(toBroadcastView),
    next_cursor: rows.length > limit ? page[page.length - 1].id : null,
  }
}

export async function cancelBroadcast(q: Queryable, projectId: string, id: string): Promise<void> {
  if (!isId('bdc', id)) throw notFound(id)
  if (await cancelScheduledBroadcast(q, projectId, id)) return
  const row = await findBroadcast(q, projectId, id)
  if (!row) throw notFound(id)
  throw new AppError('broadcast_not_cancelable', `Broadcast ${id} is ${row.status}; only a scheduled broadcast can be canceled.`)
}
