// API keys: `hk_live_` + 32 random base62 characters, shown once, stored as a
// SHA-256 hash. The first 12 random characters are kept in clear as a lookup
// prefix; the hash of the whole key is then compared in constant time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

export const API_KEY_PREFIX = 'hk_live_'
const RANDOM_LENGTH = 32
const LOOKUP_LENGTH = 12
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

function randomBase62(length: number): string {
  let out = ''
  while (out.length < length) {
    // 248 = 4 * 62: bytes above it are skipped so every character is equally likely.
    for (const byte of randomBytes(length)) if (byte < 248 && out.length < length) out += BASE62[byte % 62]
  }
  return out
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

export interface NewApiKey {
  key: string
  prefix: string
  hash: string
}

export function generateApiKey(): NewApiKey {
  const key = API_KEY_PREFIX + randomBase62(RANDOM_LENGTH)
  return { key, prefix: lookupPrefix(key)!, hash: hashSecret(key) }
}

/** The lookup prefix of a well-formed key, or null for anything that cannot be a key. */
export function lookupPrefix(key: string): string | null {
  if (!key.startsWith(API_KEY_PREFIX) || key.length !== API_KEY_PREFIX.length + RANDOM_LENGTH) return null
  const random = key.slice(API_KEY_PREFIX.length)
  if (!/^[0-9A-Za-z]+$/.test(random)) return null
  return random.slice(0, LOOKUP_LENGTH)
}

export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex')
  const b = Buffer.from(storedHash, 'hex')
  return a.length === b.length && timingSafeEqual(a, b)
}

// What answers show of a key (hk_live_ and 6 characters) is access/masking.ts
// shownKeyPrefix, shared with the audit log, which may not import projects/.
export { shownKeyPrefix as shownPrefix } from '../access/masking.ts'
