// Entries about an account rather than a project's data (sign-in, sign-out,
// password change and reset): the audit log is per project, so the entry is
// written in every project the account is a member of. Each project's owners
// see what happened to the people who can act in it, and nothing of people
// who cannot (docs/decisions.md "Passwords and account events").
import type { Queryable } from '../platform/db/database.ts'
import type { AuditContext, RequestOrigin } from '../audit/audit-context.ts'
import { recordAudit, type AuditAction } from '../audit/audit.store.ts'
import { listUserMemberships } from './users.store.ts'

/**
 * Records `action` about the user in each of their projects, with q (the
 * change's transaction, when there is one). `context.actor` is the user
 * themselves unless the operator acted (a reset link made).
 */
export async function recordAccountEvent(
  q: Queryable,
  context: RequestOrigin & { actor?: AuditContext['actor'] },
  userId: string,
  action: AuditAction,
  details: Record<string, unknown> = {},
): Promise<void> {
  for (const m of await listUserMemberships(q, userId)) {
    const actor = context.actor ?? { type: 'user' as const, id: userId, role: m.role }
    await recordAudit(q, { projectId: m.project_id, context: { ...context, actor }, action, target: { type: 'user', id: userId }, details })
  }
}
