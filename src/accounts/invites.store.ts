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
  created_at: Date
  expires_at: Date
}

const INVITE_SELECT = `SELECT i.id, i.project_id, p.name AS project_name, i.email, i.role, i.invited_by, i.created_at, i.expires_at
  FROM invites i JOIN projects p ON p.id = i.project_id`

export async function insertInvite(
  q: Queryable,
  row: { id: string; project_id: string; email: string; role: Role; token_hash: string; invited_by: string | null; expires_at: Date },
): Promise<void> {
  await q.query(
    'INSERT INTO invites (id, project_id, email, role, token_hash, invited_by, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [row.id, row.project_id, row.email, row.role, row.token_hash, row.invited_by, row.expires_at],
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
