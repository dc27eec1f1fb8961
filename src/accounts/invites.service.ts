// Invite links: how a person becomes a member. The operator (the first owner
// of a project) and a project's owners make them; the link carries a random
// token kept only as its hash, is good for 72 hours and for one acceptance.
// No e-mail is sent: whoever makes the link hands it over.
import type { Config } from '../platform/config.ts'
import type { Database } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { newId } from '../platform/ids.ts'
import type { Role } from '../access/access.ts'
import { consumeInvite, findUsableInvite, insertInvite } from './invites.store.ts'
import { checkNewPassword, hashPassword, passwordMatches } from './passwords.ts'
import { normalizeEmail } from './sessions.service.ts'
import { hashToken, isTokenShaped, newToken } from './tokens.ts'
import { findMembership, findUserByEmail, putMembership, setPasswordHash, upsertUser } from './users.store.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'

/** Long enough to reach someone over a weekend; short enough that a forgotten link in a chat goes stale. */
export const INVITE_LIFETIME_MS = 72 * 3_600_000

export interface CreatedInvite {
  id: string
  user_id: string
  email: string
  project_id: string
  role: Role
  /** Shown this once: the token is stored only as its hash. */
  invite_url: string
  expires_at: number
}

/** Where the dashboard's invite page opens the link. The token is in the fragment, which browsers never send. */
export function inviteUrl(config: Pick<Config, 'publicUrl'>, token: string): string {
  return `${config.publicUrl}/dashboard/#/invite/${token}`
}

/**
 * Invites `email` into the project with `role` (the user is made, without a
 * password, if the email is new). 404 project_not_found when the project does
 * not exist; 409 member_exists when the person is already a member.
 */
export async function createInvite(
  db: Database,
  config: Pick<Config, 'publicUrl'>,
  audit: AuditContext,
  input: { projectId: string; email: string; role: Role; invitedBy: string | null },
): Promise<CreatedInvite> {
  const email = normalizeEmail(input.email)
  const { token, hash } = newToken()
  const expiresAt = new Date(Date.now() + INVITE_LIFETIME_MS)
  const id = newId('inv')
  const user = await db.transaction(async (tx) => {
    const project = await tx.query('SELECT 1 FROM projects WHERE id = $1', [input.projectId])
    if (project.rows.length === 0) throw new AppError('project_not_found')
    const user = await upsertUser(tx, newId('usr'), email)
    if (await findMembership(tx, input.projectId, user.id)) throw new AppError('member_exists')
    await insertInvite(tx, { id, project_id: input.projectId, email, role: input.role, token_hash: hash, invited_by: input.invitedBy, expires_at: expiresAt })
    // Who was invited and as what; never the link or its token.
    await recordAudit(tx, { projectId: input.projectId, context: audit, action: 'member.invite', target: { type: 'user', id: user.id }, details: { email, role: input.role, invite_id: id } })
    return user
  })
  return { id, user_id: user.id, email, project_id: input.projectId, role: input.role, invite_url: inviteUrl(config, token), expires_at: expiresAt.getTime() }
}

export interface InviteView {
  email: string
  project: { id: string; name: string }
  role: Role
  expires_at: number
  /** True when the email already has a password: accepting asks for it instead of setting one. */
  password_set: boolean
}

async function usable(db: Database, token: string) {
  if (!isTokenShaped(token)) throw new AppError('invite_not_found')
  const invite = await findUsableInvite(db, hashToken(token), new Date())
  if (!invite) throw new AppError('invite_not_found')
  return invite
}

/** What the invite page shows before the password is set. */
export async function inspectInvite(db: Database, token: string): Promise<InviteView> {
  const invite = await usable(db, token)
  const user = await findUserByEmail(db, invite.email)
  return {
    email: invite.email,
    project: { id: invite.project_id, name: invite.project_name },
    role: invite.role,
    expires_at: invite.expires_at.getTime(),
    password_set: Boolean(user?.password_hash),
  }
}

/**
 * Accepts the invite: a new user sets their password with it; someone who
 * already has one proves it is them by giving it (otherwise a link for their
 * email would let its holder take over their account). Single use: the
 * invite is consumed in the transaction that adds the membership.
 */
export async function acceptInvite(db: Database, token: string, password: string): Promise<{ email: string; project_id: string; role: Role }> {
  const invite = await usable(db, token)
  const existing = await findUserByEmail(db, invite.email)
  let newHash: string | null = null
  if (existing?.password_hash) {
    if (!(await passwordMatches(password, existing.password_hash))) throw new AppError('invalid_credentials', 'This email already has a password: give that password to accept the invite.')
  } else {
    checkNewPassword(password, invite.email)
    newHash = await hashPassword(password)
  }
  return db.transaction(async (tx) => {
    const consumed = await consumeInvite(tx, hashToken(token), new Date())
    if (!consumed) throw new AppError('invite_not_found')
    const user = await upsertUser(tx, newId('usr'), consumed.email)
    if (newHash && !user.password_hash) await setPasswordHash(tx, user.id, newHash)
    await putMembership(tx, consumed.project_id, user.id, consumed.role)
    return { email: consumed.email, project_id: consumed.project_id, role: consumed.role }
  })
}
