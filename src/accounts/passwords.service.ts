// Changing a password (signed in, giving the current one) and resetting it
// with a link the operator makes (no e-mail: the operator hands the link
// over, as with invites). Either ends the account's other sessions: whoever
// knew the old password, or held a session made with it, is out.
import type { Config } from '../platform/config.ts'
import type { Database } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { newId } from '../platform/ids.ts'
import type { AuditContext, RequestOrigin } from '../audit/audit-context.ts'
import { recordAccountEvent } from './account-audit.ts'
import { consumePasswordReset, endPasswordResets, findUsablePasswordReset, insertPasswordReset } from './password-resets.store.ts'
import { checkNewPassword, hashPassword, passwordMatches, scryptCost } from './passwords.ts'
import type { LiveSession } from './session-auth.ts'
import { deleteUserSessions, insertSession } from './sessions.store.ts'
import { describeSession, normalizeEmail, type SessionView } from './sessions.service.ts'
import { hashToken, isTokenShaped, newToken } from './tokens.ts'
import { findUserByEmail, findUserById, setPasswordHash } from './users.store.ts'

/**
 * An hour: the operator hands the link over while the person is at hand (a
 * call, a chat); a link forgotten in a chat goes stale the same day. Invites
 * live 72 hours because they reach someone new; a reset link takes over an
 * existing account, so it lives as short as is practical.
 */
export const PASSWORD_RESET_LIFETIME_MS = 60 * 60_000

/**
 * Sets a new password after checking the current one (401 invalid_credentials
 * when wrong; the route counts the attempt against the sign-in limits). Every
 * session of the account ends, this one too, and a new one replaces it: the
 * browser that changed the password stays signed in with a fresh id and CSRF
 * token. Open reset links end as well.
 */
export async function changePassword(
  db: Database,
  config: Pick<Config, 'env'>,
  context: RequestOrigin,
  session: LiveSession,
  input: { current_password: string; new_password: string },
): Promise<{ id: string; view: SessionView }> {
  const user = await findUserById(db, session.user_id)
  if (!user?.password_hash || !(await passwordMatches(input.current_password, user.password_hash))) {
    throw new AppError('invalid_credentials', 'The current password is wrong.')
  }
  checkNewPassword(input.new_password, user.email, 'new_password')
  const hash = await hashPassword(input.new_password, scryptCost(config.env))
  const now = new Date()
  const { token, hash: idHash } = newToken()
  const renewed = { id_hash: idHash, user_id: user.id, project_id: session.project_id, created_at: now, last_seen_at: now, expires_at: session.expires_at }
  await db.transaction(async (tx) => {
    await setPasswordHash(tx, user.id, hash)
    const count = await deleteUserSessions(tx, user.id)
    await insertSession(tx, renewed)
    await endPasswordResets(tx, user.id, now)
    await recordAccountEvent(tx, context, user.id, 'account.password_change', { other_sessions_ended: Math.max(0, count - 1) })
  })
  return { id: token, view: await describeSession(db, { ...renewed, id: token, email: user.email }) }
}

export interface CreatedPasswordReset {
  user_id: string
  email: string
  /** Shown this once: the token is stored only as its hash. */
  reset_url: string
  expires_at: number
}

/** Where the dashboard's reset page opens the link. The token is in the fragment, which browsers never send. */
export function passwordResetUrl(config: Pick<Config, 'publicUrl'>, token: string): string {
  return `${config.publicUrl}/dashboard/#/reset/${token}`
}

/**
 * The operator makes a reset link for the account with that email (404
 * user_not_found when there is none: the operator may know which accounts
 * exist). It ends the account's earlier links; sessions go on until the link
 * is used, so a link made by mistake locks nobody out.
 */
export async function createPasswordReset(db: Database, config: Pick<Config, 'publicUrl'>, audit: AuditContext, emailGiven: string): Promise<CreatedPasswordReset> {
  const user = await findUserByEmail(db, normalizeEmail(emailGiven))
  if (!user) throw new AppError('user_not_found')
  const { token, hash } = newToken()
  const now = new Date()
  const expiresAt = new Date(now.getTime() + PASSWORD_RESET_LIFETIME_MS)
  await db.transaction(async (tx) => {
    await endPasswordResets(tx, user.id, now)
    await insertPasswordReset(tx, { id: newId('pwr'), user_id: user.id, token_hash: hash, expires_at: expiresAt })
    await recordAccountEvent(tx, audit, user.id, 'account.password_reset_link', { expires_at: expiresAt.getTime() })
  })
  return { user_id: user.id, email: user.email, reset_url: passwordResetUrl(config, token), expires_at: expiresAt.getTime() }
}

async function usable(db: Database, token: string) {
  if (!isTokenShaped(token)) throw new AppError('password_reset_not_found')
  const reset = await findUsablePasswordReset(db, hashToken(token), new Date())
  if (!reset) throw new AppError('password_reset_not_found')
  return reset
}

/** What the reset page shows before the new password is set. */
export async function inspectPasswordReset(db: Database, token: string): Promise<{ email: string; expires_at: number }> {
  const reset = await usable(db, token)
  return { email: reset.email, expires_at: reset.expires_at.getTime() }
}

/**
 * Sets the new password with the link: single use (consumed in the
 * transaction that sets the password), and every session of the account ends.
 * The person then signs in with the new password.
 */
export async function resetPassword(db: Database, config: Pick<Config, 'env'>, context: RequestOrigin, token: string, password: string): Promise<{ email: string }> {
  const reset = await usable(db, token)
  checkNewPassword(password, reset.email)
  const hash = await hashPassword(password, scryptCost(config.env))
  return db.transaction(async (tx) => {
    const now = new Date()
    const consumed = await consumePasswordReset(tx, hashToken(token), now)
    if (!consumed) throw new AppError('password_reset_not_found')
    await setPasswordHash(tx, consumed.user_id, hash)
    const ended = await deleteUserSessions(tx, consumed.user_id)
    await endPasswordResets(tx, consumed.user_id, now)
    await recordAccountEvent(tx, context, consumed.user_id, 'account.password_reset', { sessions_ended: ended })
    return { email: reset.email }
  })
}
