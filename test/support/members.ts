// People for the session and role tests: invite someone into a project with a
// role, accept the invite (setting their password), and sign them in.
import type { LightMyRequestResponse } from 'fastify'
import { acceptInvite, createInvite } from '../../src/accounts/invites.service.ts'
import type { Role } from '../../src/access/access.ts'
import { findUserByEmail } from '../../src/accounts/users.store.ts'
import type { TestApp } from './app.ts'
import { CLI_AUDIT_CONTEXT } from '../../src/audit/audit-context.ts'

export const PASSWORD = 'correct horse battery'

/** The invite link's token (after #/invite/). */
export const tokenOf = (inviteUrl: string): string => inviteUrl.slice(inviteUrl.lastIndexOf('/') + 1)

/**
 * Makes `email` a member of the project with `role` (through an invite, as a
 * person would: a new email chooses `password`, an existing account accepts
 * as itself, as if signed in); returns the user id.
 */
export async function addMember(t: TestApp, projectId: string, email: string, role: Role, password = PASSWORD): Promise<string> {
  const invite = await createInvite(t.ctx.db, t.ctx.config, CLI_AUDIT_CONTEXT, { projectId, email, role, invitedBy: null })
  const existing = await findUserByEmail(t.ctx.db, invite.email)
  const how = existing?.password_hash ? { userId: existing.id } : { password }
  const joined = await acceptInvite(t.ctx.db, t.ctx.config, { ip: null, userAgent: null }, tokenOf(invite.invite_url), how)
  return joined.user_id
}

export interface SignedIn {
  /** Cookie header for reads. */
  cookie: { cookie: string }
  /** Cookie and CSRF token, for requests that change something. */
  headers: { cookie: string; 'x-csrf-token': string }
  csrf: string
  /** The session's id in the cookie (what the browser holds). */
  id: string
  body: any
  res: LightMyRequestResponse
}

/** The session cookie's value from a Set-Cookie answer. */
export function cookieValue(res: LightMyRequestResponse): string {
  const header = [res.headers['set-cookie']].flat()[0] ?? ''
  return /herald_session=([^;]*)/.exec(String(header))?.[1] ?? ''
}

export async function signIn(t: TestApp, email: string, password = PASSWORD, extra: Record<string, unknown> = {}, ip = '127.0.0.1'): Promise<SignedIn> {
  const res = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { email, password, ...extra }, headers: { 'x-forwarded-for': ip } })
  if (res.statusCode !== 200) throw new Error(`sign-in: ${res.statusCode} ${res.body}`)
  const id = cookieValue(res)
  const csrf = res.json().csrf_token
  return { cookie: { cookie: `herald_session=${id}` }, headers: { cookie: `herald_session=${id}`, 'x-csrf-token': csrf }, csrf, id, body: res.json(), res }
}
