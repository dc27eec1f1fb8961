// The audit_log table (migration 0015): the one module that writes it.
// Services call recordAudit with their own transaction, so an entry commits
// with its change or not at all (docs/decisions.md "Audit log").
import type { Queryable } from '../platform/db/database.ts'
import { newId } from '../platform/ids.ts'
import type { AuditContext } from './audit-context.ts'

/** Every action the log records (docs/decisions.md "Audit log" has the details of each). */
export const AUDIT_ACTIONS = [
  'broadcast.send',
  'broadcast.schedule',
  'broadcast.stop',
  'broadcast.cancel',
  'broadcast.experiment_decide',
  'subscriber.erase',
  'subscriber.tags',
  'subscriber.import',
  'group.create',
  'group.update',
  'group.delete',
  'group.members.add',
  'group.members.remove',
  'template.create',
  'template.update',
  'template.delete',
  'webhook.create',
  'webhook.update',
  'webhook.delete',
  'webhook.rotate_secret',
  'webhook.test',
  'api_key.create',
  'api_key.revoke',
  'member.invite',
  'member.join',
  'member.role_change',
  'member.remove',
  'invite.revoke',
  'project.update',
  'vapid_key.rotate',
  'vapid_key.retire',
  'session.sign_in',
  'session.sign_in_failed',
  'session.sign_out',
  'session.sign_out_everywhere',
  'account.password_change',
  'account.password_reset_link',
  'account.password_reset',
] as const
export type AuditAction = (typeof AUDIT_ACTIONS)[number]

export type AuditTargetType = 'broadcast' | 'subscriber' | 'external_id' | 'group' | 'template' | 'webhook' | 'api_key' | 'user' | 'invite' | 'project' | 'vapid_key'

export interface AuditEntry {
  projectId: string
  context: AuditContext
  action: AuditAction
  target: { type: AuditTargetType; id: string | null }
  /** Small, never a secret nor notification content: counts, field names, roles. */
  details?: Record<string, unknown>
}

/** Writes one entry with q, which must be the transaction of the change it records. Returns its id. */
export async function recordAudit(q: Queryable, entry: AuditEntry): Promise<string> {
  const now = Date.now()
  const id = newId('aud', now)
  const { actor, ip, userAgent } = entry.context
  await q.query(
    `INSERT INTO audit_log (id, project_id, actor_type, actor_id, action, target_type, target_id, details, ip, user_agent, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      id,
      entry.projectId,
      actor.type,
      actor.type === 'operator' ? null : actor.id,
      entry.action,
      entry.target.type,
      entry.target.id,
      JSON.stringify(entry.details ?? {}),
      ip,
      userAgent,
      new Date(now),
    ],
  )
  return id
}

export interface AuditRow {
  id: string
  actor_type: 'user' | 'key' | 'operator'
  actor_id: string | null
  /** The user's email, when the actor is a user. */
  actor_email: string | null
  /** The key's name and lookup prefix, when the actor is a key of this project. */
  actor_key_name: string | null
  actor_key_prefix: string | null
  action: string
  target_type: string | null
  target_id: string | null
  details: Record<string, unknown>
  ip: string | null
  user_agent: string | null
  created_at: Date
}

export interface AuditFilter {
  limit: number
  cursor?: string
  actorId?: string
  /** Exact, or every action under it when it ends with a dot ("broadcast."). */
  action?: string
  targetId?: string
  since?: Date
  until?: Date
}

/** One project's entries, newest first, after the cursor; the key is looked up in this project only. */
export async function listAuditEntries(q: Queryable, projectId: string, filter: AuditFilter): Promise<AuditRow[]> {
  const prefix = filter.action?.endsWith('.') ?? false
  // LIKE reads _ as any character: escaped, so "api_key." matches only what it says.
  const action = prefix ? filter.action!.replace(/_/g, '\\_') : filter.action
  const result = await q.query<AuditRow>(
    `SELECT a.id, a.actor_type, a.actor_id, u.email AS actor_email, k.name AS actor_key_name, k.prefix AS actor_key_prefix,
            a.action, a.target_type, a.target_id, a.details, a.ip, a.user_agent, a.created_at
       FROM audit_log a
       LEFT JOIN users u ON a.actor_type = 'user' AND u.id = a.actor_id
       LEFT JOIN api_keys k ON a.actor_type = 'key' AND k.id = a.actor_id AND k.project_id = a.project_id
      WHERE a.project_id = $1
        AND ($2::text IS NULL OR a.id < $2)
        AND ($3::text IS NULL OR a.actor_id = $3)
        AND ($4::text IS NULL OR (CASE WHEN $5::boolean THEN a.action LIKE $4 || '%' ELSE a.action = $4 END))
        AND ($6::text IS NULL OR a.target_id = $6)
        AND ($7::timestamptz IS NULL OR a.created_at >= $7)
        AND ($8::timestamptz IS NULL OR a.created_at < $8)
      ORDER BY a.id DESC
      LIMIT $9`,
    [projectId, filter.cursor ?? null, filter.actorId ?? null, action ?? null, prefix, filter.targetId ?? null, filter.since ?? null, filter.until ?? null, filter.limit],
  )
  return result.rows
}

/** Deletes at most `batch` entries older than `before` (every project); returns how many. */
export async function pruneAuditEntries(q: Queryable, before: Date, batch: number): Promise<number> {
  const result = await q.query(
    `DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE created_at < $1 ORDER BY created_at LIMIT $2)`,
    [before, batch],
  )
  return result.rowCount
}
