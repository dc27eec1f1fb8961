import { createECDH } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { vapidAuthorization } from '../delivery/vapid.ts'
import { generateVapidKeys } from './vapid-keys.ts'

describe('generateVapidKeys', () => {
  it('always gives a 65-byte public point and a 32-byte private scalar that match', () => {
    // About 1 key in 256 has a leading zero byte; 3000 keys meet several.
    for (let i = 0; i < 3000; i++) {
      const keys = generateVapidKeys()
      const priv = Buffer.from(keys.privateKey, 'base64url')
      expect(priv).toHaveLength(32)
      expect(Buffer.from(keys.publicKey, 'base64url')).toHaveLength(65)
      if (priv[0] === 0) {
        const ecdh = createECDH('prime256v1')
        ecdh.setPrivateKey(priv)
        expect(ecdh.getPublicKey().toString('base64url')).toBe(keys.publicKey)
        expect(() => vapidAuthorization(keys, 'https://fcm.googleapis.com', 'mailto:a@example.com')).not.toThrow()
      }
    }
  })
})
