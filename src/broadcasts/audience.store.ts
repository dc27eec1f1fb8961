// Who a broadcast reaches: its target as one SQL condition over subscribers
// `s`, used to count the audience and to page through it in id order.
import type { Queryable } from '../platform/db/database.ts'
import type { Target } from './broadcasts.schemas.ts'
import type { PushService } from '../subscribers/subscribers.schemas.ts'
import { segmentCondition } from './segment-sql.ts'

/** A broadcast's target, as the send schema defines it (one type, not a copy). */
export type AudienceTarget = Target

/** The WHERE condition and its parameters, numbered from $1. */
export function audienceCondition(projectId: string, target: AudienceTarget): { sql: string; params: unknown[] } {
  const base = `s.project_id = $1 AND s.status = 'active'`
  switch (target.type) {
    case 'all':
      return { sql: base, params: [projectId] }
    case 'user':
      return { sql: `${base} AND s.external_id = $2`, params: [projectId, target.external_id] }
    case 'group':
      return {
        sql: `${base} AND EXISTS (SELECT 1 FROM group_members m WHERE m.group_id = $2 AND m.subscriber_id = s.id)`,
        params: [projectId, target.group_id],
      }
    case 'segment': {
      const params: unknown[] = [projectId]
      return { sql: `${base} AND ${segmentCondition(target.filter, params)}`, params }
    }
    case 'test_devices':
      // The member's own test devices (issue 25): status 'test', which no other target selects.
      return {
        sql: `s.project_id = $1 AND s.status = 'test' AND EXISTS (SELECT 1 FROM member_test_devices d WHERE d.subscriber_id = s.id AND d.project_id = $1 AND d.user_id = $2)`,
        params: [projectId, target.user_id],
      }
  }
}

export async function countAudience(q: Queryable, projectId: string, target: AudienceTarget): Promise<number> {
  if (target.type === 'all') {
    // Kept exact by triggers (migration 0003): one row read instead of counting a large audience.
    const counter = await q.query<{ n: number }>('SELECT active_subscribers AS n FROM project_counters WHERE project_id = $1', [projectId])
    return counter.rows[0]?.n ?? 0
  }
  const where = audienceCondition(projectId, target)
  const result = await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM subscribers s WHERE ${where.sql}`, where.params)
  return result.rows[0].n
}

/**
 * A wave of a broadcast sent by local time (delivery/waves.ts): only the
 * subscribers whose zone (their own, or the project's default when they have
 * none, as it was when the waves were planned) is one of `zones`.
 */
export interface ZoneFilter {
  zones: string[]
  default_zone: string
}

/** The audience condition narrowed to a wave's zones, when there is one. */
function waveCondition(projectId: string, target: AudienceTarget, wave: ZoneFilter | undefined): { sql: string; params: unknown[] } {
  const where = audienceCondition(projectId, target)
  if (!wave) return where
  const n = where.params.length
  return {
    sql: `${where.sql} AND COALESCE(s.timezone, $${n + 1}::text) = ANY($${n + 2}::text[])`,
    params: [...where.params, wave.default_zone, wave.zones],
  }
}

/** The audience counted by zone (the project's default for subscribers without one): how fan-out plans local-time waves. */
export async function audienceByZone(q: Queryable, projectId: string, target: AudienceTarget, defaultZone: string): Promise<Array<{ zone: string; count: number }>> {
  const where = audienceCondition(projectId, target)
  const n = where.params.length
  const result = await q.query<{ zone: string; count: number }>(
    `SELECT COALESCE(s.timezone, $${n + 1}::text) AS zone, count(*)::int AS count FROM subscribers s WHERE ${where.sql} GROUP BY 1 ORDER BY 1`,
    [...where.params, defaultZone],
  )
  return result.rows
}

/** What sending to a subscriber needs (Recipient). */
const RECIPIENT_COLUMNS = 's.id, s.endpoint, s.p256dh, s.auth, s.external_id, s.push_service, s.vapid_key_id'
/** And a personalized broadcast's variables: read only for those, so a broadcast without variables reads what it did. */
const PROFILE_COLUMNS = `${RECIPIENT_COLUMNS}, s.tags, s.locale`

function columns(profile: boolean): string {
  return profile ? PROFILE_COLUMNS : RECIPIENT_COLUMNS
}

/**
 * The next `limit` audience members after `after` (keyset pagination: no
 * offset, index order), with what sending to them needs: a batch job fixes
 * its slice from these rows and sends to them, one query for both.
 * `id > COALESCE(after, '')` rather than `(after IS NULL OR id > after)`:
 * the OR kept the first page of a freshly filled table (no statistics yet,
 * as on the embedded database, which has no autovacuum) off the index's
 * order: all 200,000 rows read and sorted, 400 ms before the first push.
 */
export async function nextAudience(q: Queryable, projectId: string, target: AudienceTarget, after: string | null, limit: number, profile = false, wave?: ZoneFilter): Promise<Recipient[]> {
  const where = waveCondition(projectId, target, wave)
  const n = where.params.length
  const result = await q.query<Recipient>(
    `SELECT ${columns(profile)} FROM subscribers s
      WHERE ${where.sql} AND s.id > COALESCE($${n + 1}::text, '') ORDER BY s.id LIMIT $${n + 2}`,
    [...where.params, after, limit],
  )
  return result.rows
}

export interface Recipient {
  id: string
  endpoint: string
  p256dh: string
  auth: string
  external_id: string | null
  /** Counted by, in the broadcast's progress (subscribers.push_service, migration 0006). */
  push_service: PushService
  /** A personalized broadcast's variables (read with profile = true only). */
  tags?: Record<string, string | number | boolean>
  locale?: string | null
  /** The VAPID pair the subscription was made with (migration 0024); null: the project's original pair. Absent: the current pair. */
  vapid_key_id?: string | null
}

/** The audience members with ids in (after, through] (a batch job run again after a crash: its slice is fixed). */
export async function audienceSlice(
  q: Queryable,
  projectId: string,
  target: AudienceTarget,
  after: string | null,
  through: string,
  profile = false,
  wave?: ZoneFilter,
): Promise<Recipient[]> {
  const where = waveCondition(projectId, target, wave)
  const n = where.params.length
  const result = await q.query<Recipient>(
    `SELECT ${columns(profile)} FROM subscribers s
      WHERE ${where.sql} AND s.id > COALESCE($${n + 1}::text, '') AND s.id <= $${n + 2}
      ORDER BY s.id`,
    [...where.params, after, through],
  )
  return result.rows
}

/**
 * Still-active subscribers of the project among ids (retries skip those that left meanwhile);
 * a member's test device (status 'test', issue 25) too: its ids are only ever in a test's retries.
 */
export async function activeRecipients(q: Queryable, projectId: string, ids: string[], profile = false): Promise<Recipient[]> {
  const result = await q.query<Recipient>(
    `SELECT ${columns(profile)} FROM subscribers s
      WHERE project_id = $1 AND status IN ('active', 'test') AND id = ANY($2::text[]) ORDER BY id`,
    [projectId, ids],
  )
  return result.rows
}
