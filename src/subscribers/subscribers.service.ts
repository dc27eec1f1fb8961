// The /v1/subscribers resource (decisions.md §3): read and erase.
import type { Database } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { isId } from '../platform/ids.ts'
import { PAGE_LIMIT_DEFAULT, type ListSubscribersQuery, type Subscriber } from './subscribers.schemas.ts'
import * as store from './subscribers.store.ts'
import { readPage } from '../platform/paging.ts'

function toSubscriber(row: store.SubscriberWithGroups): Subscriber {
  return {
    id: row.id,
    endpoint: row.endpoint,
    external_id: row.external_id,
    status: row.status,
    push_service: row.push_service,
    group_ids: row.group_ids,
    created_at: row.created_at.getTime(),
    last_seen_at: row.last_seen_at.getTime(),
  }
}

function notFound(id: string): AppError {
  return new AppError('subscriber_not_found', `No subscriber ${id} in this project.`)
}

export async function listSubscribers(
  db: Database,
  projectId: string,
  query: ListSubscribersQuery,
): Promise<{ subscribers: Subscriber[]; next_cursor: string | null }> {
  const limit = query.limit ?? PAGE_LIMIT_DEFAULT
  const { rows, next_cursor } = await readPage(limit, (n) =>
    store.listSubscribers(db, projectId, {
      status: query.status,
      externalId: query.external_id,
      groupId: query.group_id,
      before: query.cursor,
      limit: n,
    }),
  )
  return { subscribers: rows.map(toSubscriber), next_cursor }
}

export async function getSubscriber(db: Database, projectId: string, id: string): Promise<Subscriber> {
  const row = isId('sub', id) ? await store.findSubscriber(db, projectId, id) : null
  if (!row) throw notFound(id)
  return toSubscriber(row)
}

export async function eraseById(db: Database, projectId: string, id: string): Promise<number> {
  const deleted = isId('sub', id) ? await store.deleteById(db, projectId, id) : 0
  if (deleted === 0) throw notFound(id)
  return deleted
}
