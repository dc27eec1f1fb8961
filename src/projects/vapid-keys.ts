// Each project's VAPID key pair (RFC 8292): a P-256 key, the public half as the
// 65-byte uncompressed point and the private half as the 32-byte scalar, both
// base64url, the forms browsers and the VAPID header use.
import { createECDH, ECDH } from 'node:crypto'
import { invalidField } from '../platform/errors.ts'

export interface VapidKeyPair {
  publicKey: string
  privateKey: string
}

export function generateVapidKeys(): VapidKeyPair {
  const ecdh = createECDH('prime256v1')
  ecdh.generateKeys()
  return {
    publicKey: ecdh.getPublicKey().toString('base64url'),
    // getPrivateKey() drops leading zero bytes (1 key in 256 comes out 31 bytes);
    // RFC 8292 and JWK both want the fixed 32-byte form.
    privateKey: Buffer.from(ecdh.getPrivateKey().toString('hex').padStart(64, '0'), 'hex').toString('base64url'),
  }
}

const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/

/** The bytes of a base64url field, or a 400 naming the field. Padding is accepted and dropped. */
function decodeField(field: string, value: string, length: number, what: string): Buffer {
  if (!BASE64URL.test(value)) throw invalidField(field, 'must be base64url (A-Z a-z 0-9 - _), as web-push generate-vapid-keys prints it')
  const bytes = Buffer.from(value.replace(/=+$/, ''), 'base64url')
  if (bytes.length !== length) throw invalidField(field, `must decode to ${length} bytes (${what}); it decodes to ${bytes.length}`)
  return bytes
}

/**
 * An imported pair (issue 23), checked and in the stored form: the private key
 * must be a valid P-256 scalar, the public key a point on P-256, and that point
 * must be the private key's. Otherwise a 400 invalid_request naming the field,
 * so a pair copied from another provider with a typo is refused, never stored
 * to fail every push later.
 */
export function checkVapidKeyPair(privateKey: string, publicKey: string): VapidKeyPair {
  const priv = decodeField('vapid_private', privateKey, 32, 'a P-256 private scalar')
  const pub = decodeField('vapid_public', publicKey, 65, 'an uncompressed P-256 point')
  const ecdh = createECDH('prime256v1')
  try {
    ecdh.setPrivateKey(priv)
  } catch {
    throw invalidField('vapid_private', 'is not a valid P-256 private key (zero, or not below the curve order)')
  }
  if (pub[0] !== 0x04) throw invalidField('vapid_public', 'must be an uncompressed point (its first byte 0x04)')
  try {
    ECDH.convertKey(pub, 'prime256v1')
  } catch {
    throw invalidField('vapid_public', 'is not a point on the P-256 curve')
  }
  if (!ecdh.getPublicKey().equals(pub)) throw invalidField('vapid_public', 'is not the public key of vapid_private: the two come from different pairs')
  return { privateKey: priv.toString('base64url'), publicKey: pub.toString('base64url') }
}
