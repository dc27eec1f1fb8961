// A real web push service on localhost for tests, benchmarks and development
// (`herald dev push-service`, whose HTTP control routes are in
// push-service-control.ts). It checks
// what a push service checks (RFC 8030 headers, RFC 8292 VAPID token, the
// 4096-byte limit) and decrypts every sampled message with the subscription's
// private key (RFC 8291/8188). The decrypt side derives keys with hkdfSync,
// not the HMAC chain src/delivery/encryption.ts uses, so a bug there cannot
// cancel itself out here.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createSecureServer, type Http2SecureServer } from 'node:http2'
import type { Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { createDecipheriv, createECDH, createPublicKey, hkdfSync, randomBytes, verify, type ECDH, type KeyObject } from 'node:crypto'

export interface TestSubscription {
  endpoint: string
  keys: { p256dh: string; auth: string }
}

export interface ReceivedPush {
  subscriptionId: string
  headers: {
    ttl: number
    urgency: string | null
    topic: string | null
    contentEncoding: string
    authorization: string
  }
  /** The decrypted body, parsed when it is JSON, else the string. */
  payload: unknown
  /** Bytes of the encrypted body as it arrived (RFC 8291 aes128gcm). */
  bodyBytes: number
  /** '1.1' or '2.0': the HTTP version the sender used. */
  httpVersion: string
  at: number
}

export interface RejectedPush {
  subscriptionId: string | null
  status: number
  reason: string
  at: number
}

export type FailBehaviour = (
  | { status: 400 | 401 | 403 | 404 | 410 | 413 | 500 | 503 }
  | { status: 429; retryAfter: number }
  | { hang: true } // never answers until close()
) & { times?: number } // fail this many times, then accept; default forever

export interface PushServiceOptions {
  /** Delay before every answer, in ms. Default 0. */
  delayMs?: number
  /** Share of accepted requests that are verified and decrypted: 1 (default) all, 0.01 one in a hundred.
   *  Requests not sampled are only counted and answered 201; they are not in `received`. */
  verifySample?: number
  /** Keep the arrival time (epoch ms) of every accepted push in `arrivals` (benchmarks). Default false. */
  recordArrivals?: boolean
  /** Serve HTTPS with this certificate, speaking HTTP/2 and HTTP/1.1 (ALPN), like FCM. Default: plain HTTP/1.1. */
  tls?: { key: string; cert: string }
  /** Port to listen on. Default 0 (any free port). */
  port?: number
  /** Address to listen on. Default 127.0.0.1; 0.0.0.0 (or another interface) lets workers on other machines push to it. */
  host?: string
  /**
   * Base URL that other machines reach it at (scheme, host, port; no path),
   * written into every endpoint and required as every VAPID token's `aud`.
   * Default: the scheme, the listening host and the port
   * (127.0.0.1 when listening on all interfaces).
   */
  publicUrl?: string
  /** Handles every request that is not a push (POST /push/:id); default: 404. */
  otherRequests?: (req: IncomingMessage, res: ServerResponse) => void
  /**
   * How a push signed with another VAPID key than the subscription's is
   * answered, as each push service does (docs/vapid-keys.md): 'fcm' 403 (the
   * default), 'apple' 400 {"reason":"VapidPkHashMismatch"}, 'mozilla' 401 {"errno":109}.
   */
  keyMismatch?: 'fcm' | 'apple' | 'mozilla'
}

const KEY_MISMATCH_ANSWERS = {
  fcm: { status: 403, body: '' },
  apple: { status: 400, body: '{"reason":"VapidPkHashMismatch"}' },
  mozilla: { status: 401, body: '{"code":401,"errno":109,"error":"Unauthorized","message":"VAPID public key mismatch"}' },
} as const

export interface PushService {
  /** Base URL, e.g. http://127.0.0.1:40123; also the origin a VAPID token's aud must name. */
  url: string
  /** Where it really listens, e.g. http://127.0.0.1:40123: `url` unless a public URL was given. */
  listening: string
  /** A new subscription with a real P-256 key pair. With applicationServerKey set, the
   *  subscription is restricted to that VAPID key (RFC 8292 §4.2): another key gets 403. */
  createSubscription(options?: { applicationServerKey?: string; sharedKeys?: boolean }): TestSubscription
  received: ReceivedPush[]
  rejected: RejectedPush[]
  receivedFor(endpoint: string): ReceivedPush[]
  fail(endpoint: string, behaviour: FailBehaviour): void
  /** Clears received, rejected, failure modes and counters; subscriptions stay. */
  reset(): void
  /** Requests answered 201. */
  readonly count: number
  /** Arrival times of accepted pushes, when started with recordArrivals. */
  readonly arrivals: number[]
  /** Subscriptions that had a push accepted, each counted once, when started with recordArrivals (count - distinct = duplicates). */
  readonly distinct: number
  /** All requests that reached the service, whatever the answer. */
  readonly requests: number
  /** TCP connections accepted since the service started (reset() leaves it). */
  readonly connections: number
  /** Resolves once count >= n; rejects after timeoutMs (default 10 s). */
  waitForCount(n: number, timeoutMs?: number): Promise<void>
  close(): Promise<void>
}

const MAX_BODY = 4096
const MAX_TOKEN_LIFETIME_SEC = 24 * 3600 // RFC 8292 §2: exp no more than 24 h ahead
const URGENCIES = new Set(['very-low', 'low', 'normal', 'high'])
const TOPIC = /^[A-Za-z0-9_-]{1,32}$/
const VAPID = /^vapid\s+t=([A-Za-z0-9_.-]+)\s*,\s*k=([A-Za-z0-9_=-]+)\s*$/i

interface Subscription {
  id: string
  ecdh: ECDH
  publicKey: Buffer
  auth: Buffer
  applicationServerKey: string | null
}

/**
 * sharedKeys: the subscription takes one of this many key pairs instead of a
 * new one (benchmarks of a million subscriptions: a key pair each would cost
 * the push service ~1 GB and half a minute). Herald's work per push is the
 * same either way: it encrypts each push with a new key of its own.
 */
const SHARED_KEY_PAIRS = 1024

interface SharedKeys {
  ecdh: ECDH
  publicKey: Buffer
  auth: Buffer
  encoded: { p256dh: string; auth: string }
}

function newKeys(): SharedKeys {
  const ecdh = createECDH('prime256v1')
  const publicKey = ecdh.generateKeys()
  const auth = randomBytes(16)
  return { ecdh, publicKey, auth, encoded: { p256dh: publicKey.toString('base64url'), auth: auth.toString('base64url') } }
}

/** Decrypts an aes128gcm web push body (one record) for the user agent holding `receiver`'s keys. */
export function decryptPushPayload(body: Buffer, receiver: { privateKey: Buffer; auth: Buffer }): Buffer {
  const ecdh = createECDH('prime256v1')
  ecdh.setPrivateKey(receiver.privateKey)
  return decryptWith(body, ecdh, ecdh.getPublicKey(), receiver.auth)
}

function decryptWith(body: Buffer, ecdh: ECDH, uaPublic: Buffer, auth: Buffer): Buffer {
  if (body.length < 21) throw new Error('body shorter than the aes128gcm header')
  const salt = body.subarray(0, 16)
  const rs = body.readUInt32BE(16)
  const idlen = body[20]
  if (idlen !== 65) throw new Error(`keyid must be the 65-byte sender key, idlen is ${idlen}`)
  const asPublic = body.subarray(21, 86)
  const record = body.subarray(86)
  if (rs < 18) throw new Error(`record size ${rs} is below the minimum 18`)
  if (record.length > rs) throw new Error('more than one record (RFC 8291 §4 allows one)')
  if (record.length < 17) throw new Error('record shorter than the tag and delimiter')
  const secret = ecdh.computeSecret(asPublic)
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), uaPublic, asPublic])
  const ikm = Buffer.from(hkdfSync('sha256', secret, auth, keyInfo, 32))
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16))
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12))
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce)
  decipher.setAuthTag(record.subarray(record.length - 16))
  const padded = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()])
  let end = padded.length - 1
  while (end >= 0 && padded[end] === 0) end--
  if (end < 0 || padded[end] !== 2) throw new Error('last record does not end with the 0x02 delimiter')
  return padded.subarray(0, end)
}

function decodeJson(part: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'))
    return value && typeof value === 'object' ? value : null
  } catch {
    return null
  }
}

/** The origin of a public URL given by the operator: http(s), no path, query or credentials. */
export function publicOrigin(publicUrl: string): string {
  let parsed: URL
  try {
    parsed = new URL(publicUrl)
  } catch {
    throw new Error(`public URL "${publicUrl}" is not a URL`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error(`public URL "${publicUrl}" must be http: or https:`)
  if (parsed.pathname !== '/' || parsed.search || parsed.hash || parsed.username || parsed.password) {
    throw new Error(`public URL "${publicUrl}" must be an origin only (scheme, host, port), without a path`)
  }
  return parsed.origin
}

function listeningUrl(options: PushServiceOptions, port: number): string {
  const host = options.host ?? '127.0.0.1'
  // Listening on every interface: this machine itself is still reachable on loopback.
  const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host
  return `${options.tls ? 'https' : 'http'}://${shown}:${port}`
}

export async function startPushService(options: PushServiceOptions = {}): Promise<PushService> {
  const publicBase = options.publicUrl ? publicOrigin(options.publicUrl) : null // checked before anything listens
  const delayMs = options.delayMs ?? 0
  const verifySample = options.verifySample ?? 1
  const recordArrivals = options.recordArrivals ?? false
  const arrivals: number[] = []
  const acceptedIds = new Set<string>()
  const subscriptions = new Map<string, Subscription>()
  const failures = new Map<string, FailBehaviour>()
  const publicKeys = new Map<string, KeyObject>()
  const timers = new Set<NodeJS.Timeout>()
  const received: ReceivedPush[] = []
  const rejected: RejectedPush[] = []
  let count = 0
  let requests = 0
  let connections = 0
  let url = ''

  function answer(res: ServerResponse, status: number, headers: Record<string, string> = {}, body = ''): void {
    const send = () => {
      if (res.destroyed) return
      res.writeHead(status, { 'content-length': String(Buffer.byteLength(body)), ...(body ? { 'content-type': 'application/json' } : {}), ...headers })
      res.end(body)
    }
    if (delayMs <= 0) return send()
    const timer = setTimeout(() => {
      timers.delete(timer)
      send()
    }, delayMs)
    timers.add(timer)
  }

  function reject(res: ServerResponse, subscriptionId: string | null, status: number, reason: string, body = ''): void {
    rejected.push({ subscriptionId, status, reason, at: Date.now() })
    answer(res, status, {}, body)
  }

  function accept(res: ServerResponse, subscriptionId: string): void {
    count++
    if (recordArrivals) {
      arrivals.push(Date.now())
      acceptedIds.add(subscriptionId)
    }
    answer(res, 201, { location: `${url}/message/${count}` })
  }

  function vapidKey(k: string): KeyObject | null {
    let key = publicKeys.get(k)
    if (key) return key
    const point = Buffer.from(k, 'base64url')
    if (point.length !== 65 || point[0] !== 4) return null
    try {
      const jwk = { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') }
      key = createPublicKey({ key: jwk, format: 'jwk' })
    } catch {
      return null
    }
    publicKeys.set(k, key)
    return key
  }

  // Returns [status, reason, body?] when the Authorization header would be refused, else null.
  function checkVapid(authorization: string | undefined, sub: Subscription): [number, string, string?] | null {
    const match = authorization ? VAPID.exec(authorization) : null
    if (!match) return [401, 'missing or malformed vapid Authorization']
    const [, token, k] = match
    const key = vapidKey(k)
    if (!key) return [403, 'k is not a P-256 public key']
    if (sub.applicationServerKey && k !== sub.applicationServerKey) {
      const mismatch = KEY_MISMATCH_ANSWERS[options.keyMismatch ?? 'fcm']
      return [mismatch.status, 'k is not the key the subscription was created with', mismatch.body]
    }
    const parts = token.split('.')
    if (parts.length !== 3) return [403, 'token is not a JWS']
    const header = decodeJson(parts[0])
    if (header?.alg !== 'ES256' || header?.typ !== 'JWT') return [403, 'JWT header must be {typ: JWT, alg: ES256}']
    const signature = Buffer.from(parts[2], 'base64url')
    const signed = Buffer.from(`${parts[0]}.${parts[1]}`)
    if (!verify('sha256', signed, { key, dsaEncoding: 'ieee-p1363' }, signature)) return [403, 'JWT signature does not verify with k']
    const claims = decodeJson(parts[1])
    if (!claims) return [403, 'JWT claims are not a JSON object']
    if (claims.aud !== url) return [403, `aud ${String(claims.aud)} is not ${url}`]
    const now = Math.floor(Date.now() / 1000)
    if (typeof claims.exp !== 'number' || !Number.isInteger(claims.exp)) return [403, 'exp is not an integer']
    if (claims.exp <= now) return [403, 'token expired']
    if (claims.exp > now + MAX_TOKEN_LIFETIME_SEC) return [403, 'exp more than 24 h ahead']
    if (typeof claims.sub !== 'string' || !/^(mailto:|https:)/.test(claims.sub)) return [403, 'sub is not a mailto: or https: URI']
    return null
  }

  function verifyAndRecord(req: IncomingMessage, res: ServerResponse, sub: Subscription, body: Buffer): void {
    const h = req.headers
    if (h['content-encoding'] !== 'aes128gcm') return reject(res, sub.id, 400, `Content-Encoding ${h['content-encoding']} is not aes128gcm`)
    const ttl = h.ttl
    if (typeof ttl !== 'string' || !/^\d+$/.test(ttl)) return reject(res, sub.id, 400, `TTL ${ttl} is not a non-negative integer`)
    const urgency = typeof h.urgency === 'string' ? h.urgency : null
    if (urgency !== null && !URGENCIES.has(urgency)) return reject(res, sub.id, 400, `Urgency ${urgency} is not a known level`)
    const topic = typeof h.topic === 'string' ? h.topic : null
    if (topic !== null && !TOPIC.test(topic)) return reject(res, sub.id, 400, `Topic ${topic} is not 1-32 base64url characters`)
    const refused = checkVapid(h.authorization, sub)
    if (refused) return reject(res, sub.id, refused[0], refused[1], refused[2])
    let plaintext: string
    try {
      plaintext = decryptWith(body, sub.ecdh, sub.publicKey, sub.auth).toString('utf8')
    } catch (error) {
      return reject(res, sub.id, 400, `decryption failed: ${(error as Error).message}`)
    }
    let payload: unknown = plaintext
    try {
      payload = JSON.parse(plaintext)
    } catch {
      // not JSON: keep the string
    }
    received.push({
      subscriptionId: sub.id,
      headers: { ttl: Number(ttl), urgency, topic, contentEncoding: 'aes128gcm', authorization: h.authorization as string },
      payload,
      bodyBytes: body.length,
      httpVersion: req.httpVersion,
      at: Date.now(),
    })
    accept(res, sub.id)
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const match = req.method === 'POST' ? /^\/push\/([A-Za-z0-9_-]+)$/.exec(req.url ?? '') : null
    if (!match && options.otherRequests) return options.otherRequests(req, res)
    requests++
    const sub = match ? subscriptions.get(match[1]) : undefined
    if (!sub) {
      req.resume()
      return reject(res, match ? match[1] : null, 404, 'no such subscription')
    }
    const failure = failures.get(sub.id)
    if (failure) {
      if (failure.times !== undefined && --failure.times <= 0) failures.delete(sub.id)
      req.resume()
      if ('hang' in failure) return // close() destroys the socket
      const headers: Record<string, string> = failure.status === 429 ? { 'retry-after': String(failure.retryAfter) } : {}
      rejected.push({ subscriptionId: sub.id, status: failure.status, reason: 'told to fail', at: Date.now() })
      return answer(res, failure.status, headers)
    }
    if (verifySample < 1 && Math.random() >= verifySample) {
      req.resume()
      req.on('end', () => accept(res, sub.id))
      return
    }
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_BODY) chunks.push(chunk) // past the limit keep draining, keep nothing
    })
    req.on('end', () => {
      if (size > MAX_BODY) return reject(res, sub.id, 413, `body is ${size} bytes, over ${MAX_BODY}`)
      verifyAndRecord(req, res, sub, Buffer.concat(chunks, size))
    })
  }

  const sockets = new Set<Socket>()
  let server: ReturnType<typeof createServer> | Http2SecureServer
  if (options.tls) {
    const secure = createSecureServer({ ...options.tls, allowHTTP1: true, settings: { maxConcurrentStreams: 1000 } })
    secure.on('request', (req, res) => handle(req as unknown as IncomingMessage, res as unknown as ServerResponse))
    server = secure
  } else {
    const plain = createServer(handle)
    // Longer than undici's default keep-alive (4 s) so the client, not the server, closes idle sockets.
    plain.keepAliveTimeout = 60_000
    server = plain
  }
  server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    connections++
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject) // e.g. the port is taken
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const listening = listeningUrl(options, (server.address() as AddressInfo).port)
  url = publicBase ?? listening

  const keyPool: SharedKeys[] = []
  let nextShared = 0

  function idOf(endpoint: string): string {
    const id = new URL(endpoint).pathname.replace(/^\/push\//, '')
    if (!subscriptions.has(id)) throw new Error(`not a subscription of this push service: ${endpoint}`)
    return id
  }

  return {
    url,
    listening,
    createSubscription({ applicationServerKey, sharedKeys } = {}) {
      const id = randomBytes(12).toString('base64url')
      let keys: SharedKeys
      if (sharedKeys) {
        // One of a fixed set of key pairs (a million subscriptions for a benchmark, each still its own endpoint).
        if (keyPool.length < SHARED_KEY_PAIRS) keyPool.push(newKeys())
        keys = keyPool[nextShared++ % keyPool.length]
      } else {
        keys = newKeys()
      }
      subscriptions.set(id, { id, ecdh: keys.ecdh, publicKey: keys.publicKey, auth: keys.auth, applicationServerKey: applicationServerKey ?? null })
      return { endpoint: `${url}/push/${id}`, keys: { p256dh: keys.encoded.p256dh, auth: keys.encoded.auth } }
    },
    received,
    rejected,
    receivedFor(endpoint) {
      const id = idOf(endpoint)
      return received.filter((push) => push.subscriptionId === id)
    },
    fail(endpoint, behaviour) {
      const id = idOf(endpoint)
      if (behaviour.times !== undefined && behaviour.times <= 0) failures.delete(id)
      else failures.set(id, { ...behaviour })
    },
    reset() {
      received.length = 0
      rejected.length = 0
      failures.clear()
      arrivals.length = 0
      acceptedIds.clear()
      count = 0
      requests = 0
    },
    get count() {
      return count
    },
    arrivals,
    get distinct() {
      return acceptedIds.size
    },
    get requests() {
      return requests
    },
    get connections() {
      return connections
    },
    async waitForCount(n, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (count < n) {
        if (Date.now() > deadline) throw new Error(`push service got ${count} of ${n} pushes in ${timeoutMs} ms`)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    },
    async close() {
      for (const timer of timers) clearTimeout(timer)
      timers.clear()
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
