import { createECDH, randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { decryptPushPayload } from '../../test/support/push-service.ts'
import {
  HEADER_LENGTH,
  MAX_PLAINTEXT_BYTES,
  PushEncryptionError,
  chooseEncryptPayload,
  encryptPayload,
  nativeEncryptPayload,
  prepareSubscriptionKeys,
} from './encryption.ts'

// Both implementations pass the same tests. The addon exists where
// `npm install` could build it (scripts/build-native.mjs).
const native = nativeEncryptPayload()
if (!native) console.warn('OpenSSL addon not built (node scripts/build-native.mjs): testing node:crypto only')
const implementations = [['node:crypto', encryptPayload], ...(native ? [['the OpenSSL addon', native] as const] : [])] as const

const b64 = (value: string) => Buffer.from(value, 'base64url')

// RFC 8291 Appendix A.
const A = {
  asPrivate: b64('yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw'),
  asPublic: b64('BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8'),
  uaPublic: 'BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4',
  uaPrivate: b64('q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94'),
  auth: 'BTBZMqHH6r4Tts7J_aSIgg',
  salt: b64('DGv6ra1nlYgDCS1FRnbzlw'),
  plaintext: Buffer.from('When I grow up, I want to be a watermelon'),
  // Header (86 bytes) and record are separate base64url strings in the RFC: decode each, then join.
  body: Buffer.concat([
    b64('DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8'),
    b64('8pfeW0KbunFT06SuDKoJH9Ql87S1QUrdirN6GcG7sFz1y1sqLgVi1VhjVkHsUoEsbI_0LpXMuGvnzQ'),
  ]),
}

function userAgent() {
  const ecdh = createECDH('prime256v1')
  const publicKey = ecdh.generateKeys()
  const auth = randomBytes(16)
  return {
    keys: { p256dh: publicKey.toString('base64url'), auth: auth.toString('base64url') },
    receiver: { privateKey: ecdh.getPrivateKey(), auth },
  }
}

function reasonOf(fn: () => unknown): string {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(PushEncryptionError)
    return (error as PushEncryptionError).reason
  }
  throw new Error('did not throw')
}

describe.each(implementations)('encryptPayload (RFC 8291) with %s', (_name, encrypt) => {
  const vectorOptions = { salt: A.salt, senderKeys: { publicKey: A.asPublic, privateKey: A.asPrivate } }

  it('reproduces RFC 8291 Appendix A byte for byte', () => {
    const body = encrypt(A.plaintext, { p256dh: A.uaPublic, auth: A.auth }, vectorOptions)
    expect(body.length).toBe(144)
    expect(body.toString('hex')).toBe(A.body.toString('hex'))
  })

  it('gives the same bytes from prepared keys', () => {
    const prepared = prepareSubscriptionKeys({ p256dh: A.uaPublic, auth: A.auth })
    expect(encrypt(A.plaintext, prepared, vectorOptions).equals(A.body)).toBe(true)
  })

  it('the test decryptor opens the Appendix A body (so the round trips below prove something)', () => {
    expect(decryptPushPayload(A.body, { privateKey: A.uaPrivate, auth: b64(A.auth) }).toString()).toBe(A.plaintext.toString())
  })

  it('round-trips with a fresh sender key and salt per message', () => {
    const ua = userAgent()
    const plaintext = Buffer.from(JSON.stringify({ v: 1, title: 'Hello', body: 'é ☃ 🎉' }))
    const first = encrypt(plaintext, ua.keys)
    const second = encrypt(plaintext, prepareSubscriptionKeys(ua.keys))
    expect(decryptPushPayload(first, ua.receiver).equals(plaintext)).toBe(true)
    expect(decryptPushPayload(second, ua.receiver).equals(plaintext)).toBe(true)
    expect(first.subarray(0, 16).equals(second.subarray(0, 16))).toBe(false) // salt
    expect(first.subarray(21, 86).equals(second.subarray(21, 86))).toBe(false) // sender key
  })

  it('writes the aes128gcm header: rs 4096, idlen 65, keyid = sender key', () => {
    const body = encrypt(Buffer.from('x'), userAgent().keys)
    expect(body.readUInt32BE(16)).toBe(4096)
    expect(body[20]).toBe(65)
    expect(body[21]).toBe(0x04)
    expect(body.length).toBe(HEADER_LENGTH + 1 + 1 + 16)
    // Its own ArrayBuffer, not a view into Node's shared pool.
    expect(body.buffer.byteLength).toBe(body.length)
  })

  it('encrypts an empty message', () => {
    const ua = userAgent()
    expect(decryptPushPayload(encrypt(Buffer.alloc(0), ua.keys), ua.receiver).length).toBe(0)
  })

  it('fits 3993 bytes in 4096 and refuses 3994', () => {
    expect(MAX_PLAINTEXT_BYTES).toBe(3993)
    const ua = userAgent()
    const largest = randomBytes(MAX_PLAINTEXT_BYTES)
    const body = encrypt(largest, ua.keys)
    expect(body.length).toBe(4096)
    expect(decryptPushPayload(body, ua.receiver).equals(largest)).toBe(true)
    expect(reasonOf(() => encrypt(randomBytes(MAX_PLAINTEXT_BYTES + 1), ua.keys))).toBe('payload_too_large')
  })

  it('refuses unusable subscription keys with invalid_subscription_keys', () => {
    const { keys } = userAgent()
    const x = Buffer.from('x')
    expect(reasonOf(() => encrypt(x, { ...keys, p256dh: keys.p256dh.slice(0, 40) }))).toBe('invalid_subscription_keys')
    expect(reasonOf(() => encrypt(x, { ...keys, auth: 'c2hvcnQ' }))).toBe('invalid_subscription_keys')
    // Compressed point (0x02 prefix): browsers always send the 65-byte form.
    const compressed = Buffer.concat([Buffer.of(2), b64(keys.p256dh).subarray(1, 33)])
    expect(reasonOf(() => encrypt(x, { ...keys, p256dh: compressed.toString('base64url') }))).toBe('invalid_subscription_keys')
    // Right length and prefix, but not on the curve.
    const offCurve = Buffer.concat([Buffer.of(4), Buffer.alloc(64, 1)]).toString('base64url')
    expect(reasonOf(() => encrypt(x, { ...keys, p256dh: offCurve }))).toBe('invalid_subscription_keys')
    expect(reasonOf(() => prepareSubscriptionKeys({ ...keys, p256dh: '' }))).toBe('invalid_subscription_keys')
  })

  it('accepts keys in standard base64 with padding, as some clients send them', () => {
    const ua = userAgent()
    const standard = {
      p256dh: b64(ua.keys.p256dh).toString('base64'),
      auth: b64(ua.keys.auth).toString('base64'),
    }
    const body = encrypt(Buffer.from('hi'), standard)
    expect(decryptPushPayload(body, ua.receiver).toString()).toBe('hi')
  })
})

describe('chooseEncryptPayload', () => {
  it('gives node:crypto when told not to use the addon (HERALD_NATIVE_CRYPTO=false), the addon otherwise where built', () => {
    expect(chooseEncryptPayload(false)).toBe(encryptPayload)
    expect(chooseEncryptPayload(true)).toBe(native ?? encryptPayload)
  })

  it.skipIf(!native)('gives the same bytes from both for the same salt and sender keys', () => {
    const ua = userAgent()
    const sender = createECDH('prime256v1')
    const options = { salt: randomBytes(16), senderKeys: { publicKey: sender.generateKeys(), privateKey: sender.getPrivateKey() } }
    const plaintext = randomBytes(3000)
    expect(native!(plaintext, ua.keys, options).equals(encryptPayload(plaintext, ua.keys, options))).toBe(true)
  })
})
