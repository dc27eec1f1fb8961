import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { request } from 'undici'
import { encryptPayload } from '../../src/delivery/encryption.ts'
import { vapidAuthorization } from '../../src/delivery/vapid.ts'
import { generateVapidKeys } from '../../src/projects/vapid-keys.ts'
import { startPushService, type PushService, type TestSubscription } from './push-service.ts'

const SUBJECT = 'mailto:ops@herald.dev'
const keys = generateVapidKeys()
const nowSec = () => Math.floor(Date.now() / 1000)

let service: PushService
beforeAll(async () => {
  service = await startPushService()
})
afterAll(async () => {
  await service.close()
})
beforeEach(() => service.reset())

interface SendOptions {
  payload?: unknown
  body?: Buffer
  headers?: Record<string, string | undefined>
}

/** Encrypts and signs like Herald's sender, then POSTs; returns status and headers. */
async function send(sub: TestSubscription, options: SendOptions = {}) {
  const body = options.body ?? encryptPayload(Buffer.from(JSON.stringify(options.payload ?? { v: 1, title: 'Hi' })), sub.keys)
  const headers: Record<string, string> = {
    ttl: '60',
    'content-encoding': 'aes128gcm',
    'content-type': 'application/octet-stream',
    authorization: vapidAuthorization(keys, service.url, SUBJECT).header,
  }
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (value === undefined) delete headers[name]
    else headers[name] = value
  }
  const res = await request(sub.endpoint, { method: 'POST', headers, body })
  await res.body.dump()
  return { status: res.statusCode, headers: res.headers }
}

function lastRejection() {
  return service.rejected[service.rejected.length - 1]
}

describe('push service: accepted pushes', () => {
  it('decrypts what encryption.ts sends and records the headers', async () => {
    const sub = service.createSubscription()
    const payload = { v: 1, project_id: 'prj_a', broadcast_id: 'bdc_b', title: 'Héllo', body: '☃', url: '/' }
    const authorization = vapidAuthorization(keys, service.url, SUBJECT).header
    const res = await send(sub, { payload, headers: { urgency: 'high', topic: 'order_42', ttl: '3600', authorization } })
    expect(res.status).toBe(201)
    expect(res.headers.location).toMatch(new RegExp(`^${service.url}/message/`))
    expect(service.count).toBe(1)
    expect(service.receivedFor(sub.endpoint)).toEqual([
      {
        subscriptionId: sub.endpoint.split('/').pop(),
        headers: { ttl: 3600, urgency: 'high', topic: 'order_42', contentEncoding: 'aes128gcm', authorization },
        payload,
        // RFC 8291: 86 header bytes, the plaintext, the 0x02 delimiter, a 16-byte tag.
        bodyBytes: 86 + Buffer.byteLength(JSON.stringify(payload)) + 1 + 16,
        httpVersion: '1.1',
        at: expect.any(Number),
      },
    ])
    expect(service.rejected).toEqual([])
  })

  it('keeps pushes per subscription and a non-JSON payload as a string', async () => {
    const a = service.createSubscription()
    const b = service.createSubscription()
    expect(await send(a, { body: encryptPayload(Buffer.from('plain text'), a.keys) })).toMatchObject({ status: 201 })
    expect(await send(b)).toMatchObject({ status: 201 })
    expect(service.receivedFor(a.endpoint).map((push) => push.payload)).toEqual(['plain text'])
    expect(service.receivedFor(b.endpoint)).toHaveLength(1)
    expect(service.receivedFor(a.endpoint)[0].headers.urgency).toBeNull()
    expect(service.receivedFor(a.endpoint)[0].headers.topic).toBeNull()
  })

  it('accepts a 4096-byte body', async () => {
    const sub = service.createSubscription()
    const body = encryptPayload(Buffer.alloc(3993, 'x'), sub.keys)
    expect(body.length).toBe(4096)
    expect(await send(sub, { body })).toMatchObject({ status: 201 })
  })
})

describe('push service: refusals', () => {
  it('answers 404 for an unknown subscription', async () => {
    const res = await request(`${service.url}/push/nope`, { method: 'POST', body: 'x' })
    await res.body.dump()
    expect(res.statusCode).toBe(404)
  })

  it('refuses a missing or malformed Authorization with 401', async () => {
    const sub = service.createSubscription()
    expect((await send(sub, { headers: { authorization: undefined } })).status).toBe(401)
    expect((await send(sub, { headers: { authorization: 'WebPush abc' } })).status).toBe(401)
    expect(lastRejection().reason).toMatch(/malformed/)
    expect(service.count).toBe(0)
  })

  it.each([
    ['a signature by another key', () => vapidAuthorization(generateVapidKeys(), service.url, SUBJECT).header.replace(/k=.*$/, `k=${keys.publicKey}`), /signature/],
    ['another audience', () => vapidAuthorization(keys, 'https://fcm.googleapis.com', SUBJECT).header, /aud/],
    ['an expired token', () => vapidAuthorization(keys, service.url, SUBJECT, nowSec() - 13 * 3600).header, /expired/],
    ['exp more than 24 h ahead', () => vapidAuthorization(keys, service.url, SUBJECT, nowSec() + 13 * 3600).header, /24 h/],
    ['a sub that is not mailto:/https:', () => vapidAuthorization(keys, service.url, 'http://herald.dev').header, /sub/],
    ['a token that is not a JWS', () => `vapid t=abc.def, k=${keys.publicKey}`, /JWS/],
  ])('refuses %s with 403', async (_, authorization, reason) => {
    const sub = service.createSubscription()
    expect((await send(sub, { headers: { authorization: authorization() } })).status).toBe(403)
    expect(lastRejection()).toMatchObject({ status: 403, reason: expect.stringMatching(reason) })
    expect(service.received).toEqual([])
  })

  it('restricts a subscription to its applicationServerKey', async () => {
    const sub = service.createSubscription({ applicationServerKey: keys.publicKey })
    expect((await send(sub)).status).toBe(201)
    const other = generateVapidKeys()
    const res = await send(sub, { headers: { authorization: vapidAuthorization(other, service.url, SUBJECT).header } })
    expect(res.status).toBe(403)
    expect(lastRejection().reason).toMatch(/created with/)
  })

  it.each([
    ['no TTL', { ttl: undefined }, /TTL/],
    ['a TTL that is not an integer', { ttl: '1.5' }, /TTL/],
    ['another content coding', { 'content-encoding': 'aesgcm' }, /Content-Encoding/],
    ['an unknown urgency', { urgency: 'urgent' }, /Urgency/],
    ['a topic over 32 chars', { topic: 'a'.repeat(33) }, /Topic/],
  ])('refuses %s with 400', async (_, headers, reason) => {
    const sub = service.createSubscription()
    expect((await send(sub, { headers })).status).toBe(400)
    expect(lastRejection().reason).toMatch(reason)
  })

  it('refuses a body over 4096 bytes with 413', async () => {
    const sub = service.createSubscription()
    expect((await send(sub, { body: Buffer.alloc(4097) })).status).toBe(413)
  })

  it('refuses a body it cannot decrypt with 400', async () => {
    const sub = service.createSubscription()
    const tampered = encryptPayload(Buffer.from('{"v":1}'), sub.keys)
    tampered[tampered.length - 1] ^= 1
    expect((await send(sub, { body: tampered })).status).toBe(400)
    expect(lastRejection().reason).toMatch(/decryption failed/)
    const forSomeoneElse = encryptPayload(Buffer.from('{"v":1}'), service.createSubscription().keys)
    expect((await send(sub, { body: forSomeoneElse })).status).toBe(400)
    expect(service.count).toBe(0)
  })
})

describe('push service: failure modes', () => {
  it.each([404, 410, 400, 401, 403, 413, 500, 503] as const)('answers %i when told to', async (status) => {
    const sub = service.createSubscription()
    service.fail(sub.endpoint, { status })
    expect((await send(sub)).status).toBe(status)
    expect((await send(sub)).status).toBe(status) // until told otherwise
    expect(service.count).toBe(0)
  })

  it('answers 429 with Retry-After', async () => {
    const sub = service.createSubscription()
    service.fail(sub.endpoint, { status: 429, retryAfter: 120 })
    const res = await send(sub)
    expect(res.status).toBe(429)
    expect(res.headers['retry-after']).toBe('120')
  })

  it('fails N times, then accepts', async () => {
    const sub = service.createSubscription()
    service.fail(sub.endpoint, { status: 503, times: 2 })
    expect((await send(sub)).status).toBe(503)
    expect((await send(sub)).status).toBe(503)
    expect((await send(sub)).status).toBe(201)
    expect(service.requests).toBe(3)
    expect(service.count).toBe(1)
  })

  it('reset clears failure modes and records', async () => {
    const sub = service.createSubscription()
    service.fail(sub.endpoint, { status: 500 })
    await send(sub)
    service.reset()
    expect(service.rejected).toEqual([])
    expect((await send(sub)).status).toBe(201)
  })

  it('hangs until closed', async () => {
    const hanging = await startPushService()
    const sub = hanging.createSubscription()
    hanging.fail(sub.endpoint, { hang: true })
    const pending = request(sub.endpoint, { method: 'POST', body: 'x', headers: { ttl: '0' } })
    const outcome = await Promise.race([pending.then(() => 'answered', () => 'failed'), new Promise((r) => setTimeout(() => r('waiting'), 300))])
    expect(outcome).toBe('waiting')
    await hanging.close()
    await expect(pending).rejects.toThrow()
  })

  it('delays answers by delayMs', async () => {
    const slow = await startPushService({ delayMs: 150 })
    const sub = slow.createSubscription()
    const started = Date.now()
    const res = await request(sub.endpoint, {
      method: 'POST',
      body: encryptPayload(Buffer.from('{}'), sub.keys),
      headers: { ttl: '0', 'content-encoding': 'aes128gcm', authorization: vapidAuthorization(keys, slow.url, SUBJECT).header },
    })
    await res.body.dump()
    expect(res.statusCode).toBe(201)
    expect(Date.now() - started).toBeGreaterThanOrEqual(140)
    await slow.close()
  })

  it('only counts when a request is not sampled (verifySample 0)', async () => {
    const cheap = await startPushService({ verifySample: 0 })
    const sub = cheap.createSubscription()
    const res = await request(sub.endpoint, { method: 'POST', body: 'not even encrypted' })
    await res.body.dump()
    expect(res.statusCode).toBe(201)
    expect(cheap.count).toBe(1)
    expect(cheap.received).toEqual([])
    await cheap.waitForCount(1)
    await cheap.close()
  })
})
