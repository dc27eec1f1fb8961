// SQL for users and their memberships (a role per project).
import type { Queryable } from '../platform/db/database.ts'
import type { Role } from '../access/access.ts'

export interface UserRow {
  id: string
  email: string
  password_hash: string | null
  created_at: Date
}

export interface MembershipRow {
  project_id: string
  project_name: string
  user_id: string
  email: string
  role: Role
  created_at: Date
}

export async function findUserByEmail(q: Queryable, email: string): Promise<UserRow | null> {
  const result = await q.query<UserRow>('SELECT id, email, password_hash, created_at FROM users WHERE email = $1', [email])
  return result.rows[0] ?? null
}

export async function findUserById(q: Queryable, id: string): Promise<UserRow | null> {
  const result = await q.query<UserRow>('SELECT id, email, password_hash, created_at FROM users WHERE id = $1', [id])
  return result.rows[0] ?? null
}

/** The user with that email, made (without a password) when there is none. */
export async function upsertUser(q: Queryable, id: string, email: string): Promise<UserRow> {
  const result = await q.query<UserRow>(
    `INSERT INTO users (id, email) VALUES ($1, $2)
     ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email
     RETURNING id, email, password_hash, created_at`,
    [id, email],
  )
  return result.rows[0]
}

export async function setPasswordHash(q: Queryable, userId: string, hash: string): Promise<void> {
  await q.query('UPDATE users SET password_hash = $2 WHERE id = $1', [userId, hash])
}

const MEMBERSHIP_SELECT = `SELECT m.project_id, p.name AS project_name, m.user_id, u.email, m.role, m.created_at
  FROM memberships m JOIN projects p ON p.id = m.project_id JOIN users u ON u.id = m.user_id`

/** A user's projects, in the order they joined them. */
export async function listUserMemberships(q: Queryable, userId: string): Promise<MembershipRow[]> {
  const result = await q.query<MembershipRow>(`${MEMBERSHIP_SELECT} WHERE m.user_id = $1 ORDER BY m.created_at, m.project_id`, [userId])
  return result.rows
}

/** A project's members, oldest first. */
export async function listProjectMembers(q: Queryable, projectId: string): Promise<MembershipRow[]> {
  const result = await q.query<MembershipRow>(`${MEMBERSHIP_SELECT} WHERE m.project_id = $1 ORDER BY m.created_at, u.email`, [projectId])
  return result.rows
}

export async function findMembership(q: Queryable, projectId: string, userId: string): Promise<MembershipRow | null> {
  const result = await q.query<MembershipRow>(`${MEMBERSHIP_SELECT} WHERE m.project_id = $1 AND m.user_id = $2`, [projectId, userId])
  return result.rows[0] ?? null
}

/**
 * The project's owners, locked until the transaction ends: two owners demoting
 * or removing each other at once wait for one another, so the second sees the
 * first's change and the last owner stays.
 */
export async function lockOwners(q: Queryable, projectId: string): Promise<string[]> {
  const result = await q.query<{ user_id: string }>(
    "SELECT user_id FROM memberships WHERE project_id = $1 AND role = 'owner' ORDER BY user_id FOR UPDATE",
    [projectId],
  )
  return result.rows.map((row) => row.user_id)
}

export async function updateMembershipRole(q: Queryable, projectId: string, userId: string, role: Role): Promise<boolean> {
  const result = await q.query('UPDATE memberships SET role = $3 WHERE project_id = $1 AND user_id = $2', [projectId, userId, role])
  return result.rowCount > 0
}

export async function deleteMembership(q: Queryable, projectId: string, userId: string): Promise<boolean> {
  const result = await q.query('DELETE FROM memberships WHERE project_id = $1 AND user_id = $2', [projectId, userId])
  return result.rowCount > 0
}

/** The project's member with that email, if any. */
export async function findMembershipByEmail(q: Queryable, projectId: string, email: string): Promise<MembershipRow | null> {
  const result = await q.query<MembershipRow>(`${MEMBERSHIP_SELECT} WHERE m.project_id = $1 AND u.email = $2`, [projectId, email])
  return result.rows[0] ?? null
}

/**
 * Adds the membership unless the user already has one in the project: an
 * existing role is never changed here (only changeRole does). Returns false
 * when there was one.
 */
export async function insertMembership(q: Queryable, projectId: string, userId: string, role: Role): Promise<boolean> {
  const result = await q.query(
    'INSERT INTO memberships (project_id, user_id, role) VALUES ($1, $2, $3) ON CONFLICT (project_id, user_id) DO NOTHING',
    [projectId, userId, role],
  )
  return result.rowCount > 0
}

/** Sets the first password of a user who has none; false when one was set meanwhile (it is never replaced here). */
export async function setFirstPassword(q: Queryable, userId: string, hash: string): Promise<boolean> {
  const result = await q.query('UPDATE users SET password_hash = $2 WHERE id = $1 AND password_hash IS NULL', [userId, hash])
  return result.rowCount > 0
}
