// SQL for a project's VAPID key pairs (issue 23, migration 0024). The current
// pair is also in projects.vapid_public / vapid_private (every reader of those
// serves the key new subscriptions must use) and named by projects.vapid_key_id;
// NULL there, or on a subscriber, is the project's original pair.
import type { Queryable } from '../platform/db/database.ts'

export interface VapidKeyRow {
  id: string
  project_id: string
  public_key: string
  private_key: string
  created_at: Date
  retired_at: Date | null
}

/** The id of a project's original pair: 'vk_' and the 26 characters of its id after 'prj_' (migration 0024). */
export function originalVapidKeyId(projectId: string): string {
  return `vk_${projectId.slice(4)}`
}

/** SQL for a subscriber's key id, NULL meaning the project's original pair; `s` is the subscribers alias. */
export const SUBSCRIBER_KEY_ID = "COALESCE(s.vapid_key_id, 'vk_' || substr(s.project_id, 5))"

/**
 * SQL for the secret click links are signed with (broadcasts/click-link.ts),
 * `p` being the projects alias: the original pair's private key, which no
 * rotation changes, so links in notifications already shown keep working.
 */
export const CLICK_LINK_SECRET = "COALESCE((SELECT k.private_key FROM vapid_keys k WHERE k.id = 'vk_' || substr(p.id, 5)), p.vapid_private)"

const COLUMNS = 'id, project_id, public_key, private_key, created_at, retired_at'

export async function insertVapidKey(q: Queryable, row: Omit<VapidKeyRow, 'created_at' | 'retired_at'>): Promise<VapidKeyRow> {
  const result = await q.query<VapidKeyRow>(
    `INSERT INTO vapid_keys (id, project_id, public_key, private_key) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
    [row.id, row.project_id, row.public_key, row.private_key],
  )
  return result.rows[0]
}

/**
 * Makes sure the project's original pair has its row: a project made by a
 * process of the previous release during an upgrade has none. While nothing
 * was rotated, projects.vapid_public is that original pair.
 */
export async function ensureOriginalVapidKey(q: Queryable, projectId: string): Promise<void> {
  await q.query(
    `INSERT INTO vapid_keys (id, project_id, public_key, private_key, created_at)
     SELECT $2, id, vapid_public, vapid_private, created_at FROM projects WHERE id = $1 AND vapid_key_id IS NULL
     ON CONFLICT (id) DO NOTHING`,
    [projectId, originalVapidKeyId(projectId)],
  )
}

export interface VapidKeyWithCount extends VapidKeyRow {
  active_subscribers: number
}

/** The project's pairs, oldest first, each with its active subscribers (one pass over the project's subscribers). */
export async function listVapidKeys(q: Queryable, projectId: string): Promise<VapidKeyWithCount[]> {
  const result = await q.query<VapidKeyWithCount>(
    `SELECT k.id, k.project_id, k.public_key, k.private_key, k.created_at, k.retired_at, COALESCE(c.n, 0)::int AS active_subscribers
       FROM vapid_keys k
       LEFT JOIN (SELECT ${SUBSCRIBER_KEY_ID} AS key_id, count(*) AS n FROM subscribers s
                   WHERE s.project_id = $1 AND s.status = 'active' GROUP BY 1) c ON c.key_id = k.id
      WHERE k.project_id = $1
      ORDER BY k.created_at, k.id`,
    [projectId],
  )
  return result.rows
}

/** The project's key with that id, locked until the transaction ends; null when the project has none. */
export async function findVapidKeyForUpdate(q: Queryable, projectId: string, keyId: string): Promise<VapidKeyRow | null> {
  const result = await q.query<VapidKeyRow>(`SELECT ${COLUMNS} FROM vapid_keys WHERE project_id = $1 AND id = $2 FOR UPDATE`, [projectId, keyId])
  return result.rows[0] ?? null
}

/**
 * The project's pairs not retired, as rows of vapid_keys, and its current pair
 * from projects, which has no row in a project a process of 0.2.0 created
 * during the upgrade, or one restored from a backup made before 0024.
 */
const USABLE = `SELECT ${COLUMNS} FROM vapid_keys WHERE project_id = $1 AND retired_at IS NULL
  UNION ALL
  SELECT COALESCE(p.vapid_key_id, 'vk_' || substr(p.id, 5)), p.id, p.vapid_public, p.vapid_private, p.created_at, NULL::timestamptz
    FROM projects p WHERE p.id = $1`

/** The project's key, not retired, whose public half is this; null when none. */
export async function findVapidKeyByPublic(q: Queryable, projectId: string, publicKey: string): Promise<VapidKeyRow | null> {
  const result = await q.query<VapidKeyRow>(`SELECT * FROM (${USABLE}) k WHERE k.public_key = $2 ORDER BY k.created_at DESC LIMIT 1`, [projectId, publicKey])
  return result.rows[0] ?? null
}

/** The project's pairs not retired, by public key (an import resolves each line's vapid_public against them). */
export async function usableVapidKeyIds(q: Queryable, projectId: string): Promise<Map<string, string>> {
  const result = await q.query<{ id: string; public_key: string }>(`SELECT k.id, k.public_key FROM (${USABLE}) k ORDER BY k.created_at, k.id`, [projectId])
  return new Map(result.rows.map((row) => [row.public_key, row.id]))
}

/** Active subscribers on the key (the rows stay as they are). */
export async function countActiveOnKey(q: Queryable, projectId: string, keyId: string): Promise<number> {
  const result = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM subscribers s WHERE s.project_id = $1 AND s.status = 'active' AND ${SUBSCRIBER_KEY_ID} = $2`,
    [projectId, keyId],
  )
  return result.rows[0].n
}

/** Expires the key's active subscribers (no push could reach them once it is retired); returns how many. */
export async function expireSubscribersOfKey(q: Queryable, projectId: string, keyId: string): Promise<number> {
  const result = await q.query(
    `UPDATE subscribers s SET status = 'expired'
      WHERE s.id IN (SELECT s.id FROM subscribers s WHERE s.project_id = $1 AND s.status = 'active' AND ${SUBSCRIBER_KEY_ID} = $2 ORDER BY s.id FOR NO KEY UPDATE)`,
    [projectId, keyId],
  )
  return result.rowCount
}

export async function markVapidKeyRetired(q: Queryable, keyId: string): Promise<VapidKeyRow> {
  const result = await q.query<VapidKeyRow>(`UPDATE vapid_keys SET retired_at = now() WHERE id = $1 RETURNING ${COLUMNS}`, [keyId])
  return result.rows[0]
}

/** Makes the pair the project's current one: new subscriptions are made with it from now on. */
export async function setCurrentVapidKey(q: Queryable, projectId: string, key: VapidKeyRow): Promise<void> {
  await q.query('UPDATE projects SET vapid_key_id = $2, vapid_public = $3, vapid_private = $4 WHERE id = $1', [projectId, key.id, key.public_key, key.private_key])
}

/** Replaces the pair of a key row in place (PUT vapid-keys, only while no active subscriber uses the project's keys). */
export async function replaceVapidKeyPair(q: Queryable, keyId: string, pair: { public_key: string; private_key: string }): Promise<void> {
  await q.query('UPDATE vapid_keys SET public_key = $2, private_key = $3 WHERE id = $1', [keyId, pair.public_key, pair.private_key])
}
