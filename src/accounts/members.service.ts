// A project's members as its owners manage them: the list (with open
// invites), role changes and removals. A project always keeps one owner.
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import type { Role } from '../access/access.ts'
import { listOpenInvites, revokeInvite, revokeOpenInvitesBy, revokeOpenInvitesForEmail } from './invites.store.ts'
import { deleteMembership, findMembership, listProjectMembers, lockOwners, updateMembershipRole } from './users.store.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'

export interface MemberView {
  user_id: string
  email: string
  role: Role
  created_at: number
}

export async function listMembers(db: Database, projectId: string) {
  const [members, invites] = await Promise.all([listProjectMembers(db, projectId), listOpenInvites(db, projectId, new Date())])
  return {
    members: members.map((m) => ({ user_id: m.user_id, email: m.email, role: m.role, created_at: m.created_at.getTime() })),
    invites: invites.map((i) => ({ id: i.id, email: i.email, role: i.role, created_at: i.created_at.getTime(), expires_at: i.expires_at.getTime() })),
  }
}

/**
 * Changes a member's role; 409 last_owner when it would leave the project
 * without an owner. An owner who stops being one loses the invites they made:
 * a link they handed out (to a second address of their own, say) must not
 * bring back the power they lost.
 */
export async function changeRole(db: Database, audit: AuditContext, projectId: string, userId: string, role: Role): Promise<MemberView> {
  return db.transaction(async (tx) => {
    const owners = await lockOwners(tx, projectId)
    const member = await findMembership(tx, projectId, userId)
    if (!member) throw new AppError('member_not_found')
    if (member.role === 'owner' && role !== 'owner' && owners.length <= 1) throw new AppError('last_owner')
    await updateMembershipRole(tx, projectId, userId, role)
    const invitesRevoked = member.role === 'owner' && role !== 'owner' ? await revokeOpenInvitesBy(tx, projectId, userId, new Date()) : 0
    await recordAudit(tx, { projectId, context: audit, action: 'member.role_change', target: { type: 'user', id: userId }, details: { email: member.email, from: member.role, to: role, invites_revoked: invitesRevoked } })
    return { user_id: userId, email: member.email, role, created_at: member.created_at.getTime() }
  })
}

/**
 * Removes a member (their sessions lose the project at once); 409 last_owner
 * for the only owner. `keysMadeBy` (projects/, which owns API keys) lists the
 * member's keys that still work: they keep working, and the entry and the
 * answer name them so an owner can revoke them (docs/decisions.md).
 */
export async function removeMember<K extends { id: string }>(
  db: Database,
  audit: AuditContext,
  projectId: string,
  userId: string,
  keysMadeBy: (tx: Queryable) => Promise<K[]> = async () => [],
): Promise<K[]> {
  return db.transaction(async (tx) => {
    const owners = await lockOwners(tx, projectId)
    const member = await findMembership(tx, projectId, userId)
    if (!member) throw new AppError('member_not_found')
    if (member.role === 'owner' && owners.length <= 1) throw new AppError('last_owner')
    await deleteMembership(tx, projectId, userId)
    const now = new Date()
    const invitesRevoked = (await revokeOpenInvitesForEmail(tx, projectId, member.email, now)) + (await revokeOpenInvitesBy(tx, projectId, userId, now))
    const keys = await keysMadeBy(tx)
    await recordAudit(tx, { projectId, context: audit, action: 'member.remove', target: { type: 'user', id: userId }, details: { email: member.email, role: member.role, invites_revoked: invitesRevoked, active_api_keys: keys.map((k) => k.id) } })
    return keys
  })
}

export async function cancelInvite(db: Database, audit: AuditContext, projectId: string, inviteId: string): Promise<void> {
  await db.transaction(async (tx) => {
    if (!(await revokeInvite(tx, projectId, inviteId, new Date()))) throw new AppError('invite_not_found')
    await recordAudit(tx, { projectId, context: audit, action: 'invite.revoke', target: { type: 'invite', id: inviteId } })
  })
}
