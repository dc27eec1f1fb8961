// RFC 8291 message encryption for web push: the aes128gcm content coding of
// RFC 8188 with exactly one record. Plain JavaScript (types in rfc8291.d.mts)
// so that the encryption threads load it without a TypeScript loader: tsx in a
// worker thread costs ~40 MB of memory per thread (measured), more than
// everything else the thread holds. Import it through encryption.ts.
//
// This runs once per push, so it is the hot
// path of a fan-out: keys are decoded once per subscriber (prepareSubscriptionKeys),
// the output is one buffer written in place, and the key schedule is the five
// HMACs of RFC 8291 §3.4 rather than three hkdfSync calls (which would run six
// HMACs and copy through ArrayBuffers; measured ~3x slower for this step).
import { createCipheriv, createECDH, createHmac, randomFillSync } from 'node:crypto'
import { createRequire } from 'node:module'

import {
  encryptedLength,
  HEADER_LENGTH,
  MAX_PLAINTEXT_BYTES,
  PUBLIC_KEY_LENGTH,
  RECORD_SIZE,
  SALT_LENGTH,
  TAG_LENGTH,
} from '../platform/webpush/record-size.mjs'

// The record's size arithmetic is shared with broadcasts (does a notification
// fit in one push?): it lives in platform/webpush/record-size.mjs.
export { encryptedLength, HEADER_LENGTH, MAX_PLAINTEXT_BYTES, RECORD_SIZE }

const AUTH_SECRET_LENGTH = 16

const KEY_INFO_LABEL = Buffer.from('WebPush: info\0', 'latin1')
const CEK_INFO = Buffer.from('Content-Encoding: aes128gcm\0\x01', 'latin1')
const NONCE_INFO = Buffer.from('Content-Encoding: nonce\0\x01', 'latin1')
const ONE = Buffer.of(1)
// RFC 8188 §2: the last (here the only) record ends with the delimiter 0x02.
const LAST_RECORD_DELIMITER = Buffer.of(2)

/**
 * Why a push could not be encrypted. `invalid_subscription_keys` means the
 * subscription itself is unusable (no retry will help);
 * `payload_too_large` means the caller should send a smaller payload.
 */
export class PushEncryptionError extends Error {
  /** @param {'invalid_subscription_keys' | 'payload_too_large'} reason @param {string} message */
  constructor(reason, message) {
    super(message)
    this.name = 'PushEncryptionError'
    this.reason = reason
  }
}

/** Decodes and checks a subscription's keys. Throws PushEncryptionError('invalid_subscription_keys'). */
export function prepareSubscriptionKeys(keys) {
  // Node's base64url decoder also accepts the standard alphabet and padding,
  // which some browsers and client libraries send.
  const uaPublic = Buffer.from(keys.p256dh, 'base64url')
  if (uaPublic.length !== PUBLIC_KEY_LENGTH || uaPublic[0] !== 0x04) {
    throw new PushEncryptionError(
      'invalid_subscription_keys',
      `p256dh must be a 65-byte uncompressed P-256 point, got ${uaPublic.length} bytes`,
    )
  }
  const authSecret = Buffer.from(keys.auth, 'base64url')
  if (authSecret.length !== AUTH_SECRET_LENGTH) {
    throw new PushEncryptionError(
      'invalid_subscription_keys',
      `auth must be a 16-byte secret, got ${authSecret.length} bytes`,
    )
  }
  return { uaPublic, authSecret }
}

function isPrepared(keys) {
  return keys.uaPublic !== undefined
}

function hmac(key, ...data) {
  const mac = createHmac('sha256', key)
  for (const part of data) mac.update(part)
  return mac.digest()
}

/**
 * Encrypts one push message body (RFC 8291, aes128gcm, one record of rs 4096).
 * Returns the whole HTTP body: header (salt | rs | idlen | sender public key)
 * followed by the record. Throws PushEncryptionError when the plaintext is over
 * MAX_PLAINTEXT_BYTES or the subscription keys are unusable.
 */
export function encryptPayload(plaintext, subscription, options = {}) {
  checkPlaintext(plaintext)
  return encryptWithNode(plaintext, isPrepared(subscription) ? subscription : prepareSubscriptionKeys(subscription), options)
}

function checkPlaintext(plaintext) {
  if (plaintext.length > MAX_PLAINTEXT_BYTES) {
    throw new PushEncryptionError(
      'payload_too_large',
      `push payload is ${plaintext.length} bytes; at most ${MAX_PLAINTEXT_BYTES} fit in one 4096-byte record`,
    )
  }
}

function encryptWithNode(plaintext, { uaPublic, authSecret }, options) {
  const sender = createECDH('prime256v1')
  let asPublic
  if (options.senderKeys) {
    sender.setPrivateKey(options.senderKeys.privateKey)
    asPublic = options.senderKeys.publicKey
  } else {
    asPublic = sender.generateKeys()
  }
  let ecdhSecret
  try {
    ecdhSecret = sender.computeSecret(uaPublic)
  } catch {
    throw new PushEncryptionError('invalid_subscription_keys', 'p256dh is not a point on the P-256 curve')
  }

  // Its own ArrayBuffer, not a slice of Node's shared 8 KB pool: a worker thread
  // that posts the body back then copies (or transfers) only these bytes.
  const body = Buffer.allocUnsafeSlow(HEADER_LENGTH + plaintext.length + 1 + TAG_LENGTH)
  let salt
  if (options.salt) {
    if (options.salt.length !== SALT_LENGTH) throw new Error('salt must be 16 bytes')
    salt = options.salt
    salt.copy(body, 0)
  } else {
    randomFillSync(body, 0, SALT_LENGTH)
    salt = body.subarray(0, SALT_LENGTH)
  }
  body.writeUInt32BE(RECORD_SIZE, SALT_LENGTH)
  body[SALT_LENGTH + 4] = PUBLIC_KEY_LENGTH
  asPublic.copy(body, SALT_LENGTH + 5)

  // RFC 8291 §3.4: combine the ECDH secret with the auth secret, then RFC 8188 §2.2
  // derives the content encryption key and nonce from the salt.
  const prkKey = hmac(authSecret, ecdhSecret)
  const ikm = hmac(prkKey, KEY_INFO_LABEL, uaPublic, asPublic, ONE)
  const prk = hmac(salt, ikm)
  const cek = hmac(prk, CEK_INFO).subarray(0, 16)
  const nonce = hmac(prk, NONCE_INFO).subarray(0, 12)

  const cipher = createCipheriv('aes-128-gcm', cek, nonce)
  let offset = HEADER_LENGTH
  offset += cipher.update(plaintext).copy(body, offset)
  offset += cipher.update(LAST_RECORD_DELIMITER).copy(body, offset)
  offset += cipher.final().copy(body, offset)
  cipher.getAuthTag().copy(body, offset)
  return body
}

/** The OpenSSL addon (native/rfc8291.c), loaded at most once per thread; null where it was not built or does not load. */
let nativeEncrypt

/**
 * encryptPayload through the OpenSSL addon: the same checks, errors and bytes,
 * ~50 µs less CPU per push (docs/performance.md). Null when the addon is not available.
 * @returns {typeof encryptPayload | null}
 */
export function nativeEncryptPayload() {
  if (nativeEncrypt === undefined) {
    try {
      nativeEncrypt = wrapAddon(createRequire(import.meta.url)('./native/build/Release/rfc8291.node'))
    } catch {
      nativeEncrypt = null // not built (no compiler at install) or built for another platform: node:crypto does the work
    }
  }
  return nativeEncrypt
}

function wrapAddon(addon) {
  return function encryptPayloadNative(plaintext, subscription, options = {}) {
    checkPlaintext(plaintext)
    const { uaPublic, authSecret } = isPrepared(subscription) ? subscription : prepareSubscriptionKeys(subscription)
    const salt = options.salt
    if (salt && salt.length !== SALT_LENGTH) throw new Error('salt must be 16 bytes')
    const sender = options.senderKeys
    // ECDH.getPrivateKey() drops leading zero bytes; the addon takes the 32-byte scalar.
    const senderPrivate = sender && Buffer.concat([Buffer.alloc(Math.max(0, 32 - sender.privateKey.length)), sender.privateKey])
    const input = Buffer.isBuffer(plaintext) ? plaintext : Buffer.from(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength)
    const body = addon.encrypt(input, uaPublic, authSecret, salt, senderPrivate, sender?.publicKey)
    if (body === undefined) throw new PushEncryptionError('invalid_subscription_keys', 'p256dh is not a point on the P-256 curve')
    return body
  }
}

/**
 * The encryption a thread uses, chosen once: the addon when `native` is true
 * and it loads, node:crypto otherwise (HERALD_NATIVE_CRYPTO=false never loads it).
 * @param {boolean} native
 */
export function chooseEncryptPayload(native) {
  return (native && nativeEncryptPayload()) || encryptPayload
}
