// Signing in and out, and what a session sees of itself: the user, the
// project it acts in with the role there, every project of the user, and the
// CSRF token that state-changing requests must carry.
import type { Config } from '../platform/config.ts'
import type { Database } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { allows, PERMISSIONS, type Permission, type Role } from '../access/access.ts'
import { passwordMatches, scryptCost, spendPasswordCheck } from './passwords.ts'
import type { LiveSession } from './session-auth.ts'
import { deleteDeadSessions, deleteSession, deleteUserSessions, insertSession, setSessionProject } from './sessions.store.ts'
import { csrfTokenFor, newToken } from './tokens.ts'
import { findUserByEmail, listUserMemberships } from './users.store.ts'
import type { RequestOrigin } from '../audit/audit-context.ts'
import { recordAccountEvent } from './account-audit.ts'

/** Where a request came from, for the audit entries about the account (the actor is the account itself). */

export interface SessionView {
  user: { id: string; email: string }
  /** The project requests act in when they name none (X-Herald-Project), with the role there; null for a user of no project. */
  project: { id: string; name: string; role: Role } | null
  projects: Array<{ id: string; name: string; role: Role }>
  /** What the role allows in that project (access/access.ts), so the dashboard can hide what it cannot do. */
  permissions: Permission[]
  csrf_token: string
  expires_at: number
}

/** Emails are compared lower-cased and trimmed. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase()
}

async function view(db: Database, session: Omit<LiveSession, 'id_hash' | 'created_at' | 'last_seen_at'>): Promise<SessionView> {
  const memberships = await listUserMemberships(db, session.user_id)
  const projects = memberships.map((m) => ({ id: m.project_id, name: m.project_name, role: m.role }))
  const current = projects.find((p) => p.id === session.project_id) ?? null
  return {
    user: { id: session.user_id, email: session.email },
    project: current,
    projects,
    permissions: current ? PERMISSIONS.filter((p) => allows({ type: 'user', id: session.user_id, role: current.role }, p)) : [],
    csrf_token: csrfTokenFor(session.id),
    expires_at: session.expires_at.getTime(),
  }
}

export function describeSession(db: Database, session: LiveSession): Promise<SessionView> {
  return view(db, session)
}

/**
 * Checks the password and opens a session in `projectId` (or the user's
 * first project). A wrong password and an unknown email answer alike, after
 * the same work. Returns the cookie's id, shown this once.
 */
export async function signIn(
  db: Database,
  config: Pick<Config, 'sessionIdleMs' | 'sessionMaxMs' | 'env'>,
  context: RequestOrigin,
  input: { email: string; password: string; project?: string },
): Promise<{ id: string; view: SessionView }> {
  const user = await findUserByEmail(db, normalizeEmail(input.email))
  const ok = user?.password_hash ? await passwordMatches(input.password, user.password_hash) : await spendPasswordCheck(input.password, scryptCost(config.env))
  if (!user) throw new AppError('invalid_credentials')
  if (!ok) {
    // Someone tried this account's password: its projects' owners see when and from where.
    await db.transaction((tx) => recordAccountEvent(tx, context, user.id, 'session.sign_in_failed'))
    throw new AppError('invalid_credentials')
  }
  const memberships = await listUserMemberships(db, user.id)
  const chosen = input.project === undefined ? memberships[0] : memberships.find((m) => m.project_id === input.project)
  // A project the user is not a member of looks like one that does not exist.
  if (input.project !== undefined && !chosen) throw new AppError('project_not_found')
  const now = new Date()
  const { token, hash } = newToken()
  const session = {
    id_hash: hash,
    user_id: user.id,
    project_id: chosen?.project_id ?? null,
    created_at: now,
    last_seen_at: now,
    expires_at: new Date(now.getTime() + config.sessionMaxMs),
  }
  await db.transaction(async (tx) => {
    await deleteDeadSessions(tx, user.id, now, config.sessionIdleMs)
    await insertSession(tx, session)
    await recordAccountEvent(tx, context, user.id, 'session.sign_in')
  })
  return { id: token, view: await view(db, { ...session, id: token, email: user.email }) }
}

/** Makes `projectId` the session's current project; 404 project_not_found for a project the user is not a member of. */
export async function switchProject(db: Database, session: LiveSession, projectId: string): Promise<SessionView> {
  const memberships = await listUserMemberships(db, session.user_id)
  if (!memberships.some((m) => m.project_id === projectId)) throw new AppError('project_not_found')
  await setSessionProject(db, session.id_hash, projectId)
  return view(db, { ...session, project_id: projectId })
}

export async function signOut(db: Database, context: RequestOrigin, session: LiveSession): Promise<void> {
  await db.transaction(async (tx) => {
    await deleteSession(tx, session.id_hash)
    await recordAccountEvent(tx, context, session.user_id, 'session.sign_out')
  })
}

/** Ends every session of the user, this one included; returns how many. */
export function signOutEverywhere(db: Database, context: RequestOrigin, session: LiveSession): Promise<number> {
  return db.transaction(async (tx) => {
    const count = await deleteUserSessions(tx, session.user_id)
    await recordAccountEvent(tx, context, session.user_id, 'session.sign_out_everywhere', { sessions_ended: count })
    return count
  })
}
