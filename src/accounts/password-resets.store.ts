// SQL for password reset links (migration 0018): an account behind a token
// kept only as its hash; valid until expires_at, for one use.
import type { Queryable } from '../platform/db/database.ts'

export interface PasswordResetRow {
  id: string
  user_id: string
  email: string
  expires_at: Date
}

export async function insertPasswordReset(q: Queryable, row: { id: string; user_id: string; token_hash: string; expires_at: Date }): Promise<void> {
  await q.query('INSERT INTO password_resets (id, user_id, token_hash, expires_at) VALUES ($1, $2, $3, $4)', [row.id, row.user_id, row.token_hash, row.expires_at])
}

/** The link behind a token if it can still be used at `now`, with the account's email. */
export async function findUsablePasswordReset(q: Queryable, tokenHash: string, now: Date): Promise<PasswordResetRow | null> {
  const result = await q.query<PasswordResetRow>(
    `SELECT r.id, r.user_id, u.email, r.expires_at FROM password_resets r JOIN users u ON u.id = r.user_id
      WHERE r.token_hash = $1 AND r.used_at IS NULL AND r.expires_at > $2`,
    [tokenHash, now],
  )
  return result.rows[0] ?? null
}

/**
 * Marks the link used, if it still can be: the one statement that makes a
 * link single-use, also when two uses race (the second finds no row).
 */
export async function consumePasswordReset(q: Queryable, tokenHash: string, now: Date): Promise<{ user_id: string } | null> {
  const result = await q.query<{ user_id: string }>(
    'UPDATE password_resets SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING user_id',
    [tokenHash, now],
  )
  return result.rows[0] ?? null
}

/** Ends every open link of the account (a newer link, a reset or a change of password makes them moot); returns how many. */
export async function endPasswordResets(q: Queryable, userId: string, now: Date): Promise<number> {
  const result = await q.query('UPDATE password_resets SET used_at = $2 WHERE user_id = $1 AND used_at IS NULL', [userId, now])
  return result.rowCount
}
