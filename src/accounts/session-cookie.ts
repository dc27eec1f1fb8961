// The session cookie: an opaque random id, HttpOnly (no script reads it),
// SameSite=Lax (no cross-site POST, fetch or frame carries it), Secure unless
// Herald is served over plain http on localhost, where browsers would refuse
// to store a Secure cookie sent over http. In production it is Secure always
// (serve refuses a public URL that is not https there anyway).
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../platform/config.ts'

export const SESSION_COOKIE = 'herald_session'
/** Only Herald's API needs it: the dashboard's pages and the SDK's files are served without it. */
const COOKIE_PATH = '/v1'

/** The session cookie's value, or null. Parsed by hand: one cookie, no dependency. */
export function sessionCookie(request: FastifyRequest): string | null {
  const header = request.headers.cookie
  if (typeof header !== 'string') return null
  for (const part of header.split(';')) {
    const at = part.indexOf('=')
    if (at > 0 && part.slice(0, at).trim() === SESSION_COOKIE) return part.slice(at + 1).trim()
  }
  return null
}

/** Plain http is allowed only for a public URL on the loopback names a developer uses. */
export function secureCookies(config: Pick<Config, 'publicUrl' | 'env'>): boolean {
  if (config.env === 'production') return true
  const url = new URL(config.publicUrl)
  return !(url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname))
}

function cookie(config: Pick<Config, 'publicUrl' | 'env'>, value: string, maxAgeSeconds: number): string {
  const parts = [`${SESSION_COOKIE}=${value}`, `Path=${COOKIE_PATH}`, `Max-Age=${maxAgeSeconds}`, 'HttpOnly', 'SameSite=Lax']
  if (secureCookies(config)) parts.push('Secure')
  return parts.join('; ')
}

/** Sets the cookie until the session's absolute end (the idle limit is the server's to check). */
export function setSessionCookie(reply: FastifyReply, config: Pick<Config, 'publicUrl' | 'env'>, id: string, expiresAt: Date): void {
  reply.header('Set-Cookie', cookie(config, id, Math.max(0, Math.floor((expiresAt.getTime() - Date.now()) / 1000))))
}

export function clearSessionCookie(reply: FastifyReply, config: Pick<Config, 'publicUrl' | 'env'>): void {
  reply.header('Set-Cookie', cookie(config, '', 0))
}
