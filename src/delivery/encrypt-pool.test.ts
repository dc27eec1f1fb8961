import { createECDH, randomBytes } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { decryptPushPayload } from '../../test/support/push-service.ts'
import { defaultThreads, EncryptPool } from './encrypt-pool.ts'
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

describe('EncryptPool threads', () => {
  it('hands a batch over in a small first chunk (its first pushes leave sooner), then in chunks of 64', async () => {
    const pool = pools['threads, addon']
    const keys = Array.from({ length: 100 }, () => browser().keys)
    const chunks = pool.encryptInChunks(Buffer.from('{"v":1}'), keys)
    expect(chunks.map((c) => [c.offset, c.count])).toEqual([[0, 16], [16, 64], [80, 20]])
    expect((await Promise.all(chunks.map((c) => c.bodies))).map((bodies) => bodies.length)).toEqual([16, 64, 20])
    // One payload each (a personalized broadcast): each body holds its own, across the chunks' bounds.
    const browsers = Array.from({ length: 81 }, browser)
    const plaintexts = browsers.map((_, i) => Buffer.from(`{"n":${i}}`))
    const bodies = await pool.encryptMany(plaintexts, browsers.map((b) => b.keys))
    bodies.forEach((body, i) => {
      const privateKey = Buffer.from(browsers[i].ecdh.getPrivateKey().toString('hex').padStart(64, '0'), 'hex')
      expect(decryptPushPayload(body as Buffer, { privateKey, auth: browsers[i].auth })).toEqual(plaintexts[i])
    })
  })

  it('defaults to one thread per four cores with the addon, one per core with node:crypto', () => {
    expect(defaultThreads('openssl', 1)).toBe(1)
    expect(defaultThreads('openssl', 2)).toBe(1)
    expect(defaultThreads('openssl', 8)).toBe(2)
    expect(defaultThreads('node:crypto', 2)).toBe(2)
    expect(new EncryptPool(3, true).threads).toBe(3)
    expect(new EncryptPool(0, false).threads).toBe(0)
  })

  it('warms its threads with a real encryption and still encrypts after', async () => {
    const pool = new EncryptPool(1, true)
    try {
      pool.warm()
      const b = browser()
      const plaintext = Buffer.from('after warming')
      const [body] = await pool.encryptMany(plaintext, [b.keys])
      const privateKey = Buffer.from(b.ecdh.getPrivateKey().toString('hex').padStart(64, '0'), 'hex')
      expect(decryptPushPayload(body as Buffer, { privateKey, auth: b.auth })).toEqual(plaintext)
    } finally {
      await pool.close()
    }
  })
})
