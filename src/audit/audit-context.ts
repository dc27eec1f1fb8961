// Who made a change and from where, as the audit log records it. A route
// builds one AuditContext from its request (auditContext) and hands it to the
// service, which passes it to recordAudit in the change's own transaction: the
// service never sees the request itself.
import type { FastifyRequest } from 'fastify'
import type { Actor } from '../access/access.ts'

/** The operator (HERALD_ADMIN_TOKEN, or the CLI on the server): one token, nobody in particular, so no id. */
export const OPERATOR = { type: 'operator' } as const
export type AuditActor = Actor | typeof OPERATOR

export interface AuditContext {
  actor: AuditActor
  /** The client's address as Fastify sees it (the connection's, or X-Forwarded-For from a proxy HERALD_TRUST_PROXY names); null from the CLI. */
  ip: string | null
  /** User-Agent as sent, cut to USER_AGENT_MAX characters; null when absent. */
  userAgent: string | null
}

/** A User-Agent is free text from the client: kept long enough to tell browsers and SDKs apart, no longer. */
export const USER_AGENT_MAX = 512

/** The CLI's changes (`herald projects|keys|users`): the operator at the server's own shell. */
export const CLI_AUDIT_CONTEXT: AuditContext = { actor: OPERATOR, ip: null, userAgent: 'herald-cli' }

/**
 * The audit context of a request: its authenticated actor (request.actor, set
 * by bearerAuth; pass OPERATOR on the operator routes), its IP and its
 * User-Agent. Throws when a bearer route forgot its hook: a change must never
 * be recorded as nobody's.
 */
export function auditContext(request: FastifyRequest, actor: AuditActor | undefined = request.actor): AuditContext {
  if (!actor) throw new Error(`auditContext: ${request.method} ${request.url} has no authenticated actor`)
  return {
    actor: actor.type === 'operator' ? OPERATOR : actor.type === 'key' ? { type: 'key', id: actor.id, scope: actor.scope } : { type: 'user', id: actor.id, role: actor.role },
    ...requestOrigin(request),
  }
}

/** Where a request came from, without who: its IP and User-Agent. */
export type RequestOrigin = Omit<AuditContext, 'actor'>

/** Where a request came from, for a service that learns the actor itself: accepting an invite (the user is known only once it joins), the account routes (accounts/account-audit.ts records the account as the actor). */
export function requestOrigin(request: FastifyRequest): RequestOrigin {
  const agent = request.headers['user-agent']
  return {
    ip: request.ip || null,
    userAgent: typeof agent === 'string' && agent !== '' ? agent.slice(0, USER_AGENT_MAX) : null,
  }
}
