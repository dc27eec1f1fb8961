// The /v1/subscribers resource (decisions.md §3): read and erase.
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError, invalidField } from '../platform/errors.ts'
import { isId } from '../platform/ids.ts'
import { PAGE_LIMIT_DEFAULT, TAGS_MAX, type ListSubscribersQuery, type Subscriber, type SubscriberFilterQuery, type TagsPatchBody } from './subscribers.schemas.ts'
import * as store from './subscribers.store.ts'
import { readPage } from '../platform/paging.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit, type AuditEntry } from '../audit/audit.store.ts'
import { maskEndpoint } from '../access/masking.ts'
import { healthOf } from './health.store.ts'
import { canonicalLocale } from '../templates/locale.ts'
import { canonicalZone } from '../broadcasts/local-time.ts'
import { originalVapidKeyId } from '../projects/vapid-keys.store.ts'

/** Whether the caller may see push endpoints whole (access.ts SEES_PUSH_ENDPOINTS); masked otherwise. */
export interface SubscriberView { endpoints: boolean }

function toSubscriber(row: store.SubscriberWithGroups, view: SubscriberView): Subscriber {
  return {
    id: row.id,
    endpoint: view.endpoints ? row.endpoint : maskEndpoint(row.endpoint),
    external_id: row.external_id,
    status: row.status,
    push_service: row.push_service,
    group_ids: row.group_ids,
    tags: row.tags,
    locale: row.locale,
    created_at: row.created_at.getTime(),
    last_seen_at: row.last_seen_at.getTime(),
    source: row.source,
    last_delivered_at: row.last_delivered_at?.getTime() ?? null,
    last_clicked_at: row.last_clicked_at?.getTime() ?? null,
    consecutive_failures: row.consecutive_failures,
    health: healthOf(row),
    timezone: row.timezone,
    vapid_key_id: row.vapid_key_id ?? originalVapidKeyId(row.project_id),
  }
}

/** "key:value" (the value may hold colons) or a bare "key"; the schema checked the form. */
function parseTagFilter(text: string): { key: string; value?: string } {
  const colon = text.indexOf(':')
  return colon < 0 ? { key: text } : { key: text.slice(0, colon), value: text.slice(colon + 1) }
}

const toDate = (ms: number | undefined): Date | undefined => (ms === undefined ? undefined : new Date(ms))

function notFound(id: string): AppError {
  return new AppError('subscriber_not_found', `No subscriber ${id} in this project.`)
}

export async function listSubscribers(
  db: Database,
  projectId: string,
  query: ListSubscribersQuery,
  view: SubscriberView,
): Promise<{ subscribers: Subscriber[]; next_cursor: string | null }> {
  const limit = query.limit ?? PAGE_LIMIT_DEFAULT
  const conditions = subscriberConditions(query)
  const { rows, next_cursor } = await readPage(limit, (n) => store.listSubscribers(db, projectId, { ...conditions, before: query.cursor, limit: n }))
  return { subscribers: rows.map((row) => toSubscriber(row, view)), next_cursor }
}

/** The filters of GET /v1/subscribers (and of its export, issue 25) as the store takes them. */
export function subscriberConditions(query: SubscriberFilterQuery): store.SubscriberConditions {
  return {
    status: query.status,
    source: query.source,
    externalId: query.external_id,
    externalIdContains: query.external_id_contains,
    tag: query.tag === undefined ? undefined : parseTagFilter(query.tag),
    groupId: query.group_id,
    health: query.health,
    deliveredBefore: toDate(query.delivered_before),
    deliveredAfter: toDate(query.delivered_after),
    clickedBefore: toDate(query.clicked_before),
    clickedAfter: toDate(query.clicked_after),
    minConsecutiveFailures: query.min_consecutive_failures,
  }
}

export async function getSubscriber(db: Database, projectId: string, id: string, view: SubscriberView): Promise<Subscriber> {
  const row = isId('sub', id) ? await store.findSubscriber(db, projectId, id) : null
  if (!row) throw notFound(id)
  return toSubscriber(row, view)
}

// Erasures are recorded with what was erased: the subscriber's id, or the
// external_id whose devices went (kept as the proof of the erasure, pruned
// with the log). An endpoint is never copied into the log, and an id that
// matched nothing in the project is not echoed into it (target null).

export async function eraseById(db: Database, audit: AuditContext, projectId: string, id: string): Promise<number> {
  if (!isId('sub', id)) throw notFound(id)
  return db.transaction(async (tx) => {
    const deleted = await store.deleteById(tx, projectId, id)
    if (deleted === 0) throw notFound(id)
    await recordAudit(tx, { projectId, context: audit, action: 'subscriber.erase', target: { type: 'subscriber', id }, details: { by: 'id', count: deleted } })
    return deleted
  })
}

export async function eraseByEndpoint(db: Database, audit: AuditContext, projectId: string, endpoint: string): Promise<number> {
  return db.transaction(async (tx) => {
    const ids = await store.deleteByEndpoint(tx, projectId, endpoint)
    await recordAudit(tx, { projectId, context: audit, action: 'subscriber.erase', target: { type: 'subscriber', id: ids[0] ?? null }, details: { by: 'endpoint', count: ids.length } })
    return ids.length
  })
}

export async function eraseByExternalId(db: Database, audit: AuditContext, projectId: string, externalId: string): Promise<number> {
  return db.transaction(async (tx) => {
    const deleted = await store.deleteByExternalId(tx, projectId, externalId)
    await recordAudit(tx, { projectId, context: audit, action: 'subscriber.erase', target: { type: 'external_id', id: deleted > 0 ? externalId : null }, details: { by: 'external_id', count: deleted } })
    return deleted
  })
}

/** The tag keys a PATCH set, never their values (which may be personal: a plan, a city), nor the zone itself (where someone lives). */
function tagsEntry(projectId: string, audit: AuditContext, target: AuditEntry['target'], body: TagsPatchBody, count: number): AuditEntry {
  return {
    projectId,
    context: audit,
    action: 'subscriber.tags',
    target,
    details: {
      keys: Object.keys(body.tags ?? {}).slice(0, 50),
      merge: body.merge ?? false,
      count,
      ...(body.locale !== undefined ? { locale: body.locale } : {}),
      ...(body.timezone !== undefined ? { timezone: body.timezone === null ? 'cleared' : 'set' } : {}),
    },
  }
}

/**
 * The locale a body gives, canonical: undefined when it gives none (kept),
 * null to clear. 400 naming the field when it is not a BCP 47 tag.
 */
export function bodyLocale(locale: string | null | undefined): string | null | undefined {
  if (locale === undefined || locale === null) return locale
  const canonical = canonicalLocale(locale)
  if (!canonical) throw invalidField('locale', 'is not a BCP 47 language tag (e.g. fr, pt-BR, zh-Hant)')
  return canonical
}

/** The PATCH's timezone, canonical (400 naming the field when it is no IANA zone); undefined when not given. */
export function checkTimezone(timezone: string | null | undefined, path = 'timezone'): string | null | undefined {
  if (timezone === undefined || timezone === null) return timezone
  const zone = canonicalZone(timezone)
  if (!zone) throw invalidField(path, `"${timezone.slice(0, 64)}" is not an IANA time zone name (such as Europe/Paris or America/New_York)`)
  return zone
}

/** Sets what a PATCH gives (tags, locale, timezone) on the subscribers owner names; the ids changed. */
async function applyPatch(tx: Queryable, projectId: string, owner: store.TagsOwner, body: TagsPatchBody): Promise<string[]> {
  if (body.tags === undefined && body.locale === undefined && body.timezone === undefined) throw invalidField('tags', 'give tags, locale, timezone or several')
  const locale = bodyLocale(body.locale)
  const timezone = checkTimezone(body.timezone)
  let ids: string[] = []
  if (body.tags !== undefined || locale !== undefined) {
    const changed = await store.setTags(tx, projectId, owner, body.tags, body.merge ?? false, locale)
    checkTagCounts(changed)
    ids = changed.map((row) => row.id)
  }
  if (timezone !== undefined) ids = await store.setTimezone(tx, projectId, owner, timezone)
  return ids
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
export async function patchTags(db: Database, audit: AuditContext, projectId: string, id: string, body: TagsPatchBody, view: SubscriberView): Promise<Subscriber> {
  if (!isId('sub', id)) throw notFound(id)
  const row = await db.transaction(async (tx) => {
    const changed = await applyPatch(tx, projectId, { id }, body)
    if (changed.length === 0) throw notFound(id)
    await recordAudit(tx, tagsEntry(projectId, audit, { type: 'subscriber', id }, body, 1))
    return store.findSubscriber(tx, projectId, id)
  })
  return toSubscriber(row!, view)
}

/**
 * PATCH /v1/subscribers/by-external-id/:external_id: the same for every device
 * of the user, all or none (one over the cap refuses the lot). 404 when the
 * project has no subscriber with that external_id, so a typo is not a silent 200.
 */
export async function patchTagsByExternalId(db: Database, audit: AuditContext, projectId: string, externalId: string, body: TagsPatchBody): Promise<number> {
  return db.transaction(async (tx) => {
    const changed = await applyPatch(tx, projectId, { externalId }, body)
    if (changed.length === 0) throw new AppError('subscriber_not_found', `No subscriber with external_id ${externalId} in this project.`)
    await recordAudit(tx, tagsEntry(projectId, audit, { type: 'external_id', id: externalId }, body, changed.length))
    return changed.length
  })
}
