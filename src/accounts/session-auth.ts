// Who a request with a session cookie is: the session (alive: within its
// absolute and idle limits), checked against the CSRF token on every request
// that changes something. Used by projects/project-auth.ts (bearer routes)
// and by the /v1/session routes.
import type { FastifyRequest } from 'fastify'
import type { Config } from '../platform/config.ts'
import type { Database } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { sessionCookie } from './session-cookie.ts'
import { findLiveSession, touchSession, type SessionRow } from './sessions.store.ts'
import { csrfTokenMatches, hashToken, isTokenShaped } from './tokens.ts'

/** last_seen_at is written at most this often: a busy dashboard does not write on every request. */
const TOUCH_EVERY_MS = 60_000
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])
export const CSRF_HEADER = 'x-csrf-token'

export interface LiveSession extends SessionRow {
  /** The cookie's value (the secret id), to derive the CSRF token from. */
  id: string
  email: string
}

/** Whether the request carries a session cookie at all (bearerAuth picks the session path on it). */
export function hasSessionCookie(request: FastifyRequest): boolean {
  return sessionCookie(request) !== null
}

/** The request's live session, or 401 invalid_session; 403 csrf_token_invalid when it changes something without the token. */
export async function authenticateSession(
  db: Database,
  config: Pick<Config, 'sessionIdleMs'>,
  request: FastifyRequest,
): Promise<LiveSession> {
  const id = sessionCookie(request)
  if (!isTokenShaped(id)) throw new AppError('invalid_session')
  const now = new Date()
  const session = await findLiveSession(db, hashToken(id), now, config.sessionIdleMs)
  if (!session) throw new AppError('invalid_session')
  if (!SAFE_METHODS.has(request.method)) {
    const given = request.headers[CSRF_HEADER]
    if (typeof given !== 'string' || !csrfTokenMatches(id, given)) throw new AppError('csrf_token_invalid')
  }
  if (now.getTime() - session.last_seen_at.getTime() >= TOUCH_EVERY_MS) await touchSession(db, session.id_hash, now)
  return { ...session, id }
}
