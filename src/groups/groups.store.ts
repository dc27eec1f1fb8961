// SQL for groups and their memberships. Every query names the project, so a
// group id of another project is simply not found.
import type { Queryable } from '../platform/db/database.ts'

export interface GroupRow {
  id: string
  project_id: string
  name: string
  description: string | null
  created_at: Date
}

export type GroupWithCount = GroupRow & { member_count: number }

/** True for PostgreSQL's unique_violation (also raised by PGlite). */
export function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505'
}

/** True for PostgreSQL's foreign_key_violation. */
export function isForeignKeyViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23503'
}

export async function listGroups(q: Queryable, projectId: string): Promise<GroupWithCount[]> {
  const result = await q.query<GroupWithCount>(
    `SELECT g.id, g.project_id, g.name, g.description, g.created_at,
            (SELECT count(*) FROM group_members m WHERE m.group_id = g.id)::int8 AS member_count
       FROM groups g
      WHERE g.project_id = $1
      ORDER BY g.id DESC`,
    [projectId],
  )
  return result.rows
}

export async function groupExists(q: Queryable, projectId: string, groupId: string): Promise<boolean> {
  const result = await q.query('SELECT 1 FROM groups WHERE id = $1 AND project_id = $2', [groupId, projectId])
  return result.rows.length > 0
}

/** Those of `groupIds` that are groups of the project (a segment's group leaves). */
export async function projectGroupIds(q: Queryable, projectId: string, groupIds: string[]): Promise<string[]> {
  const result = await q.query<{ id: string }>('SELECT id FROM groups WHERE project_id = $1 AND id = ANY($2::text[])', [projectId, groupIds])
  return result.rows.map((row) => row.id)
}

/**
 * Serialises group creation in one project until the transaction ends, so
 * two creates cannot both pass the cap check. FOR NO KEY UPDATE, unlike FOR
 * UPDATE, does not block inserts elsewhere whose foreign key points at the project.
 */
export async function lockProject(q: Queryable, projectId: string): Promise<void> {
  await q.query('SELECT id FROM projects WHERE id = $1 FOR NO KEY UPDATE', [projectId])
}

export async function countGroups(q: Queryable, projectId: string): Promise<number> {
  const result = await q.query<{ n: number }>('SELECT count(*)::int8 AS n FROM groups WHERE project_id = $1', [projectId])
  return result.rows[0].n
}

/** Inserts the group; a name already used in the project raises unique_violation. */
export async function insertGroup(q: Queryable, row: Omit<GroupRow, 'created_at'>): Promise<void> {
  await q.query('INSERT INTO groups (id, project_id, name, description) VALUES ($1, $2, $3, $4)', [
    row.id,
    row.project_id,
    row.name,
    row.description,
  ])
}

export interface GroupPatch {
  name?: string
  /** undefined keeps the description, null clears it. */
  description?: string | null
}

/** Applies the patch; false when the project has no such group. Raises unique_violation on a taken name. */
export async function updateGroup(q: Queryable, projectId: string, groupId: string, patch: GroupPatch): Promise<boolean> {
  const result = await q.query(
    `UPDATE groups SET
       name = COALESCE($3, name),
       description = CASE WHEN $4::boolean THEN $5 ELSE description END
     WHERE id = $1 AND project_id = $2`,
    [groupId, projectId, patch.name ?? null, patch.description !== undefined, patch.description ?? null],
  )
  return result.rowCount > 0
}

/** Deletes the group (memberships go with it by ON DELETE CASCADE); false when absent. */
export async function deleteGroup(q: Queryable, projectId: string, groupId: string): Promise<boolean> {
  const result = await q.query('DELETE FROM groups WHERE id = $1 AND project_id = $2', [groupId, projectId])
  return result.rowCount > 0
}

/**
 * Adds the project's subscribers among subscriberIds to the group, in one
 * statement. Ids of other projects or unknown ids match no row and are
 * dropped; existing memberships are left alone. Returns the rows inserted.
 */
export async function addMembers(q: Queryable, projectId: string, groupId: string, subscriberIds: string[]): Promise<number> {
  const result = await q.query(
    `INSERT INTO group_members (group_id, subscriber_id)
     SELECT $1, s.id FROM subscribers s
      WHERE s.project_id = $2 AND s.id = ANY($3::text[]) AND s.status <> 'test' -- a member's test device is nobody's subscriber (issue 25)
     ON CONFLICT DO NOTHING`,
    [groupId, projectId, subscriberIds],
  )
  return result.rowCount
}

/** Adds one subscriber to those of groupIds that exist in the project (subscribe's group_ids). */
export async function joinGroups(q: Queryable, projectId: string, subscriberId: string, groupIds: string[]): Promise<number> {
  const result = await q.query(
    `INSERT INTO group_members (group_id, subscriber_id)
     SELECT g.id, $2 FROM groups g
      WHERE g.project_id = $1 AND g.id = ANY($3::text[])
     ON CONFLICT DO NOTHING`,
    [projectId, subscriberId, groupIds],
  )
  return result.rowCount
}

/** Returns 1 when the subscriber was a member, else 0. */
export async function removeMember(q: Queryable, groupId: string, subscriberId: string): Promise<number> {
  return (await q.query('DELETE FROM group_members WHERE group_id = $1 AND subscriber_id = $2', [groupId, subscriberId])).rowCount
}
