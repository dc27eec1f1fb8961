import { createPublicKey, verify } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { generateVapidKeys } from '../projects/vapid-keys.ts'
import {
  VAPID_RENEW_BEFORE_SEC,
  VAPID_TOKEN_LIFETIME_SEC,
  VapidTokenCache,
  validateVapidSubject,
  vapidAuthorization,
  vapidPrivateKeyObject,
} from './vapid.ts'

// RFC 8292 §2.4, copied from the RFC text (line breaks removed).
const RFC_TOKEN =
  'eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJodHRwczovL3B1c2guZXhhbXBsZS5uZXQiLCJleHAiOjE0NTM1MjM3NjgsInN1YiI6Im1haWx0bzpwdXNoQGV4YW1wbGUuY29tIn0.i3CYb7t4xfxCDquptFOepC9GAu_HLGkMlMuCGSK2rpiUfnK9ojFwDXb1JrErtmysazNjjvW2L9OkSSHzvoD1oA'
const RFC_KEY = 'BA1Hxzyi1RUM1b5wjxsn7nGxAszw2u61m164i3MrAIxHF6YK5h4SDYic-dRuU_RCPCfA5aq9ojSwk5Y2EmClBPs'

const NOW = 1_700_000_000
const part = (value: string) => JSON.parse(Buffer.from(value, 'base64url').toString('utf8'))

/** Verifies an ES256 JWT with a raw base64url public key, independently of vapid.ts. */
function verifies(token: string, publicKey: string): boolean {
  const point = Buffer.from(publicKey, 'base64url')
  const key = createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') },
    format: 'jwk',
  })
  const [header, claims, signature] = token.split('.')
  return verify('sha256', Buffer.from(`${header}.${claims}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'))
}

function parseHeader(header: string) {
  const match = /^vapid t=([^,]+), k=(.+)$/.exec(header)
  if (!match) throw new Error(`not a vapid header: ${header}`)
  const [h, c] = match[1].split('.')
  return { token: match[1], k: match[2], jwtHeader: part(h), claims: part(c) }
}

describe('vapidAuthorization (RFC 8292)', () => {
  const keys = generateVapidKeys()

  it('signs a JWT that verifies with the public key and carries aud, exp, sub', () => {
    const { header, expiresAt } = vapidAuthorization(keys, 'https://fcm.googleapis.com', 'mailto:ops@herald.dev', NOW)
    const parsed = parseHeader(header)
    expect(parsed.k).toBe(keys.publicKey)
    expect(parsed.jwtHeader).toEqual({ typ: 'JWT', alg: 'ES256' })
    expect(parsed.claims).toEqual({ aud: 'https://fcm.googleapis.com', exp: NOW + 12 * 3600, sub: 'mailto:ops@herald.dev' })
    expect(expiresAt).toBe(NOW + VAPID_TOKEN_LIFETIME_SEC)
    expect(expiresAt - NOW).toBeLessThanOrEqual(24 * 3600)
    expect(verifies(parsed.token, keys.publicKey)).toBe(true)
    expect(verifies(parsed.token, generateVapidKeys().publicKey)).toBe(false)
  })

  it('the RFC 8292 §2.4 example token verifies with its key (and a changed claim does not)', () => {
    expect(verifies(RFC_TOKEN, RFC_KEY)).toBe(true)
    const [h, c, s] = RFC_TOKEN.split('.')
    expect(part(h)).toEqual({ typ: 'JWT', alg: 'ES256' })
    expect(part(c)).toEqual({ aud: 'https://push.example.net', exp: 1453523768, sub: 'mailto:push@example.com' })
    // Our JWT header encodes to the same bytes as the RFC's.
    expect(parseHeader(vapidAuthorization(keys, 'https://push.example.net', 'mailto:push@example.com', NOW).header).token.split('.')[0]).toBe(h)
    const forged = Buffer.from(JSON.stringify({ aud: 'https://push.example.net', exp: 1453523769, sub: 'mailto:push@example.com' })).toString('base64url')
    expect(verifies(`${h}.${forged}.${s}`, RFC_KEY)).toBe(false)
  })

  it('refuses keys of the wrong size', () => {
    expect(() => vapidPrivateKeyObject({ ...keys, publicKey: keys.publicKey.slice(0, 40) })).toThrow(/65-byte/)
    expect(() => vapidPrivateKeyObject({ ...keys, privateKey: keys.privateKey.slice(0, 20) })).toThrow(/32-byte/)
  })
})

describe('VapidTokenCache', () => {
  const keys = generateVapidKeys()
  const subject = 'mailto:ops@herald.dev'

  function cacheAt(start: number) {
    const clock = { now: start }
    return { clock, cache: new VapidTokenCache({ nowSec: () => clock.now }) }
  }

  it('reuses one token for endpoints of one origin, makes another for another origin', () => {
    const { cache } = cacheAt(NOW)
    const a = cache.get('prj_a', keys, 'https://fcm.googleapis.com/fcm/send/abc', subject)
    const b = cache.get('prj_a', keys, new URL('https://fcm.googleapis.com/fcm/send/def'), subject)
    expect(b).toBe(a)
    expect(parseHeader(a).claims.aud).toBe('https://fcm.googleapis.com')
    const mozilla = cache.get('prj_a', keys, 'https://updates.push.services.mozilla.com/wpush/v2/xyz', subject)
    expect(mozilla).not.toBe(a)
    expect(parseHeader(mozilla).claims.aud).toBe('https://updates.push.services.mozilla.com')
    expect(verifies(parseHeader(mozilla).token, keys.publicKey)).toBe(true)
  })

  it('keeps a non-default port in the audience', () => {
    const { cache } = cacheAt(NOW)
    expect(parseHeader(cache.get('prj_a', keys, 'http://127.0.0.1:4123/push/x', subject)).claims.aud).toBe('http://127.0.0.1:4123')
    expect(parseHeader(cache.get('prj_a', keys, 'https://web.push.apple.com:443/Q', subject)).claims.aud).toBe('https://web.push.apple.com')
  })

  it('renews a token one hour before it expires', () => {
    const { cache, clock } = cacheAt(NOW)
    const endpoint = 'https://fcm.googleapis.com/fcm/send/abc'
    const first = cache.get('prj_a', keys, endpoint, subject)
    const exp = parseHeader(first).claims.exp
    clock.now = exp - VAPID_RENEW_BEFORE_SEC - 1
    expect(cache.get('prj_a', keys, endpoint, subject)).toBe(first)
    clock.now = exp - VAPID_RENEW_BEFORE_SEC
    const renewed = cache.get('prj_a', keys, endpoint, subject)
    expect(renewed).not.toBe(first)
    expect(parseHeader(renewed).claims.exp).toBe(clock.now + VAPID_TOKEN_LIFETIME_SEC)
  })

  it('keeps projects apart and follows key rotation and subject changes', () => {
    const { cache } = cacheAt(NOW)
    const endpoint = 'https://fcm.googleapis.com/fcm/send/abc'
    const otherKeys = generateVapidKeys()
    const a = cache.get('prj_a', keys, endpoint, subject)
    const b = cache.get('prj_b', otherKeys, endpoint, subject)
    expect(parseHeader(b).k).toBe(otherKeys.publicKey)
    expect(verifies(parseHeader(b).token, otherKeys.publicKey)).toBe(true)
    const rotated = cache.get('prj_a', otherKeys, endpoint, subject)
    expect(parseHeader(rotated).k).toBe(otherKeys.publicKey)
    expect(verifies(parseHeader(rotated).token, otherKeys.publicKey)).toBe(true)
    const resubjected = cache.get('prj_a', otherKeys, endpoint, 'https://herald.dev/contact')
    expect(parseHeader(resubjected).claims.sub).toBe('https://herald.dev/contact')
    expect(a).not.toBe(rotated)
  })

  it('drops the oldest token past maxEntries, and a project on request', () => {
    const cache = new VapidTokenCache({ nowSec: () => NOW, maxEntries: 2 })
    const a = cache.get('prj_a', keys, 'https://a.example/x', subject)
    const b = cache.get('prj_a', keys, 'https://b.example/x', subject)
    expect(cache.get('prj_a', keys, 'https://a.example/y', subject)).toBe(a)
    cache.get('prj_a', keys, 'https://c.example/x', subject) // a is the oldest: dropped
    expect(cache.get('prj_a', keys, 'https://b.example/y', subject)).toBe(b)
    // Same clock, same claims: ECDSA signatures are randomised, so a re-signed token differs.
    expect(cache.get('prj_a', keys, 'https://a.example/z', subject)).not.toBe(a)
    cache.forget('prj_a')
    expect(cache.get('prj_a', keys, 'https://b.example/x', subject)).not.toBe(b)
  })
})

describe('validateVapidSubject', () => {
  it.each([
    'mailto:ops@herald.dev',
    'mailto:admin@example.com',
    'https://herald.dev',
    'https://herald.dev/contact',
  ])('accepts %s', (subject) => {
    expect(validateVapidSubject(subject)).toBeNull()
  })

  it.each([
    ['', /required/],
    ['ops@herald.dev', /mailto: address or an https: URL/],
    ['http://herald.dev', /mailto: address or an https: URL/],
    ['mailto:', /one address/],
    ['mailto:herald.dev', /one address/],
    ['mailto:a@b@herald.dev', /one address/],
    ['mailto:ops@localhost', /reserved/],
    ['mailto:ops@app.localhost', /reserved/],
    ['mailto:ops@herald.invalid', /reserved/],
    ['mailto:ops@herald.test', /reserved/],
    ['https://localhost/contact', /reserved/],
    ['https://push.invalid', /reserved/],
    ['https://127.0.0.1', /IP address/],
    ['https://[::1]/', /IP address/],
    ['mailto:ops@intranet', /public domain/],
    ['https:nohost', /public domain/],
    [`mailto:${'a'.repeat(510)}@herald.dev`, /512/],
  ])('refuses %s', (subject, message) => {
    expect(validateVapidSubject(subject)).toMatch(message)
  })
})
