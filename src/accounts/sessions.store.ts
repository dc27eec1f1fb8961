// SQL for dashboard sessions, keyed by the SHA-256 of the cookie's id.
import type { Queryable } from '../platform/db/database.ts'
import type { Role } from '../access/access.ts'

export interface SessionRow {
  id_hash: string
  user_id: string
  project_id: string | null
  created_at: Date
  last_seen_at: Date
  expires_at: Date
}

export async function insertSession(q: Queryable, row: SessionRow): Promise<void> {
  await q.query(
    'INSERT INTO sessions (id_hash, user_id, project_id, created_at, last_seen_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
    [row.id_hash, row.user_id, row.project_id, row.created_at, row.last_seen_at, row.expires_at],
  )
}

/**
 * The session, if it is alive at `now` (before its absolute end, and used
 * within idleMs), with the user's role in `projectId` (null when not a
 * member) and the user's email.
 */
export async function findLiveSession(
  q: Queryable,
  idHash: string,
  now: Date,
  idleMs: number,
): Promise<(SessionRow & { email: string }) | null> {
  const result = await q.query<SessionRow & { email: string }>(
    `SELECT s.id_hash, s.user_id, s.project_id, s.created_at, s.last_seen_at, s.expires_at, u.email
       FROM sessions s JOIN users u ON u.id = s.user_id
      WHERE s.id_hash = $1 AND s.expires_at > $2 AND s.last_seen_at > $3`,
    [idHash, now, new Date(now.getTime() - idleMs)],
  )
  return result.rows[0] ?? null
}

export async function roleIn(q: Queryable, userId: string, projectId: string): Promise<Role | null> {
  const result = await q.query<{ role: Role }>('SELECT role FROM memberships WHERE user_id = $1 AND project_id = $2', [userId, projectId])
  return result.rows[0]?.role ?? null
}

export async function touchSession(q: Queryable, idHash: string, now: Date): Promise<void> {
  await q.query('UPDATE sessions SET last_seen_at = $2 WHERE id_hash = $1', [idHash, now])
}

export async function setSessionProject(q: Queryable, idHash: string, projectId: string): Promise<void> {
  await q.query('UPDATE sessions SET project_id = $2 WHERE id_hash = $1', [idHash, projectId])
}

export async function deleteSession(q: Queryable, idHash: string): Promise<void> {
  await q.query('DELETE FROM sessions WHERE id_hash = $1', [idHash])
}

export async function deleteUserSessions(q: Queryable, userId: string): Promise<number> {
  const result = await q.query('DELETE FROM sessions WHERE user_id = $1', [userId])
  return result.rowCount
}

/** Housekeeping at each sign-in: the user's sessions that can no longer be used. */
export async function deleteDeadSessions(q: Queryable, userId: string, now: Date, idleMs: number): Promise<void> {
  await q.query('DELETE FROM sessions WHERE user_id = $1 AND (expires_at <= $2 OR last_seen_at <= $3)', [
    userId,
    now,
    new Date(now.getTime() - idleMs),
  ])
}
