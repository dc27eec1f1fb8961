import { createECDH, randomBytes } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { decryptPushPayload } from '../../test/support/push-service.ts'
import { EncryptPool } from './encrypt-pool.ts'
import { nativeEncryptPayload } from './encryption.ts'

function browser() {
  const ecdh = createECDH('prime256v1')
  const publicKey = ecdh.generateKeys()
  const auth = randomBytes(16)
  return { ecdh, auth, keys: { p256dh: publicKey.toString('base64url'), auth: auth.toString('base64url') } }
}

// Each on threads and on the main thread, with the OpenSSL addon (where it was
// built at install) and with node:crypto (HERALD_NATIVE_CRYPTO=false).
const pools = {
  'threads, addon': new EncryptPool(2, true),
  'main thread, addon': new EncryptPool(0, true),
  'threads, node:crypto': new EncryptPool(2, false),
  'main thread, node:crypto': new EncryptPool(0, false),
}
afterAll(async () => {
  await Promise.all(Object.values(pools).map((pool) => pool.close()))
})

describe.each(Object.keys(pools) as Array<keyof typeof pools>)('EncryptPool on %s', (name) => {
  const pool = pools[name]

  it('uses the implementation it was asked for', () => {
    const expected = name.endsWith('node:crypto') || !nativeEncryptPayload() ? 'node:crypto' : 'openssl'
    expect(pool.implementation).toBe(expected)
  })

  it('encrypts for every subscription, in order, across chunks, and marks unusable keys alone', async () => {
    const browsers = Array.from({ length: 150 }, browser)
    const keys = browsers.map((b) => b.keys)
    keys.splice(70, 0, { p256dh: 'not-a-key', auth: 'x' })
    const plaintext = Buffer.from(JSON.stringify({ v: 1, title: 'Hi' }))
    const bodies = await pool.encryptMany(plaintext, keys)
    expect(bodies).toHaveLength(151)
    expect(bodies[70]).toEqual({ error: expect.any(String) })
    const rest = bodies.filter((_, i) => i !== 70)
    rest.forEach((body, i) => {
      expect(Buffer.isBuffer(body)).toBe(true)
      const privateKey = Buffer.from(browsers[i].ecdh.getPrivateKey().toString('hex').padStart(64, '0'), 'hex')
      expect(decryptPushPayload(body as Buffer, { privateKey, auth: browsers[i].auth })).toEqual(plaintext)
    })
  })
})
