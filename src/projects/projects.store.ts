// SQL for projects and their API keys.
import type { Queryable } from '../platform/db/database.ts'
import type { KeyScope } from '../access/access.ts'
import type { LimitOverrides, PlanName } from './plans.ts'
import type { FrequencyCapRule } from '../frequency-caps/caps.schemas.ts'

export interface ProjectRow {
  id: string
  name: string
  domain: string | null
  plan: PlanName
  default_icon: string | null
  limits: LimitOverrides
  /** Frequency caps (migration 0030); null or [] when none. */
  frequency_caps: FrequencyCapRule[] | null
  vapid_public: string
  vapid_private: string
  /** The current VAPID pair's id (migration 0024); null while it is the original pair (originalVapidKeyId). */
  vapid_key_id: string | null
  created_at: Date
  /** Subscription health rules (migration 0025): null is off. */
  expire_after_failures: number | null
  expire_after_days_without_delivery: number | null
}

export interface ApiKeyRow {
  id: string
  project_id: string
  name: string | null
  prefix: string
  hash: string
  scope: KeyScope
  created_at: Date
  revoked_at: Date | null
  last_used_at: Date | null
  /** Who made the key (migration 0018); null for keys made before it recorded that. */
  created_by_type: 'user' | 'key' | 'operator' | null
  created_by_id: string | null
  /** The maker's email when a member made it (read by the lists, not by authentication). */
  created_by_email?: string | null
}

/** last_used_at is written at most this often per key: the dashboard shows it to the minute. */
export const LAST_USED_PRECISION_MS = 60_000

const KEY_COLUMNS = `id, project_id, name, prefix, hash, scope, created_at, revoked_at, last_used_at, created_by_type, created_by_id,
  (SELECT u.email FROM users u WHERE api_keys.created_by_type = 'user' AND u.id = api_keys.created_by_id) AS created_by_email`

const PROJECT_COLUMNS = 'id, name, domain, plan, default_icon, limits, frequency_caps, vapid_public, vapid_private, vapid_key_id, created_at, expire_after_failures, expire_after_days_without_delivery'

export async function insertProject(q: Queryable, row: Omit<ProjectRow, 'created_at' | 'expire_after_failures' | 'expire_after_days_without_delivery' | 'frequency_caps' | 'vapid_key_id'>): Promise<ProjectRow> {
  const result = await q.query<ProjectRow>(
    `INSERT INTO projects (id, name, domain, plan, default_icon, limits, vapid_public, vapid_private)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${PROJECT_COLUMNS}`,
    [row.id, row.name, row.domain, row.plan, row.default_icon, JSON.stringify(row.limits), row.vapid_public, row.vapid_private],
  )
  return result.rows[0]
}

export async function findProjectById(q: Queryable, id: string): Promise<ProjectRow | null> {
  const result = await q.query<ProjectRow>(`SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = $1`, [id])
  return result.rows[0] ?? null
}

/** A project's VAPID key pair, as fan-out signs with it. */
export interface ProjectKeys {
  id: string
  /** The current pair. */
  vapid_public: string
  vapid_private: string
  /** The current pair's id; null while it is the original pair (migration 0024). */
  vapid_key_id?: string | null
  /** Every pair not retired (vapid_keys), each subscriber signed with its own; absent: only the current pair. */
  vapid_keys?: Array<{ id: string; public_key: string; private_key: string }> | null
  /** The secret click links are signed with (CLICK_LINK_SECRET); the current private key when absent. */
  click_link_secret?: string
}

export async function findProjectKeys(q: Queryable, projectId: string): Promise<ProjectKeys | null> {
  const result = await q.query<ProjectKeys>('SELECT id, vapid_public, vapid_private FROM projects WHERE id = $1', [projectId])
  return result.rows[0] ?? null
}

export async function listProjects(q: Queryable): Promise<ProjectRow[]> {
  const result = await q.query<ProjectRow>(`SELECT ${PROJECT_COLUMNS} FROM projects ORDER BY id`)
  return result.rows
}

export interface ProjectPatch {
  plan?: PlanName
  default_icon?: string | null
  limits?: LimitOverrides
  /** undefined keeps the stored value; null turns the rule off. */
  expire_after_failures?: number | null
  expire_after_days_without_delivery?: number | null
  frequency_caps?: FrequencyCapRule[] | null
}

export async function updateProject(q: Queryable, id: string, patch: ProjectPatch): Promise<ProjectRow | null> {
  const result = await q.query<ProjectRow>(
    `UPDATE projects SET
       plan = COALESCE($2, plan),
       default_icon = CASE WHEN $3::boolean THEN $4 ELSE default_icon END,
       limits = COALESCE($5::jsonb, limits),
       expire_after_failures = CASE WHEN $6::boolean THEN $7::int ELSE expire_after_failures END,
       expire_after_days_without_delivery = CASE WHEN $8::boolean THEN $9::int ELSE expire_after_days_without_delivery END,
       frequency_caps = CASE WHEN $10::boolean THEN $11::jsonb ELSE frequency_caps END
     WHERE id = $1 RETURNING ${PROJECT_COLUMNS}`,
    [
      id,
      patch.plan ?? null,
      patch.default_icon !== undefined,
      patch.default_icon ?? null,
      patch.limits === undefined ? null : JSON.stringify(patch.limits),
      patch.expire_after_failures !== undefined,
      patch.expire_after_failures ?? null,
      patch.expire_after_days_without_delivery !== undefined,
      patch.expire_after_days_without_delivery ?? null,
      patch.frequency_caps !== undefined,
      // [] is stored as null: both mean no caps, and fan-out then counts nothing.
      patch.frequency_caps && patch.frequency_caps.length > 0 ? JSON.stringify(patch.frequency_caps) : null,
    ],
  )
  return result.rows[0] ?? null
}

/** Sets a project's VAPID pair; the caller has checked it and that no subscription depends on the old one. */
export async function updateVapidKeys(q: Queryable, id: string, keys: { vapid_public: string; vapid_private: string }): Promise<ProjectRow | null> {
  const result = await q.query<ProjectRow>(
    `UPDATE projects SET vapid_public = $2, vapid_private = $3 WHERE id = $1 RETURNING ${PROJECT_COLUMNS}`,
    [id, keys.vapid_public, keys.vapid_private],
  )
  return result.rows[0] ?? null
}

export async function insertApiKey(q: Queryable, row: Omit<ApiKeyRow, 'created_at' | 'revoked_at' | 'last_used_at' | 'created_by_email'>): Promise<ApiKeyRow> {
  const result = await q.query<ApiKeyRow>(
    `INSERT INTO api_keys (id, project_id, name, prefix, hash, scope, created_by_type, created_by_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${KEY_COLUMNS}`,
    [row.id, row.project_id, row.name, row.prefix, row.hash, row.scope, row.created_by_type, row.created_by_id],
  )
  return result.rows[0]
}

/** The active key with that lookup prefix and its project, or null. */
export async function findActiveKeyByPrefix(
  q: Queryable,
  prefix: string,
): Promise<{ key: ApiKeyRow; project: ProjectRow } | null> {
  const result = await q.query<ApiKeyRow & { project: ProjectRow }>(
    `SELECT k.id, k.project_id, k.name, k.prefix, k.hash, k.scope, k.created_at, k.revoked_at, k.last_used_at, k.created_by_type, k.created_by_id, row_to_json(p.*) AS project
       FROM api_keys k JOIN projects p ON p.id = k.project_id
      WHERE k.prefix = $1 AND k.revoked_at IS NULL`,
    [prefix],
  )
  const row = result.rows[0]
  if (!row) return null
  const { project, ...key } = row
  return { key, project: { ...project, created_at: new Date(project.created_at as unknown as string) } }
}

/** Marks the key revoked; false when the project has no such active key. */
export async function revokeApiKey(q: Queryable, projectId: string, keyId: string): Promise<boolean> {
  const result = await q.query(
    'UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND project_id = $2 AND revoked_at IS NULL',
    [keyId, projectId],
  )
  return result.rowCount > 0
}

/**
 * Records that the key was used now, unless that was written less than
 * LAST_USED_PRECISION_MS ago: at most one write a minute per key, however
 * busy it is (requests racing on several processes update it once).
 */
export async function markKeyUsed(q: Queryable, keyId: string): Promise<void> {
  await q.query(
    "UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - $2::int * interval '1 millisecond')",
    [keyId, LAST_USED_PRECISION_MS],
  )
}

/** A project's keys, oldest first; only those not revoked with `activeOnly`. */
export async function listApiKeys(q: Queryable, projectId: string, { activeOnly = false } = {}): Promise<ApiKeyRow[]> {
  const result = await q.query<ApiKeyRow>(
    `SELECT ${KEY_COLUMNS} FROM api_keys WHERE project_id = $1 AND (NOT $2::boolean OR revoked_at IS NULL) ORDER BY id`,
    [projectId, activeOnly],
  )
  return result.rows
}

/** The project's keys that still work and that `userId` made (a member's removal lists them), oldest first. */
export async function listActiveKeysMadeBy(q: Queryable, projectId: string, userId: string): Promise<ApiKeyRow[]> {
  const result = await q.query<ApiKeyRow>(
    `SELECT ${KEY_COLUMNS} FROM api_keys WHERE project_id = $1 AND created_by_type = 'user' AND created_by_id = $2 AND revoked_at IS NULL ORDER BY id`,
    [projectId, userId],
  )
  return result.rows
}

/** A page of projects, newest first, starting after the cursor (an id). */
export async function listProjectsPage(q: Queryable, limit: number, cursor: string | null): Promise<ProjectRow[]> {
  const result = await q.query<ProjectRow>(
    `SELECT ${PROJECT_COLUMNS} FROM projects WHERE ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $1`,
    [limit, cursor],
  )
  return result.rows
}

/** The project, locked until the transaction ends (read-modify-write of its limits). */
export async function findProjectForUpdate(q: Queryable, id: string): Promise<ProjectRow | null> {
  const result = await q.query<ProjectRow>(`SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = $1 FOR UPDATE`, [id])
  return result.rows[0] ?? null
}

export async function findApiKey(q: Queryable, projectId: string, keyId: string): Promise<ApiKeyRow | null> {
  const result = await q.query<ApiKeyRow>(
    `SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 AND project_id = $2`,
    [keyId, projectId],
  )
  return result.rows[0] ?? null
}
