// The /v1/subscribers resource (decisions.md §3): read and erase.
import type { Database } from '../platform/db/database.ts'
import { AppError, invalidField } from '../platform/errors.ts'
import { isId } from '../platform/ids.ts'
import { PAGE_LIMIT_DEFAULT, TAGS_MAX, type ListSubscribersQuery, type Subscriber, type TagsPatchBody } from './subscribers.schemas.ts'
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
    tags: row.tags,
    created_at: row.created_at.getTime(),
    last_seen_at: row.last_seen_at.getTime(),
  }
}

/** "key:value" (the value may hold colons) or a bare "key"; the schema checked the form. */
function parseTagFilter(text: string): { key: string; value?: string } {
  const colon = text.indexOf(':')
  return colon < 0 ? { key: text } : { key: text.slice(0, colon), value: text.slice(colon + 1) }
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
      externalIdContains: query.external_id_contains,
      tag: query.tag === undefined ? undefined : parseTagFilter(query.tag),
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

/** 400 on `tags` when a merge would leave a subscriber with more keys than the cap. */
export function tooManyTags(count: number): AppError {
  return invalidField('tags', `would leave the subscriber with ${count} tags; at most ${TAGS_MAX} are allowed`)
}

function checkTagCounts(rows: Array<{ tag_count: number }>): void {
  const most = Math.max(0, ...rows.map((row) => row.tag_count))
  if (most > TAGS_MAX) throw tooManyTags(most)
}

/** PATCH /v1/subscribers/:sid: replaces or merges its tags, answers the updated record. */
export async function patchTags(db: Database, projectId: string, id: string, body: TagsPatchBody): Promise<Subscriber> {
  if (!isId('sub', id)) throw notFound(id)
  const row = await db.transaction(async (tx) => {
    const changed = await store.setTags(tx, projectId, { id }, body.tags, body.merge ?? false)
    if (changed.length === 0) throw notFound(id)
    checkTagCounts(changed)
    return store.findSubscriber(tx, projectId, id)
  })
  return toSubscriber(row!)
}

/**
 * PATCH /v1/subscribers/by-external-id/:external_id: the same for every device
 * of the user, all or none (one over the cap refuses the lot). 404 when the
 * project has no subscriber with that external_id, so a typo is not a silent 200.
 */
export async function patchTagsByExternalId(db: Database, projectId: string, externalId: string, body: TagsPatchBody): Promise<number> {
  return db.transaction(async (tx) => {
    const changed = await store.setTags(tx, projectId, { externalId }, body.tags, body.merge ?? false)
    if (changed.length === 0) throw new AppError('subscriber_not_found', `No subscriber with external_id ${externalId} in this project.`)
    checkTagCounts(changed)
    return changed.length
  })
}
