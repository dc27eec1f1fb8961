// SQL of the subscriber export (issue 23): one page at a time in id order
// (keyset: each page starts after the last id of the one before), so an
// export of millions holds one page in memory and no long transaction.
import type { Queryable } from '../platform/db/database.ts'
import { SUBSCRIBER_KEY_ID } from '../projects/vapid-keys.store.ts'
import type { SubscriberSource, SubscriberStatus, Tags } from './subscribers.schemas.ts'
import { filterConditions, type SubscriberConditions } from './subscribers.store.ts'

export interface ExportRow {
  id: string
  endpoint: string
  p256dh: string
  auth: string
  external_id: string | null
  status: SubscriberStatus
  tags: Tags
  source: SubscriberSource
  created_at: Date
  last_seen_at: Date
  /** Group names, sorted: ids mean nothing to another project or another sender. */
  groups: string[]
  /** The public key of the VAPID pair the subscription was made with (issue 23: a project may have several); read for the operator's export only. */
  vapid_public?: string
}

/** The pair a subscription was made with: a row of vapid_keys once the project rotated, else the project's only pair. */
const PAIR = `,
            COALESCE((SELECT k.public_key FROM vapid_keys k WHERE k.id = ${SUBSCRIBER_KEY_ID}),
                     (SELECT p.vapid_public FROM projects p WHERE p.id = s.project_id)) AS vapid_public`

/**
 * withPairs: each row's VAPID public key too (the operator's export); the project's own export does not read it.
 * filter: the list's filters (issue 25), the same conditions GET /v1/subscribers applies.
 */
export async function exportPage(
  q: Queryable, projectId: string, afterId: string | null, limit: number, withPairs = false, filter: SubscriberConditions = {},
): Promise<ExportRow[]> {
  const params: unknown[] = [projectId]
  const where = filterConditions(filter, params)
  if (afterId !== null) {
    params.push(afterId)
    where.push(`s.id > $${params.length}`)
  }
  params.push(limit)
  const result = await q.query<ExportRow>(
    `SELECT s.id, s.endpoint, s.p256dh, s.auth, s.external_id, s.status, s.tags, s.source, s.created_at, s.last_seen_at,
            COALESCE((SELECT array_agg(g.name ORDER BY g.name) FROM group_members m JOIN groups g ON g.id = m.group_id
                       WHERE m.subscriber_id = s.id), '{}') AS groups${withPairs ? PAIR : ''}
       FROM subscribers s LEFT JOIN subscriber_health h ON h.subscriber_id = s.id
      WHERE ${where.join(' AND ')}
      ORDER BY s.id
      LIMIT $${params.length}`,
    params,
  )
  return result.rows
}

/** The project's VAPID pairs other than `current` that are not retired: subscriptions made before a rotation still use them. */
export async function previousVapidPairs(q: Queryable, projectId: string, current: string): Promise<Array<{ vapid_public: string; vapid_private: string }>> {
  const result = await q.query<{ vapid_public: string; vapid_private: string }>(
    `SELECT public_key AS vapid_public, private_key AS vapid_private FROM vapid_keys
      WHERE project_id = $1 AND retired_at IS NULL AND public_key <> $2 ORDER BY created_at, id`,
    [projectId, current],
  )
  return result.rows
}
