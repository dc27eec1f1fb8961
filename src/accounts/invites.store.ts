// SQL for invite links: a project, an email and a role, behind a token kept
// only as its hash; valid until expires_at, for one acceptance.
import type { Queryable } from '../platform/db/database.ts'
import type { Role } from '../access/access.ts'

export interface InviteRow {
  id: string
  project_id: string
  project_name: string
  email: string
  role: Role
  invited_by: string | null
  /** The id an account made by accepting this invite gets; null on invites older than migration 0017. */
  new_user_id: string | null
  created_at: Date
  expires_at: Date
}

const INVITE_SELECT = `SELECT i.id, i.project_id, p.name AS project_name, i.email, i.role, i.invited_by, i.new_user_id, i.created_at, i.expires_at
  FROM invites i JOIN projects p ON p.id = i.project_id`

export async function insertInvite(
  q: Queryable,
  row: { id: string; project_id: string; email: string; role: Role; token_hash: string; invited_by: string | null; new_user_id: string; expires_at: Date },
): Promise<void> {
  await q.query(
    'INSERT INTO invites (id, project_id, email, role, token_hash, invited_by, new_user_id, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
    [row.id, row.project_id, row.email, row.role, row.token_hash, row.invited_by, row.new_user_id, row.expires_at],
  )
}

/** The invite behind a token if it can still be accepted at `now`. */
export async function findUsableInvite(q: Queryable, tokenHash: string, now: Date): Promise<InviteRow | null> {
  const result = await q.query<InviteRow>(
    `${INVITE_SELECT} WHERE i.token_hash = $1 AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > $2`,
    [tokenHash, now],
  )
  return result.rows[0] ?? null
}

/**
 * Marks the invite used, if it still can be: the one statement that makes a
 * link single-use, also when two acceptances race (the second finds no row).
 */
export async function consumeInvite(q: Queryable, tokenHash: string, now: Date): Promise<InviteRow | null> {
  const result = await q.query<{ id: string }>(
    `UPDATE invites SET accepted_at = $2
      WHERE token_hash = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $2 RETURNING id`,
    [tokenHash, now],
  )
  if (!result.rows[0]) return null
  const found = await q.query<InviteRow>(`${INVITE_SELECT} WHERE i.id = $1`, [result.rows[0].id])
  return found.rows[0]
}

/** A project's invites still open at `now`, newest first. */
export async function listOpenInvites(q: Queryable, projectId: string, now: Date): Promise<InviteRow[]> {
  const result = await q.query<InviteRow>(
    `${INVITE_SELECT} WHERE i.project_id = $1 AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > $2 ORDER BY i.id DESC`,
    [projectId, now],
  )
  return result.rows
}

export async function revokeInvite(q: Queryable, projectId: string, inviteId: string, now: Date): Promise<boolean> {
  const result = await q.query(
    'UPDATE invites SET revoked_at = $3 WHERE id = $1 AND project_id = $2 AND accepted_at IS NULL AND revoked_at IS NULL',
    [inviteId, projectId, now],
  )
  return result.rowCount > 0
}

/**
 * Revokes every open invite for `email` in the project (expired ones too, so
 * none lingers in the table as open); returns how many. A new invite replaces
 * the older ones, and joining or being removed leaves none behind.
 */
export async function revokeOpenInvitesForEmail(q: Queryable, projectId: string, email: string, now: Date): Promise<number> {
  const result = await q.query(
    'UPDATE invites SET revoked_at = $3 WHERE project_id = $1 AND email = $2 AND accepted_at IS NULL AND revoked_at IS NULL',
    [projectId, email, now],
  )
  return result.rowCount
}

/** Revokes every open invite `userId` made in the project (they were removed or stopped being an owner); returns how many. */
export async function revokeOpenInvitesBy(q: Queryable, projectId: string, userId: string, now: Date): Promise<number> {
  const result = await q.query(
    'UPDATE invites SET revoked_at = $3 WHERE project_id = $1 AND invited_by = $2 AND accepted_at IS NULL AND revoked_at IS NULL',
    [projectId, userId, now],
  )
  return result.rowCount
}
