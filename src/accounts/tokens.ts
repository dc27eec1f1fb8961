// Random secrets handed to a browser (session ids, invite tokens): 32 random
// bytes, base64url, stored only as their SHA-256. A fast hash is enough for a
// 256-bit random secret, unlike a password.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

export function newToken(): { token: string; hash: string } {
  const token = randomBytes(32).toString('base64url')
  return { token, hash: hashToken(token) }
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/** A token of ours is 43 base64url characters; anything else is refused before a query. */
export function isTokenShaped(value: unknown): value is string {
  return typeof value === 'string' && /^[A-Za-z0-9_-]{43}$/.test(value)
}

/**
 * The CSRF token of a session: an HMAC of the session's secret id. Only who
 * holds the cookie's value can compute it, and the cookie is HttpOnly, so a
 * page of another site can neither read nor forge it; nothing more is stored.
 */
export function csrfTokenFor(sessionId: string): string {
  return createHmac('sha256', sessionId).update('herald csrf').digest('base64url')
}

export function csrfTokenMatches(sessionId: string, given: string): boolean {
  const a = Buffer.from(csrfTokenFor(sessionId))
  const b = Buffer.from(given)
  return a.length === b.length && timingSafeEqual(a, b)
}
