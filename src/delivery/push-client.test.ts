// The push client against a real push service on localhost: HTTP/2 when the
// push service speaks it, connections reused, addresses checked at connect.
import https from 'node:https'
import net, { type AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import selfsigned from 'selfsigned'
import { until } from '../../test/support/lost-claim.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { generateVapidKeys } from '../projects/vapid-keys.ts'
import { encryptPayload } from './encryption.ts'
import { PRECONNECT, PushClient, SLOW_START_WINDOW, classify, parseRetryAfter, type PushOutcome } from './push-client.ts'
import { pushErrorReason } from './send-batch.ts'
import { VapidTokenCache } from './vapid.ts'

let tlsPush: PushService
let cert: string
let key: string
const vapid = generateVapidKeys()
const tokens = new VapidTokenCache()

beforeAll(async () => {
  const pems = await selfsigned.generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keyType: 'ec',
    curve: 'P-256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  })
  cert = pems.cert
  key = pems.private
  tlsPush = await startPushService({ tls: { key: pems.private, cert: pems.cert } })
})
afterAll(async () => {
  await tlsPush.close()
})

function pushRequest(endpoint: string) {
  const url = new URL(endpoint)
  return {
    endpoint: url,
    body: Buffer.from('not read'),
    headers: { TTL: '60', Authorization: tokens.get('prj_test', vapid, url, 'mailto:ops@example.com') },
  }
}

/** A push the push service decrypts and accepts. */
function sealedRequest(sub: { endpoint: string; keys: { p256dh: string; auth: string } }) {
  return { ...pushRequest(sub.endpoint), body: encryptPayload(Buffer.from('{"v":1}'), sub.keys), headers: { ...pushRequest(sub.endpoint).headers, 'Content-Encoding': 'aes128gcm' } }
}

async function pushVia(client: PushClient, push: PushService): Promise<string> {
  const sub = push.createSubscription()
  const endpoint = new URL(sub.endpoint)
  const outcome = await client.send({
    endpoint,
    body: encryptPayload(Buffer.from('{"v":1}'), sub.keys),
    headers: {
      TTL: '60',
      'Content-Encoding': 'aes128gcm',
      'Content-Type': 'application/octet-stream',
      Authorization: tokens.get('prj_test', vapid, endpoint, 'mailto:ops@example.com'),
    },
  })
  expect(outcome).toEqual({ kind: 'delivered', status: 201 })
  return push.receivedFor(sub.endpoint)[0].httpVersion
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('PushClient', () => {
  it('speaks HTTP/2 to an HTTPS push service that offers it', async () => {
    const client = new PushClient({ allowPrivateAddresses: true, ca: cert, http2: true })
    expect(await pushVia(client, tlsPush)).toBe('2.0')
    await client.close()
  })

  it('speaks HTTP/1.1 when HTTP/2 is turned off', async () => {
    const client = new PushClient({ allowPrivateAddresses: true, ca: cert, http2: false })
    expect(await pushVia(client, tlsPush)).toBe('1.1')
    await client.close()
  })

  it('falls back to HTTP/1.1 on an HTTPS push service that does not offer h2', async () => {
    const versions: string[] = []
    const server = https.createServer({ key, cert }, (req, res) => {
      versions.push(req.httpVersion)
      req.resume()
      req.on('end', () => res.writeHead(201).end())
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const client = new PushClient({ allowPrivateAddresses: true, ca: cert, http2: true })
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/push/x`
    const outcomes = await Promise.all([1, 2, 3].map(() => client.send(pushRequest(url))))
    expect(outcomes).toEqual([1, 2, 3].map(() => ({ kind: 'delivered', status: 201 })))
    expect(versions).toEqual(['1.1', '1.1', '1.1'])
    await client.close()
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })

  it('carries many pushes at once over a few h2 sessions, each answered with its own status', async () => {
    const client = new PushClient({ allowPrivateAddresses: true, ca: cert, http2: true, http2Sessions: 2 })
    const subs = Array.from({ length: 300 }, () => tlsPush.createSubscription())
    const gone = subs.slice(0, 30)
    for (const sub of gone) tlsPush.fail(sub.endpoint, { status: 410 })
    const outcomes = await Promise.all(subs.map((sub) => client.send({
      endpoint: new URL(sub.endpoint),
      body: encryptPayload(Buffer.from('{"v":1}'), sub.keys),
      headers: {
        TTL: '60',
        'Content-Encoding': 'aes128gcm',
        'Content-Type': 'application/octet-stream',
        Authorization: tokens.get('prj_test', vapid, new URL(sub.endpoint), 'mailto:ops@example.com'),
      },
    })))
    expect(outcomes.slice(0, 30).every((outcome) => outcome.kind === 'gone')).toBe(true)
    expect(outcomes.slice(30).every((outcome) => outcome.kind === 'delivered')).toBe(true)
    for (const sub of subs.slice(30)) expect(tlsPush.receivedFor(sub.endpoint).map((push) => push.httpVersion)).toEqual(['2.0'])
    await client.close()
  })

  it('over h2: 429 pauses the origin, and a hanging push times out as retry', async () => {
    const client = new PushClient({ allowPrivateAddresses: true, ca: cert, http2: true, timeoutMs: 500 })
    const hanging = tlsPush.createSubscription()
    tlsPush.fail(hanging.endpoint, { hang: true })
    const hung = await client.send(pushRequest(hanging.endpoint))
    expect(hung).toMatchObject({ kind: 'retry', status: null })
    const limited = tlsPush.createSubscription()
    tlsPush.fail(limited.endpoint, { status: 429, retryAfter: 30 })
    expect(await client.send(pushRequest(limited.endpoint))).toEqual({ kind: 'retry', status: 429, retryAfterMs: 30_000 })
    const other = tlsPush.createSubscription()
    expect(client.pausedFor(new URL(other.endpoint))).toBeGreaterThan(29_000)
    await client.close()
  })

  it.each(['herald', 'undici'] as const)('over HTTP/1.1 (%s): delivered, gone, an Apple 400 with its reason, 429 pausing the origin, a hanging push timed out as retry, a private address refused', async (http1) => {
    const client = new PushClient({ allowPrivateAddresses: true, ca: cert, http2: false, http1, timeoutMs: 500 })
    const apple = await startPushService({ tls: { key, cert }, keyMismatch: 'apple' })
    expect(await pushVia(client, tlsPush)).toBe('1.1')
    const gone = tlsPush.createSubscription()
    tlsPush.fail(gone.endpoint, { status: 410 })
    expect(await client.send(pushRequest(gone.endpoint))).toEqual({ kind: 'gone', status: 410 })
    const restricted = apple.createSubscription({ applicationServerKey: generateVapidKeys().publicKey })
    const toApple = pushRequest(restricted.endpoint)
    const signed = { ...toApple, body: encryptPayload(Buffer.from('{"v":1}'), restricted.keys), headers: { ...toApple.headers, 'Content-Encoding': 'aes128gcm' } }
    expect(await client.send(signed)).toEqual({ kind: 'rejected', status: 400, reason: 'VapidPkHashMismatch' })
    const hanging = tlsPush.createSubscription()
    tlsPush.fail(hanging.endpoint, { hang: true })
    const hung = await client.send(pushRequest(hanging.endpoint))
    expect(hung).toMatchObject({ kind: 'retry', status: null })
    // What a broadcast's last_error says of it: no answer in time, not a failed connection.
    expect(pushErrorReason(hung as Exclude<PushOutcome, { kind: 'delivered' }>)).toBe('timeout')
    const limited = tlsPush.createSubscription()
    tlsPush.fail(limited.endpoint, { status: 429, retryAfter: 30 })
    expect(await client.send(pushRequest(limited.endpoint))).toEqual({ kind: 'retry', status: 429, retryAfterMs: 30_000 })
    expect(client.pausedFor(new URL(tlsPush.createSubscription().endpoint))).toBeGreaterThan(29_000)
    await client.close()
    await apple.close()

    const strict = new PushClient({ ca: cert, http2: false, http1, timeoutMs: 2000 })
    const before = tlsPush.requests
    const endpoint = new URL(tlsPush.createSubscription().endpoint.replace('127.0.0.1', 'localhost'))
    expect((await strict.send({ endpoint, body: Buffer.alloc(10), headers: { TTL: '60' } })).kind).toBe('rejected')
    const literal = new URL(tlsPush.createSubscription().endpoint)
    expect((await strict.send({ endpoint: literal, body: Buffer.alloc(10), headers: { TTL: '60' } })).kind).toBe('rejected')
    expect(tlsPush.requests).toBe(before)
    await strict.close()
  })

  it('refuses to connect to a private address unless allowed, without sending', async () => {
    const client = new PushClient({ ca: cert, timeoutMs: 2000 })
    const before = tlsPush.requests
    // "localhost" resolves to 127.0.0.1: the check runs on the address actually looked up.
    const sub = tlsPush.createSubscription()
    const endpoint = new URL(sub.endpoint.replace('127.0.0.1', 'localhost'))
    const outcome = await client.send({ endpoint, body: Buffer.alloc(10), headers: { TTL: '60' } })
    expect(outcome.kind).toBe('rejected')
    expect(tlsPush.requests).toBe(before)
    await client.close()
  })

  it('keeps at most its connection count in flight per origin, and a hanging origin does not hold back another', async () => {
    const hanging = await startPushService()
    const fine = await startPushService()
    const client = new PushClient({ allowPrivateAddresses: true, connectionsPerOrigin: 2, timeoutMs: 1500 })
    const request = (push: PushService, hang: boolean) => {
      const sub = push.createSubscription()
      if (hang) push.fail(sub.endpoint, { hang: true })
      const endpoint = new URL(sub.endpoint)
      return client.send({
        endpoint,
        body: encryptPayload(Buffer.from('{"v":1}'), sub.keys),
        headers: { TTL: '60', 'Content-Encoding': 'aes128gcm', Authorization: tokens.get('prj_test', vapid, endpoint, 'mailto:ops@example.com') },
      })
    }
    const stuck = Array.from({ length: 5 }, () => request(hanging, true))
    for (let waited = 0; hanging.requests < 2 && waited < 5000; waited += 20) await sleep(20)
    await sleep(200)
    // Two sent, three waiting in Herald (not queued on the push service's sockets).
    expect(hanging.requests).toBe(2)
    const other = await Promise.all(Array.from({ length: 4 }, () => request(fine, false)))
    expect(other.map((o) => o.kind)).toEqual(['delivered', 'delivered', 'delivered', 'delivered'])
    expect(hanging.requests).toBe(2)
    // Each waiting send goes out when a slot frees (here: the hanging ones time out).
    const outcomes = await Promise.all(stuck)
    expect(outcomes.every((o) => o.kind === 'retry')).toBe(true)
    expect(hanging.requests).toBe(5)
    await client.close()
    await Promise.all([hanging.close(), fine.close()])
  })

  it('starts a cold origin with SLOW_START_WINDOW pushes in flight and widens by one per answer up to its connections', async () => {
    // Each push is answered after 800 ms: the count that reached the service when the first answer comes back is the
    // window (service and client share this event loop, and a push the answer lets out has not arrived yet). Read at
    // that moment, not after a fixed wait: on a loaded machine the window's connections can take longer than one (CI saw 15 of 16 after 60 ms).
    // The cap is four windows, above the first two round trips: W, then 2W (one more per answer).
    const W = SLOW_START_WINDOW
    const slow = await startPushService({ delayMs: 800 })
    const cap = W * 4
    const client = new PushClient({ allowPrivateAddresses: true, connectionsPerOrigin: cap, timeoutMs: 5000 })
    const subs = Array.from({ length: W * 6 }, () => slow.createSubscription())
    // What had reached the service when each answer was heard. The pushes an answer lets out arrive later, so after
    // j answers at most the window plus two per answer (one in its slot, one for the wider window), and the cap in flight.
    const seen: number[] = []
    const all = subs.map((sub) => {
      return client.send(sealedRequest(sub))
        .finally(() => seen.push(slow.requests))
    })
    for (let waited = 0; seen.length === 0 && waited < 5000; waited += 5) await sleep(5)
    expect(seen[0]).toBe(W)
    expect((await Promise.all(all)).every((o) => o.kind === 'delivered')).toBe(true)
    expect(slow.requests).toBe(W * 6)
    // The first answer of the second round trip: the first W, and the 2W their answers let out (a window
    // widened by one per answer; by two it would be 4W, straight to the cap 5W).
    expect(seen[W]).toBe(W * 3)
    const over = seen.map((count, j) => ({ j, count, bound: Math.min(W + 2 * j, cap + j) })).filter((s) => s.count > s.bound)
    expect(over).toEqual([])
    // Warm now: a second wave goes out up to the connection count at once.
    // All of them reach the service before any is answered: no window held them back (a slow start
    // would send the one past its window only after an answer). Polled rather than slept, so a loaded machine
    // that is slow to encrypt and write does not fail it.
    const before = slow.requests
    let answered = 0
    const again = subs.slice(0, cap).map((sub) => {
      return client.send(sealedRequest(sub))
        .finally(() => answered++)
    })
    for (let waited = 0; slow.requests - before < cap && answered === 0 && waited < 2000; waited += 2) await sleep(2)
    expect({ received: slow.requests - before, answeredBefore: answered }).toEqual({ received: cap, answeredBefore: 0 })
    await Promise.all(again)
    await client.close()
    await slow.close()
  })

  it('widens a cold window on answers only: a push service that times out is given no more connections', async () => {
    const W = SLOW_START_WINDOW
    // Accepts connections and never answers: every push times out.
    const sockets: net.Socket[] = []
    const hang = net.createServer((socket) => {
      sockets.push(socket)
      socket.on('error', () => {})
    })
    await new Promise<void>((resolve) => hang.listen(0, '127.0.0.1', resolve))
    const port = (hang.address() as AddressInfo).port
    const client = new PushClient({ allowPrivateAddresses: true, http2: false, connectionsPerOrigin: W * 4, timeoutMs: 300 })
    const seen: number[] = []
    const outcomes = await Promise.all(Array.from({ length: W * 3 }, (_, i) =>
      client.send({ endpoint: new URL(`http://127.0.0.1:${port}/push/${i}`), body: Buffer.from('x'), headers: { TTL: '60' } }).finally(() => seen.push(sockets.length))))
    expect(outcomes.every((o) => o.kind === 'retry' && o.status === null)).toBe(true)
    // The first W time out together and let out W more, one in each slot, and none for a wider window
    // (one more per timeout would have opened 3W connections by the first timeout of the second round).
    expect(seen[W]).toBe(W * 2)
    expect(sockets.length).toBe(W * 3)
    await client.close()
    for (const socket of sockets) socket.destroy()
    await new Promise((resolve) => hang.close(resolve))
  })

  it('lets a batch plan more only while the pushes planned fit twice the window in flight, or after its wait', async () => {
    const slow = await startPushService({ delayMs: 100 })
    // A cap well above the window, so that only the window (one wider per answer) says when there is room.
    const client = new PushClient({ allowPrivateAddresses: true, connectionsPerOrigin: SLOW_START_WINDOW * 4, timeoutMs: 5000 })
    let started = false
    let answered = 0
    let answeredAtStart = -1
    // Nothing planned: at once.
    await client.whenRoom(10_000)
    // Planned past twice the cold window, no origin known yet (nothing sent): the next batch waits.
    const planned = SLOW_START_WINDOW * 2 + 36
    client.plan(planned)
    const next = client.whenRoom(10_000).then(() => {
      started = true
      answeredAtStart = answered
    })
    const subs = Array.from({ length: planned }, () => slow.createSubscription())
    const sends = subs.map((sub) => {
      return client
        .send(sealedRequest(sub))
        .finally(() => {
          answered++
          client.finished()
        })
    })
    // Cold origin: the window in flight, more planned than twice that, for a round trip at least.
    await sleep(60)
    expect(started).toBe(false)
    // The window widens with each answer; once 2 x window covers what is left planned, the batch starts:
    // after n answers, planned - n <= 2 x (window + n), i.e. n >= 36 / 3 = 12 (more may be counted by then).
    await next
    expect(started).toBe(true)
    expect(answeredAtStart).toBeGreaterThanOrEqual(12)
    await Promise.all(sends)
    // A batch that waits longer than its wait goes anyway (a push service that hangs holds back no one for ever).
    client.plan(1_000)
    const at = Date.now()
    await client.whenRoom(150)
    expect(Date.now() - at).toBeGreaterThanOrEqual(140)
    client.finished(1_000)
    await client.close()
    await slow.close()
  })

  it('opens a push service\'s first connections ahead of its pushes, and only where they will be used', async () => {
    const service = await startPushService()
    const client = new PushClient({ allowPrivateAddresses: true, http2: false, timeoutMs: 2000 })
    const subs = Array.from({ length: 5 }, () => service.createSubscription())
    // Not URLs, or not http(s) (even on the push service's own port): skipped, nothing thrown (their pushes fail when sent).
    const port = new URL(service.url).port
    client.preconnect([{ endpoint: 'not a url' }, { endpoint: 'mailto:x@example.com' }, { endpoint: `ftp://127.0.0.1:${port}/push/x` }, ...subs])
    await until(() => service.connections >= PRECONNECT)
    await sleep(50)
    expect(service.connections).toBe(PRECONNECT)
    // The pushes take those connections: none more opened for as many pushes at once, nor by another batch's preconnect.
    const pushes = subs.slice(0, PRECONNECT).map((sub) => client.send(sealedRequest(sub)))
    expect((await Promise.all(pushes)).map((o) => o.kind)).toEqual(Array(PRECONNECT).fill('delivered'))
    client.preconnect(subs)
    await sleep(50)
    expect(service.connections).toBe(PRECONNECT)
    await client.close()

    // One push for a push service: one connection.
    const single = new PushClient({ allowPrivateAddresses: true, http2: false, timeoutMs: 2000 })
    single.preconnect([subs[0]])
    await until(() => service.connections >= PRECONNECT + 1)
    await sleep(50)
    expect(service.connections).toBe(PRECONNECT + 1)
    await single.close()

    // Paused by a 429: nothing opened ahead until the pause is over.
    const paused = new PushClient({ allowPrivateAddresses: true, http2: false, timeoutMs: 2000 })
    service.fail(subs[4].endpoint, { status: 429, retryAfter: 30 })
    expect((await paused.send(sealedRequest(subs[4]))).kind).toBe('retry')
    const afterPause = service.connections
    paused.preconnect(subs)
    await sleep(100)
    expect(service.connections).toBe(afterPause)
    await paused.close()
    await service.close()

    // HTTP/2 (one session carries the pushes), and a private address not allowed: nothing opened ahead.
    const h2 = new PushClient({ allowPrivateAddresses: true, ca: cert, timeoutMs: 2000 })
    const privateOnly = new PushClient({ ca: cert, http2: false, timeoutMs: 2000 })
    const tlsBefore = tlsPush.connections
    const sub = tlsPush.createSubscription()
    h2.preconnect([sub])
    privateOnly.preconnect([sub, { endpoint: sub.endpoint.replace('127.0.0.1', 'localhost') }])
    await sleep(200)
    expect(tlsPush.connections).toBe(tlsBefore)
    // The push after it is refused as before, never sent.
    expect(await privateOnly.send(sealedRequest({ ...sub, endpoint: sub.endpoint.replace('127.0.0.1', 'localhost') }))).toMatchObject({ kind: 'rejected', status: 0 })
    expect(tlsPush.connections).toBe(tlsBefore)
    await Promise.all([h2.close(), privateOnly.close()])
  })

  it('classifies answers and reads Retry-After', () => {
    expect(classify(201, null).kind).toBe('delivered')
    expect(classify(410, null).kind).toBe('gone')
    expect(classify(404, null).kind).toBe('gone')
    expect(classify(413, null).kind).toBe('rejected')
    expect(classify(503, null).kind).toBe('retry')
    expect(classify(429, 1000)).toEqual({ kind: 'retry', status: 429, retryAfterMs: 1000 })
    expect(parseRetryAfter('120')).toBe(120_000)
    expect(parseRetryAfter(new Date(Date.now() + 5000).toUTCString(), Date.now())).toBeGreaterThan(3000)
    expect(parseRetryAfter('soon')).toBeNull()
  })
})
