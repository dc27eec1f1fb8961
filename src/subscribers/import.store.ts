// SQL of the subscriber import (issue 23): a batch of a few hundred to a few
// thousand lines is read, compared and written with a handful of statements,
// never one round trip per line.
import type { Queryable } from '../platform/db/database.ts'
import type { SubscriberStatus, Tags } from './subscribers.schemas.ts'

export interface ExistingSubscription {
  id: string
  endpoint: string
  status: SubscriberStatus
  p256dh: string
  auth: string
  external_id: string | null
  tags: Tags
  group_ids: string[]
  /** The VAPID pair it is on (migration 0024); null: the project's original pair. */
  vapid_key_id: string | null
}

/** The project's groups, to resolve the names and ids a file gives; another project's are never among them. */
export async function projectGroups(q: Queryable, projectId: string): Promise<Array<{ id: string; name: string }>> {
  return (await q.query<{ id: string; name: string }>('SELECT id, name FROM groups WHERE project_id = $1', [projectId])).rows
}

/**
 * The project's rows for these endpoints, locked in id order (the order
 * subscribe and fan-out's expiries lock them in) until the batch commits.
 */
export async function lockExisting(q: Queryable, projectId: string, endpoints: string[]): Promise<Map<string, ExistingSubscription>> {
  const result = await q.query<ExistingSubscription>(
    `SELECT s.id, s.endpoint, s.status, s.p256dh, s.auth, s.external_id, s.tags, s.vapid_key_id,
            COALESCE((SELECT array_agg(m.group_id) FROM group_members m WHERE m.subscriber_id = s.id), '{}') AS group_ids
       FROM subscribers s
      WHERE s.project_id = $1 AND s.endpoint = ANY($2::text[])
      ORDER BY s.id
      FOR NO KEY UPDATE OF s`,
    [projectId, endpoints],
  )
  return new Map(result.rows.map((row) => [row.endpoint, row]))
}

export interface ImportRow {
  id: string
  endpoint: string
  p256dh: string
  auth: string
  external_id: string | null
  tags: Tags
  status: SubscriberStatus
  /** Kept for a new row only: an existing subscriber keeps when it first subscribed. */
  created_at: Date | null
  /** The VAPID pair (vapid_keys.id); null: the project's current pair (a new row only). */
  vapid_key_id: string | null
}

/**
 * Writes new and changed rows in one statement. A new row is marked source
 * 'import' and belongs to the line's VAPID pair, or the project's current one
 * (issue 23); an existing one keeps its source, its created_at and its
 * last_seen_at (no browser was seen) and takes the line's status (active when it gives none). Returns each row's id.
 */
export async function upsertImported(q: Queryable, projectId: string, rows: ImportRow[]): Promise<Map<string, string>> {
  if (rows.length === 0) return new Map()
  const result = await q.query<{ id: string; endpoint: string }>(
    `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, external_id, tags, created_at, last_seen_at, source, status, vapid_key_id)
     SELECT r.id, $1, r.endpoint, r.p256dh, r.auth, r.external_id, r.tags, COALESCE(r.created_at, now()), now(), 'import', r.status,
            COALESCE(r.vapid_key_id, (SELECT p.vapid_key_id FROM projects p WHERE p.id = $1))
       FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[], $8::timestamptz[], $9::text[], $10::text[])
         AS r(id, endpoint, p256dh, auth, external_id, tags, created_at, status, vapid_key_id)
     ON CONFLICT (project_id, endpoint) DO UPDATE SET
       p256dh = EXCLUDED.p256dh,
       auth = EXCLUDED.auth,
       external_id = EXCLUDED.external_id,
       tags = EXCLUDED.tags,
       -- A member's test device (test-devices/) stays one: an import naming its endpoint never makes it a subscriber.
       status = CASE WHEN subscribers.status = 'test' THEN 'test' ELSE EXCLUDED.status END,
       vapid_key_id = EXCLUDED.vapid_key_id
     RETURNING id, endpoint`,
    [
      projectId,
      rows.map((r) => r.id),
      rows.map((r) => r.endpoint),
      rows.map((r) => r.p256dh),
      rows.map((r) => r.auth),
      rows.map((r) => r.external_id),
      rows.map((r) => JSON.stringify(r.tags)),
      rows.map((r) => r.created_at),
      rows.map((r) => r.status),
      rows.map((r) => r.vapid_key_id),
    ],
  )
  return new Map(result.rows.map((row) => [row.endpoint, row.id]))
}

/** Memberships, each (subscriber, group) pair once; the groups are checked against the project again here. */
export async function addMemberships(q: Queryable, projectId: string, subscriberIds: string[], groupIds: string[]): Promise<void> {
  if (subscriberIds.length === 0) return
  await q.query(
    `INSERT INTO group_members (group_id, subscriber_id)
     SELECT p.group_id, p.subscriber_id
       FROM unnest($2::text[], $3::text[]) AS p(subscriber_id, group_id)
       JOIN groups g ON g.id = p.group_id AND g.project_id = $1
     ON CONFLICT DO NOTHING`,
    [projectId, subscriberIds, groupIds],
  )
}
