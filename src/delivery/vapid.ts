// RFC 8292 VAPID: the `Authorization: vapid t=<JWT>, k=<public key>` header a
// push service uses to attribute a push to the project's key pair. Signing an
// ES256 JWT costs about as much as encrypting a push, and a token is valid for
// hours, so the fan-out signs once per (project, push service origin) and
// reuses the header (VapidTokenCache).
import { createPrivateKey, sign, type KeyObject } from 'node:crypto'
import { isIP } from 'node:net'

/** base64url keys as stored per project: a 65-byte uncompressed P-256 point and a 32-byte scalar. */
export interface VapidKeys {
  publicKey: string
  privateKey: string
}

/** Token lifetime. RFC 8292 allows up to 24 h and Apple refuses more than one day;
 *  12 h keeps well clear of that limit and of clock skew. */
export const VAPID_TOKEN_LIFETIME_SEC = 12 * 3600
/** A cached token is replaced this long before it expires, so a push in flight never carries a stale one. */
export const VAPID_RENEW_BEFORE_SEC = 3600

// base64url of {"typ":"JWT","alg":"ES256"}: the same for every token.
const JWT_HEADER = Buffer.from(JSON.stringify({ typ: 'JWT', alg: 'ES256' })).toString('base64url')

/** Builds the signing KeyObject from the raw keys (via JWK, the one raw-key import node:crypto has for EC). */
export function vapidPrivateKeyObject(keys: VapidKeys): KeyObject {
  const point = Buffer.from(keys.publicKey, 'base64url')
  const scalar = Buffer.from(keys.privateKey, 'base64url')
  if (point.length !== 65 || point[0] !== 0x04) throw new Error('VAPID public key must be a 65-byte uncompressed P-256 point')
  if (scalar.length !== 32) throw new Error('VAPID private key must be a 32-byte P-256 scalar')
  return createPrivateKey({
    key: {
      kty: 'EC',
      crv: 'P-256',
      x: point.subarray(1, 33).toString('base64url'),
      y: point.subarray(33).toString('base64url'),
      d: scalar.toString('base64url'),
    },
    format: 'jwk',
  })
}

/** Signs a token with an already built key. `audience` is the push service's origin. */
export function signVapidAuthorization(
  key: KeyObject,
  publicKey: string,
  audience: string,
  subject: string,
  nowSec = Math.floor(Date.now() / 1000),
): { header: string; expiresAt: number } {
  const expiresAt = nowSec + VAPID_TOKEN_LIFETIME_SEC
  const claims = Buffer.from(JSON.stringify({ aud: audience, exp: expiresAt, sub: subject })).toString('base64url')
  const input = `${JWT_HEADER}.${claims}`
  // JWS wants the raw r|s signature (64 bytes), not DER.
  const signature = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')
  return { header: `vapid t=${input}.${signature}, k=${publicKey}`, expiresAt }
}

/**
 * The Authorization header value for one push service origin.
 * `expiresAt` is the token's exp, in Unix seconds.
 */
export function vapidAuthorization(
  keys: VapidKeys,
  audience: string,
  subject: string,
  nowSec = Math.floor(Date.now() / 1000),
): { header: string; expiresAt: number } {
  return signVapidAuthorization(vapidPrivateKeyObject(keys), keys.publicKey, audience, subject, nowSec)
}

// RFC 6761 names that can never be a reachable contact. Apple answers 403
// BadJwtToken for localhost and .invalid; .test is refused on the same grounds.
// .example / example.com stay allowed: they are the documented placeholder
// (RFC 8292's own example and Herald's default subject use example.com).
const RESERVED_SUFFIXES = ['.localhost', '.invalid', '.test']

function hostProblem(host: string): string | null {
  const name = host.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '')
  if (name === 'localhost' || RESERVED_SUFFIXES.some((suffix) => name.endsWith(suffix))) {
    return `VAPID subject host ${host} is reserved and never a reachable contact; push services such as Apple refuse it`
  }
  if (isIP(name) !== 0) return `VAPID subject host ${host} must be a domain name, not an IP address`
  if (!name.includes('.')) return `VAPID subject host ${host} is not a public domain name`
  return null
}

/**
 * Checks the VAPID `sub` claim: a `mailto:` address or an `https:` URL whose
 * host could be a real contact. Returns an error message, or null when fine.
 */
export function validateVapidSubject(subject: string): string | null {
  if (typeof subject !== 'string' || subject.length === 0) return 'VAPID subject is required'
  if (subject.length > 512) return 'VAPID subject is longer than 512 characters'
  if (subject.startsWith('mailto:')) {
    const match = /^mailto:[^@\s/?#]+@([^@\s/?#]+)$/.exec(subject)
    if (!match) return 'VAPID subject mailto: must hold one address, like mailto:ops@example.com'
    return hostProblem(match[1])
  }
  if (subject.startsWith('https:')) {
    let url: URL
    try {
      url = new URL(subject)
    } catch {
      return 'VAPID subject is not a valid https: URL'
    }
    if (!url.hostname) return 'VAPID subject https: URL has no host'
    return hostProblem(url.hostname)
  }
  return 'VAPID subject must be a mailto: address or an https: URL'
}

interface CachedKey {
  publicKey: string
  privateKey: string
  key: KeyObject
}

interface CachedToken {
  header: string
  expiresAt: number
  publicKey: string
  subject: string
}

export interface VapidTokenCacheOptions {
  /** Clock in Unix seconds; default Date.now. Tests inject one. */
  nowSec?: () => number
  /** Most tokens kept; the oldest goes first. Default 10,000 (a few push services x many projects). */
  maxEntries?: number
}

/**
 * Authorization headers per (project, key pair, push service origin), renewed
 * VAPID_RENEW_BEFORE_SEC before expiry, and signing keys per (project, pair):
 * a project with several pairs (issue 23) has one token per pair and origin.
 * A changed key pair or subject makes a new token at once.
 */
export class VapidTokenCache {
  private readonly keys = new Map<string, CachedKey>()
  private readonly tokens = new Map<string, CachedToken>()
  private readonly nowSec: () => number
  private readonly maxEntries: number

  constructor(options: VapidTokenCacheOptions = {}) {
    this.nowSec = options.nowSec ?? (() => Math.floor(Date.now() / 1000))
    this.maxEntries = options.maxEntries ?? 10_000
  }

  /**
   * The Authorization header for a push to endpointUrl; the token's aud is the
   * endpoint's origin. `keyId` names the project's pair (vapid_keys.id); '' for a project's only pair.
   */
  get(projectId: string, keys: VapidKeys, endpointUrl: URL | string, subject: string, keyId = ''): string {
    const origin = (typeof endpointUrl === 'string' ? new URL(endpointUrl) : endpointUrl).origin
    if (origin === 'null') throw new Error(`push endpoint has no origin: ${String(endpointUrl)}`)
    const now = this.nowSec()
    const pairKey = `${projectId} ${keyId}`
    const tokenKey = `${pairKey} ${origin}`
    const cached = this.tokens.get(tokenKey)
    if (
      cached &&
      cached.publicKey === keys.publicKey &&
      cached.subject === subject &&
      now < cached.expiresAt - VAPID_RENEW_BEFORE_SEC
    ) {
      return cached.header
    }
    const { header, expiresAt } = signVapidAuthorization(this.keyFor(pairKey, keys), keys.publicKey, origin, subject, now)
    this.remember(this.tokens, tokenKey, { header, expiresAt, publicKey: keys.publicKey, subject })
    return header
  }

  /** Forgets a project's key and tokens, e.g. after its VAPID keys were rotated or it was deleted. */
  forget(projectId: string): void {
    for (const pairKey of this.keys.keys()) {
      if (pairKey.startsWith(`${projectId} `)) this.keys.delete(pairKey)
    }
    for (const tokenKey of this.tokens.keys()) {
      if (tokenKey.startsWith(`${projectId} `)) this.tokens.delete(tokenKey)
    }
  }

  private keyFor(pairKey: string, keys: VapidKeys): KeyObject {
    const cached = this.keys.get(pairKey)
    if (cached && cached.publicKey === keys.publicKey && cached.privateKey === keys.privateKey) return cached.key
    const key = vapidPrivateKeyObject(keys)
    this.remember(this.keys, pairKey, { publicKey: keys.publicKey, privateKey: keys.privateKey, key })
    return key
  }

  // Insertion order doubles as age: re-inserting moves an entry to the end.
  private remember<T>(map: Map<string, T>, key: string, value: T): void {
    map.delete(key)
    map.set(key, value)
    if (map.size > this.maxEntries) map.delete(map.keys().next().value as string)
  }
}
