// Passwords, hashed with Node's scrypt (RFC 7914): memory-hard, so a stolen
// users table costs an attacker 32 MiB and tens of milliseconds per guess.
// Stored as `scrypt$N$r$p$salt$hash` (base64url), so the parameters can be
// raised later and old hashes still verify. A password is never stored or
// logged in clear.
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto'
import { AppError } from '../platform/errors.ts'
import { COMMON_PASSWORDS } from './common-passwords.ts'

/**
 * N = 2^15, r = 8, p = 1: 128 * N * r = 32 MiB of memory per hash, about
 * 50-100 ms on one core of the development machine. OWASP's floor for scrypt
 * is N = 2^17 with r = 8 (128 MiB); 32 MiB keeps a burst of sign-ins on a small
 * server from running out of memory, and the per-account and per-IP limits
 * on sign-in (login.service.ts) bound online guessing.
 */
export const SCRYPT_PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const
/**
 * N for the hashes made under NODE_ENV=test: 2^12 (4 MiB, ~20 ms on a slow
 * 2-core machine against ~180 ms at 2^15). The suite hashes and checks ~450
 * passwords outside its browser files, ~80 s of CPU at 2^15 (docs/testing.md).
 * A hash records its N, so checking one is the same code either way; an
 * unknown email is checked against a dummy hash made at the same N. Never
 * run a deployment with NODE_ENV=test: its hashes would stay at 2^12.
 */
const TEST_SCRYPT_N = 2 ** 12

/** scrypt's N for the new hashes of a process: SCRYPT_PARAMS.N, but TEST_SCRYPT_N when NODE_ENV=test. */
export function scryptCost(env: 'development' | 'production' | 'test'): number {
  return env === 'test' ? TEST_SCRYPT_N : SCRYPT_PARAMS.N
}
const SALT_BYTES = 16
const KEY_BYTES = 32
/** Node refuses more than 32 MiB by default; 128 * N * r is exactly that, so allow twice it. */
const maxmem = (n: number, r: number) => 256 * n * r

/** Passwords are 10 to 256 characters (the routes' schemas say so; the long end bounds the work). */
export const PASSWORD_MIN = 10
export const PASSWORD_MAX = 256

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  const options: ScryptOptions = { N: n, r, p, maxmem: maxmem(n, r) }
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, options, (err, key) => (err ? reject(err) : resolve(key)))
  })
}

/** A new hash of the password; `N` is scrypt's N (scryptCost(config.env)), SCRYPT_PARAMS.N unless given. */
export async function hashPassword(password: string, N: number = SCRYPT_PARAMS.N): Promise<string> {
  const { r, p } = SCRYPT_PARAMS
  const salt = randomBytes(SALT_BYTES)
  const key = await derive(password, salt, N, r, p)
  return ['scrypt', N, r, p, salt.toString('base64url'), key.toString('base64url')].join('$')
}

/** Whether the password matches the stored hash; compared in constant time. A malformed hash matches nothing. */
export async function passwordMatches(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [n, r, p] = parts.slice(1, 4).map(Number)
  const salt = Buffer.from(parts[4], 'base64url')
  const expected = Buffer.from(parts[5], 'base64url')
  const key = await derive(password, salt, n, r, p)
  return key.length === expected.length && timingSafeEqual(key, expected)
}

/**
 * A hash of nothing anyone knows, made once per N: signing in as an unknown email
 * (or a user who has not set a password yet) checks the password against it,
 * so the answer takes as long as for a known one and does not tell which
 * emails have accounts.
 */
const dummyHashes = new Map<number, Promise<string>>()
export async function spendPasswordCheck(password: string, n: number = SCRYPT_PARAMS.N): Promise<false> {
  let dummy = dummyHashes.get(n)
  if (!dummy) dummyHashes.set(n, (dummy = hashPassword(randomBytes(16).toString('hex'), n)))
  await passwordMatches(password, await dummy)
  return false
}

/** Fewer distinct characters than this ("aaaaaaaaaa", "ababababab") is no password whatever its length. */
const MIN_DISTINCT_CHARACTERS = 4

/**
 * Why `password` may not become the password of `email`, or null when it may.
 * The length bounds are the schema's (10 characters: NIST SP 800-63B's floor
 * for a password chosen without other rules is 8; 256: the scrypt work per
 * check stays flat); this adds what a guesser tries first: the email or its
 * name part, very common passwords (common-passwords.ts) and a handful of
 * characters repeated. No composition rules (a digit, a symbol): they make
 * passwords harder to remember, not to guess (SP 800-63B 3.1.1.2).
 */
export function passwordProblem(password: string, email: string): string | null {
  const plain = password.normalize('NFC')
  if ([...plain].length < PASSWORD_MIN) return `must be at least ${PASSWORD_MIN} characters`
  if ([...plain].length > PASSWORD_MAX) return `must be at most ${PASSWORD_MAX} characters`
  const folded = plain.toLowerCase().replace(/\s+/g, '')
  const address = email.trim().toLowerCase()
  const name = address.slice(0, address.indexOf('@'))
  // The name part with only digits or symbols around it ("carol.smith2024!") is as guessable as the name.
  const rest = name.length >= 3 ? folded.replace(name, '') : folded
  if (folded === address || folded === name || (rest !== folded && /^[^\p{L}]*$/u.test(rest))) {
    return 'must not be your email address or contain its name part'
  }
  if (COMMON_PASSWORDS.has(folded)) return 'is one of the most common passwords; choose another'
  if (new Set(folded).size < MIN_DISTINCT_CHARACTERS) return `must have at least ${MIN_DISTINCT_CHARACTERS} different characters`
  return null
}

/** Throws 400 weak_password (issues: the field) when passwordProblem finds one. */
export function checkNewPassword(password: string, email: string, field = 'password'): void {
  const problem = passwordProblem(password, email)
  if (problem) throw new AppError('weak_password', `The new password ${problem}.`, { issues: [{ path: field, message: problem }] })
}
