// Each project's VAPID key pair (RFC 8292): a P-256 key, the public half as the
// 65-byte uncompressed point and the private half as the 32-byte scalar, both
// base64url, the forms browsers and the VAPID header use.
import { createECDH } from 'node:crypto'

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
