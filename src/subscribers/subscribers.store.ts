// SQL for subscribers. Every query names the project: a subscriber of
// another project is simply not found.
import type { Queryable } from '../platform/db/database.ts'
import type { PushService, SubscriberHealth, SubscriberSource, SubscriberStatus, Tags } from './subscribers.schemas.ts'
import { dormantCutoff, healthCondition } from './health.store.ts'

export interface SubscriberRow {
  id: string
  project_id: string
  endpoint: string
  p256dh: string
  auth: string
  external_id: string | null
  status: SubscriberStatus
  push_service: PushService
  tags: Tags
  /** Canonical BCP 47 (migration 0028); null when unknown. */
  locale: string | null
  created_at: Date
  last_seen_at: Date
  source: SubscriberSource
  /** Health (migration 0025, subscriber_health): the last push a push service accepted, the last click recorded, failed pushes since. */
  last_delivered_at: Date | null
  last_clicked_at: Date | null
  consecutive_failures: number
  /** IANA zone (migration 0029); null: the project's default_timezone applies. */
  timezone: string | null
  /** The VAPID pair it was made with (migration 0024); null: the project's original pair. */
  vapid_key_id: string | null
}

export type SubscriberWithGroups = SubscriberRow & { group_ids: string[] }

const COLUMNS = `s.id, s.project_id, s.endpoint, s.p256dh, s.auth, s.external_id, s.status, s.push_service, s.tags, s.locale, s.created_at, s.last_seen_at, s.source,
  s.timezone, s.vapid_key_id, h.last_delivered_at, h.last_clicked_at, COALESCE(h.consecutive_failures, 0) AS consecutive_failures`
/** The subscriber (s) with its health row (h, migration 0025), which it may not have yet. */
const FROM = 'subscribers s LEFT JOIN subscriber_health h ON h.subscriber_id = s.id'
const GROUP_IDS = `COALESCE((SELECT array_agg(m.group_id ORDER BY m.group_id) FROM group_members m WHERE m.subscriber_id = s.id), '{}') AS group_ids`

/**
 * The status of the project's subscriber with this endpoint, null when there
 * is none. The row, if any, stays locked until the transaction ends, so no
 * one else changes its status between this read and the upsert; FOR NO KEY
 * UPDATE still lets group memberships point at it meanwhile.
 */
export async function lockStatusByEndpoint(q: Queryable, projectId: string, endpoint: string): Promise<SubscriberStatus | null> {
  const result = await q.query<{ status: SubscriberStatus }>(
    'SELECT status FROM subscribers WHERE project_id = $1 AND endpoint = $2 FOR NO KEY UPDATE',
    [projectId, endpoint],
  )
  return result.rows[0]?.status ?? null
}

/**
 * The project's active subscribers, from the counter that migration 0003's
 * triggers keep exact. The counter row stays locked until the transaction
 * ends: concurrent cap checks of one project wait for each other, and the
 * value read is the latest committed one. Locked after the subscriber row
 * (lockStatusByEndpoint), the order in which the triggers take them too.
 */
export async function lockActiveCount(q: Queryable, projectId: string): Promise<number> {
  const result = await q.query<{ active_subscribers: number }>(
    'SELECT active_subscribers FROM project_counters WHERE project_id = $1 FOR NO KEY UPDATE',
    [projectId],
  )
  const row = result.rows[0]
  // Every project gets its row when it is created (0003's projects trigger).
  if (!row) throw new Error(`project ${projectId} has no counter row`)
  return row.active_subscribers
}

export interface UpsertSubscriber {
  id: string
  project_id: string
  endpoint: string
  p256dh: string
  auth: string
  /** undefined keeps the stored external_id on a repeat; null clears it. */
  external_id: string | null | undefined
  /** Set on a new row; merged into the stored tags on a repeat (undefined keeps them). */
  tags: Tags | undefined
  /** Recorded on a new row only (a known endpoint keeps how it first arrived); default 'subscribe'. */
  source?: 'subscribe' | 'migrated'
  /** Canonical BCP 47; undefined keeps the stored one on a repeat, null clears it. */
  locale?: string | null
  /** IANA zone, canonical; undefined keeps the stored one on a repeat, null clears it. */
  timezone?: string | null
  /** The VAPID pair the browser subscribed with, checked; undefined: the project's current pair, read in the statement itself. */
  vapid_key_id?: string
}

/** How many keys a tags column holds, in RETURNING (where `tags` is the new value). */
const TAG_COUNT = '(SELECT count(*)::int FROM jsonb_object_keys(tags))'

/**
 * Inserts the subscription, or, when the project already has that endpoint,
 * refreshes it: new keys, last_seen_at now, status active again (keeping its
 * id). One statement, so concurrent identical subscribes make one row.
 */
export async function upsertSubscriber(q: Queryable, row: UpsertSubscriber): Promise<{ id: string; tagCount: number }> {
  const result = await q.query<{ id: string; tag_count: number }>(
    `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, external_id, tags, source, locale, timezone, vapid_key_id)
     VALUES ($1, $2, $3, $4, $5, $6, COALESCE($8::jsonb, '{}'::jsonb), $9, $10, $12, COALESCE($14::text, (SELECT p.vapid_key_id FROM projects p WHERE p.id = $2)))
     ON CONFLICT (project_id, endpoint) DO UPDATE SET
       p256dh = EXCLUDED.p256dh,
       auth = EXCLUDED.auth,
       -- A repeat that names no key keeps the stored one: an endpoint's key cannot change, so only a browser that says it subscribed again with another key moves.
       vapid_key_id = CASE WHEN $14::text IS NULL THEN subscribers.vapid_key_id ELSE EXCLUDED.vapid_key_id END,
       external_id = CASE WHEN $7::boolean THEN EXCLUDED.external_id ELSE subscribers.external_id END,
       tags = subscribers.tags || COALESCE($8::jsonb, '{}'::jsonb),
       locale = CASE WHEN $11::boolean THEN EXCLUDED.locale ELSE subscribers.locale END,
       timezone = CASE WHEN $13::boolean THEN EXCLUDED.timezone ELSE subscribers.timezone END,
       -- A member's test device (status 'test', test-devices/) stays one: a subscribe naming its endpoint never makes it a subscriber.
       status = CASE WHEN subscribers.status = 'test' THEN 'test' ELSE 'active' END,
       last_seen_at = now()
     RETURNING id, ${TAG_COUNT} AS tag_count`,
    [
      row.id, row.project_id, row.endpoint, row.p256dh, row.auth, row.external_id ?? null, row.external_id !== undefined,
      row.tags === undefined ? null : JSON.stringify(row.tags), row.source ?? 'subscribe', row.locale ?? null, row.locale !== undefined,
      row.timezone ?? null, row.timezone !== undefined,
      row.vapid_key_id ?? null,
    ],
  )
  return { id: result.rows[0].id, tagCount: result.rows[0].tag_count }
}

/**
 * A member's test device (issue 25, test-devices/): a subscription of the
 * project with the status 'test', which no audience, count, list or export
 * has. Inserted, or, when this endpoint already is one, its keys refreshed.
 * Null when the endpoint is a real subscriber of the project (left untouched).
 */
export async function upsertTestSubscription(
  q: Queryable,
  row: { id: string; projectId: string; endpoint: string; p256dh: string; auth: string },
): Promise<string | null> {
  const result = await q.query<{ id: string }>(
    `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, status, vapid_key_id)
     VALUES ($1, $2, $3, $4, $5, 'test', (SELECT p.vapid_key_id FROM projects p WHERE p.id = $2))
     ON CONFLICT (project_id, endpoint) DO UPDATE SET p256dh = EXCLUDED.p256dh, auth = EXCLUDED.auth, last_seen_at = now(),
       vapid_key_id = EXCLUDED.vapid_key_id
       WHERE subscribers.status = 'test'
     RETURNING id`,
    [row.id, row.projectId, row.endpoint, row.p256dh, row.auth],
  )
  return result.rows[0]?.id ?? null
}

/** Sets the time zone (null: none) of the project's subscribers `owner` names; their ids. */
export async function setTimezone(q: Queryable, projectId: string, owner: TagsOwner, timezone: string | null): Promise<string[]> {
  const result = await q.query<{ id: string }>(
    `UPDATE subscribers SET timezone = $3 WHERE project_id = $1 AND ${'id' in owner ? 'id' : 'external_id'} = $2 RETURNING id`,
    [projectId, 'id' in owner ? owner.id : owner.externalId, timezone],
  )
  return result.rows.map((r) => r.id)
}

/** Whose tags setTags changes: one subscriber, or every device of one user (whatever their status). */
export type TagsOwner = { id: string } | { externalId: string }

/**
 * Replaces or merges the tags of the project's subscribers `owner` names;
 * null values remove a key (jsonb_strip_nulls: stored tags are flat and never
 * hold null). Rows are locked in id order first, the order fan-out's
 * expiries lock them in, so a user's many devices cannot deadlock with it.
 * Returns each row changed with how many keys it now holds; the caller
 * refuses (and rolls back) past the cap.
 */
export async function setTags(
  q: Queryable,
  projectId: string,
  owner: TagsOwner,
  tags: Record<string, unknown> | undefined,
  merge: boolean,
  /** Canonical BCP 47 (issue 24); undefined keeps it, null clears it. */
  locale?: string | null,
): Promise<Array<{ id: string; tag_count: number }>> {
  const match = 'id' in owner ? 'id = $2' : 'external_id = $2'
  const result = await q.query<{ id: string; tag_count: number }>(
    `UPDATE subscribers SET tags = CASE WHEN $3::jsonb IS NULL THEN tags ELSE jsonb_strip_nulls(CASE WHEN $4::boolean THEN tags || $3::jsonb ELSE $3::jsonb END) END,
        locale = CASE WHEN $6::boolean THEN $5::text ELSE locale END
      WHERE id IN (SELECT id FROM subscribers WHERE project_id = $1 AND ${match} ORDER BY id FOR NO KEY UPDATE)
      RETURNING id, ${TAG_COUNT} AS tag_count`,
    [projectId, 'id' in owner ? owner.id : owner.externalId, tags === undefined ? null : JSON.stringify(tags), merge, locale ?? null, locale !== undefined],
  )
  return result.rows
}

/** Soft unsubscribe: an active row becomes unsubscribed; anything else is left as it is. */
export async function markUnsubscribed(q: Queryable, projectId: string, endpoint: string): Promise<void> {
  await q.query(
    `UPDATE subscribers SET status = 'unsubscribed' WHERE project_id = $1 AND endpoint = $2 AND status = 'active'`,
    [projectId, endpoint],
  )
}

export async function findSubscriber(q: Queryable, projectId: string, id: string): Promise<SubscriberWithGroups | null> {
  const result = await q.query<SubscriberWithGroups>(
    `SELECT ${COLUMNS}, ${GROUP_IDS} FROM ${FROM} WHERE s.id = $1 AND s.project_id = $2 AND s.status <> 'test'`,
    [id, projectId],
  )
  return result.rows[0] ?? null
}

export interface SubscriberFilter {
  status?: SubscriberStatus
  source?: SubscriberSource
  externalId?: string
  /** A case-insensitive substring of external_id. */
  externalIdContains?: string
  /** A tag the subscriber has, and the value it holds as text when given. */
  tag?: { key: string; value?: string }
  groupId?: string
  /** Health (issue 23): times compare with last_delivered_at / last_clicked_at; *Before also matches never. */
  deliveredBefore?: Date
  deliveredAfter?: Date
  clickedBefore?: Date
  clickedAfter?: Date
  minConsecutiveFailures?: number
  health?: SubscriberHealth
  /** Only ids below this one (the previous page's last id). */
  before?: string
  limit: number
}

/** The filters a list and an export share: every field of SubscriberFilter but the page (before, limit). */
export type SubscriberConditions = Omit<SubscriberFilter, 'before' | 'limit'>

/**
 * The WHERE conditions of the filter on subscribers s LEFT JOIN subscriber_health h,
 * each value pushed onto params ($1 is the project's id, already there). Used by
 * the list and the export (issue 25), so both select the same subscribers.
 */
export function filterConditions(filter: SubscriberConditions, params: unknown[]): string[] {
  // Members' test devices (status 'test', issue 25) are nobody's subscribers: never listed nor exported.
  const where = ['s.project_id = $1', "s.status <> 'test'"]
  if (filter.status) {
    params.push(filter.status)
    where.push(`s.status = $${params.length}`)
  }
  if (filter.source) {
    params.push(filter.source)
    where.push(`s.source = $${params.length}`)
  }
  if (filter.externalId) {
    params.push(filter.externalId)
    where.push(`s.external_id = $${params.length}`)
  }
  if (filter.externalIdContains) {
    // The schema allows only A-Z a-z 0-9 _ -, but _ is a LIKE wildcard: escaped, as any other would be.
    params.push(`%${filter.externalIdContains.replace(/[\\%_]/g, '\\$&')}%`)
    where.push(`s.external_id ILIKE $${params.length}`)
  }
  if (filter.tag) {
    // `?` first so the GIN index on tags (migration 0011) narrows the rows; ->> is the value as text.
    params.push(filter.tag.key)
    where.push(`s.tags ? $${params.length}`)
    if (filter.tag.value !== undefined) {
      params.push(filter.tag.value)
      where.push(`s.tags ->> $${params.length - 1} = $${params.length}`)
    }
  }
  if (filter.groupId) {
    params.push(filter.groupId)
    where.push(`EXISTS (SELECT 1 FROM group_members m WHERE m.subscriber_id = s.id AND m.group_id = $${params.length})`)
  }
  const column = (name: string, bound: Date | undefined, op: '<' | '>=', orNever: boolean): void => {
    if (!bound) return
    params.push(bound)
    where.push(orNever ? `(h.${name} IS NULL OR h.${name} ${op} $${params.length})` : `h.${name} ${op} $${params.length}`)
  }
  column('last_delivered_at', filter.deliveredBefore, '<', true)
  column('last_delivered_at', filter.deliveredAfter, '>=', false)
  column('last_clicked_at', filter.clickedBefore, '<', true)
  column('last_clicked_at', filter.clickedAfter, '>=', false)
  if (filter.minConsecutiveFailures !== undefined) {
    params.push(filter.minConsecutiveFailures)
    where.push(`h.consecutive_failures >= $${params.length}`)
  }
  if (filter.health === 'failing') where.push(healthCondition('failing', ''))
  else if (filter.health) {
    params.push(dormantCutoff())
    where.push(healthCondition(filter.health, `$${params.length}::timestamptz`))
  }
  return where
}

/** One page, newest first (ids are time-ordered). */
export async function listSubscribers(q: Queryable, projectId: string, filter: SubscriberFilter): Promise<SubscriberWithGroups[]> {
  const params: unknown[] = [projectId]
  const where = filterConditions(filter, params)
  if (filter.before) {
    params.push(filter.before)
    where.push(`s.id < $${params.length}`)
  }
  params.push(filter.limit)
  const result = await q.query<SubscriberWithGroups>(
    `SELECT ${COLUMNS}, ${GROUP_IDS} FROM ${FROM}
      WHERE ${where.join(' AND ')}
      ORDER BY s.id DESC
      LIMIT $${params.length}`,
    params,
  )
  return result.rows
}

// Erasure: hard deletes. Memberships and event rows go with the subscriber by
// ON DELETE CASCADE; counts already on broadcasts stay.

export async function deleteById(q: Queryable, projectId: string, id: string): Promise<number> {
  return (await q.query('DELETE FROM subscribers WHERE id = $1 AND project_id = $2', [id, projectId])).rowCount
}

/** Returns the ids erased (at most one: an endpoint is one device). */
export async function deleteByEndpoint(q: Queryable, projectId: string, endpoint: string): Promise<string[]> {
  return (await q.query<{ id: string }>('DELETE FROM subscribers WHERE project_id = $1 AND endpoint = $2 RETURNING id', [projectId, endpoint])).rows.map((r) => r.id)
}

export async function deleteByExternalId(q: Queryable, projectId: string, externalId: string): Promise<number> {
  return (await q.query('DELETE FROM subscribers WHERE project_id = $1 AND external_id = $2', [projectId, externalId])).rowCount
}

/**
 * Subscribers of the project by status. Active comes from the counter kept by
 * migration 0003 (one row, any size); the other two are counted on the
 * (project_id, status, id) index, which an index-only scan answers.
 */
export async function countByStatus(q: Queryable, projectId: string): Promise<{ active: number; unsubscribed: number; expired: number }> {
  const result = await q.query<{ active: number | string; unsubscribed: number | string; expired: number | string }>(
    `SELECT
       COALESCE((SELECT active_subscribers FROM project_counters WHERE project_id = $1), 0) AS active,
       (SELECT count(*) FROM subscribers WHERE project_id = $1 AND status = 'unsubscribed') AS unsubscribed,
       (SELECT count(*) FROM subscribers WHERE project_id = $1 AND status = 'expired') AS expired`,
    [projectId],
  )
  const row = result.rows[0]
  return { active: Number(row.active), unsubscribed: Number(row.unsubscribed), expired: Number(row.expired) }
}

/**
 * Key-share locks the subscribers (the lock a foreign key to them takes), in
 * id order, the order erasure deletes a user's subscribers in. A batch's
 * outcome write calls it first when its statements would otherwise lock its
 * subscribers in two passes (the events of some, then the health of all),
 * which could deadlock with an erasure of a user holding one of each
 * (health.erasure.test.ts). A subscriber erased meanwhile is skipped.
 */
export async function keyShareLockSubscribers(q: Queryable, ids: string[]): Promise<void> {
  await q.query('SELECT 1 FROM subscribers WHERE id = ANY ($1::text[]) ORDER BY id FOR KEY SHARE', [ids])
}
