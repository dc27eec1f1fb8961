// Invite links: how a person becomes a member. The operator (the first owner
// of a project) and a project's owners make them; the link carries a random
// token kept only as its hash, is good for 72 hours and for one acceptance.
// No e-mail is sent: whoever makes the link hands it over. An invite only
// ever adds a membership: it never changes a role, never takes a password
// guess, and goes stale with the membership of whoever made it (issue 22).
import type { Config } from '../platform/config.ts'
import type { Database } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { newId } from '../platform/ids.ts'
import type { Role } from '../access/access.ts'
import { consumeInvite, findUsableInvite, insertInvite, revokeOpenInvitesForEmail } from './invites.store.ts'
import { checkNewPassword, hashPassword, scryptCost } from './passwords.ts'
import { normalizeEmail } from './sessions.service.ts'
import { hashToken, isTokenShaped, newToken } from './tokens.ts'
import { findMembershipByEmail, findUserByEmail, findUserById, insertMembership, setFirstPassword, upsertUser } from './users.store.ts'
import type { AuditContext, RequestOrigin } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'

/** Long enough to reach someone over a weekend; short enough that a forgotten link in a chat goes stale. */
export const INVITE_LIFETIME_MS = 72 * 3_600_000

export interface CreatedInvite {
  id: string
  /**
   * The id the account gets if the email has none when the invite is
   * accepted. Never an existing account's id: inviting tells the inviter
   * nothing about who already has an account.
   */
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
 * Invites `email` into the project with `role`. Makes no account: that
 * happens when a new email accepts. Replaces the email's older open invites
 * to the project, so only the newest link works. 404 project_not_found when
 * the project does not exist; 409 member_exists when the email is a member.
 */
export async function createInvite(
  db: Database,
  config: Pick<Config, 'publicUrl'>,
  audit: AuditContext,
  input: { projectId: string; email: string; role: Role; invitedBy: string | null },
): Promise<CreatedInvite> {
  const email = normalizeEmail(input.email)
  const { token, hash } = newToken()
  const now = new Date()
  const expiresAt = new Date(now.getTime() + INVITE_LIFETIME_MS)
  const id = newId('inv')
  const newUserId = newId('usr')
  await db.transaction(async (tx) => {
    const project = await tx.query('SELECT 1 FROM projects WHERE id = $1', [input.projectId])
    if (project.rows.length === 0) throw new AppError('project_not_found')
    if (await findMembershipByEmail(tx, input.projectId, email)) throw new AppError('member_exists')
    const replaced = await revokeOpenInvitesForEmail(tx, input.projectId, email, now)
    await insertInvite(tx, { id, project_id: input.projectId, email, role: input.role, token_hash: hash, invited_by: input.invitedBy, new_user_id: newUserId, expires_at: expiresAt })
    // Who was invited and as what; never the link or its token.
    await recordAudit(tx, { projectId: input.projectId, context: audit, action: 'member.invite', target: { type: 'invite', id }, details: { email, role: input.role, invite_id: id, replaced } })
  })
  return { id, user_id: newUserId, email, project_id: input.projectId, role: input.role, invite_url: inviteUrl(config, token), expires_at: expiresAt.getTime() }
}

/**
 * What the invite page shows. It does not say whether the email has an
 * account: the page offers both "new here" and "sign in", so a link's holder
 * (or the owner who made it) learns nothing from opening it.
 */
export interface InviteView {
  email: string
  project: { id: string; name: string }
  role: Role
  expires_at: number
}

async function usable(db: Database, token: string) {
  if (!isTokenShaped(token)) throw new AppError('invite_not_found')
  const invite = await findUsableInvite(db, hashToken(token), new Date())
  if (!invite) throw new AppError('invite_not_found')
  return invite
}

export async function inspectInvite(db: Database, token: string): Promise<InviteView> {
  const invite = await usable(db, token)
  return { email: invite.email, project: { id: invite.project_id, name: invite.project_name }, role: invite.role, expires_at: invite.expires_at.getTime() }
}

/**
 * How the person accepting proves who they are: a new account chooses its
 * password with the link; an existing account is signed in (its session's
 * user id), since sign-in is where password guesses are counted and limited.
 */
export type Acceptance = { password: string } | { userId: string }

/**
 * Accepts the invite and adds the membership, recorded as member.join by the
 * user who joined. A password is taken only for an email without one: for an
 * account with a password the answer is 409 invite_sign_in_required before
 * any password is looked at, so the link is no password oracle. A signed-in
 * user of another email is 403 invite_wrong_account. Someone already a
 * member is 409 member_exists and keeps their role. Single use: the invite
 * is consumed in the transaction that adds the membership, which also
 * revokes the email's other open invites to the project.
 */
export async function acceptInvite(
  db: Database,
  config: Pick<Config, 'env'>,
  origin: RequestOrigin,
  token: string,
  how: Acceptance,
): Promise<{ user_id: string; email: string; project_id: string; role: Role }> {
  const invite = await usable(db, token)
  let newHash: string | null = null
  if ('password' in how) {
    const existing = await findUserByEmail(db, invite.email)
    if (existing?.password_hash) throw new AppError('invite_sign_in_required')
    checkNewPassword(how.password, invite.email)
    newHash = await hashPassword(how.password, scryptCost(config.env))
  } else {
    const user = await findUserById(db, how.userId)
    if (user?.email !== invite.email) throw new AppError('invite_wrong_account')
  }
  return db.transaction(async (tx) => {
    const now = new Date()
    const consumed = await consumeInvite(tx, hashToken(token), now)
    if (!consumed) throw new AppError('invite_not_found')
    const user = await upsertUser(tx, consumed.new_user_id ?? newId('usr'), consumed.email)
    // A password set since the check above (another link for the same email): this one does not replace it.
    if (newHash && !(await setFirstPassword(tx, user.id, newHash))) throw new AppError('invite_sign_in_required')
    if (!(await insertMembership(tx, consumed.project_id, user.id, consumed.role))) throw new AppError('member_exists')
    await revokeOpenInvitesForEmail(tx, consumed.project_id, consumed.email, now)
    await recordAudit(tx, {
      projectId: consumed.project_id,
      context: { ...origin, actor: { type: 'user', id: user.id, role: consumed.role } },
      action: 'member.join',
      target: { type: 'user', id: user.id },
      // invited_by null: the operator made the invite (or its maker's account is gone).
      details: { email: consumed.email, role: consumed.role, invite_id: consumed.id, invited_by: consumed.invited_by },
    })
    return { user_id: user.id, email: consumed.email, project_id: consumed.project_id, role: consumed.role }
  })
}
