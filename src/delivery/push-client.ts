// Sends encrypted pushes to push services. One set of keep-alive connections
// per push service origin, reused across broadcasts and projects: HTTP/1.1
// through http1-origin.ts (or undici's Pool, HERALD_PUSH_HTTP1=undici), and
// HTTP/2 (node:http2) on HTTPS origins that offer it, when turned on. Every connection checks the address it actually
// reaches (a DNS answer that turns private is refused), and a push service
// that answered 429 is left alone until its Retry-After has passed.
// Pushes in flight are capped per origin at its connection count: the rest
// wait here, as a closure each, rather than as undici requests queued in the
// pool (several KB each; thousands of them were most of a fan-out's heap). The
// cap is per origin so that a push service that hangs holds only its own slots.
// A cold origin starts with a few pushes in flight and widens by one per
// answer (doubling each round trip, like TCP's slow start) up to the cap, so
// a big broadcast's first pushes do not queue behind hundreds of TLS
// handshakes started at once.
import { createSecureContext, type SecureContext } from 'node:tls'
import { buildConnector, Pool, type Dispatcher } from 'undici'
import { ANSWER_BODY_KEPT, Http2Origin, NoHttp2Error } from './http2-origin.ts'
import { Http1Origin, type Http1Handler } from './http1-origin.ts'
import { parseRetryAfterMs } from '../platform/outbound/http-client.ts'
import { NOT_PUBLIC_CODE, publicOnlyConnector } from '../platform/outbound/public-connect.ts'

export type PushOutcome =
  | { kind: 'delivered'; status: number }
  /** 404 or 410: the subscription is dead. */
  | { kind: 'gone'; status: number }
  /** Another 4xx: the push service refuses this message; retrying will not help. `reason`: the `reason` of a 400's JSON body (Apple's), when it gave one. */
  | { kind: 'rejected'; status: number; reason?: string }
  /** 429, 5xx, timeout or network error: try again later. */
  | { kind: 'retry'; status: number | null; retryAfterMs: number | null; error?: string }

export interface PushRequest {
  endpoint: URL
  body: Buffer
  headers: Record<string, string>
}

export interface PushClientOptions {
  /** Give up on a push service that sends no answer within this long. Default 10 s. */
  timeoutMs?: number
  /** Connections per push service origin. Default 128. */
  connectionsPerOrigin?: number
  /** Allow loopback and private addresses (development and tests). Default false. */
  allowPrivateAddresses?: boolean
  /** Wait used when a 429 carries no usable Retry-After. Default 60 s. */
  defaultRetryAfterMs?: number
  /** Offer HTTP/2 (ALPN) to HTTPS push services, through node:http2 sessions. Default true. */
  http2?: boolean
  /** HTTP/2 sessions (TLS connections) per origin, streams spread over them. Default 4. */
  http2Sessions?: number
  /** Extra CA certificate (PEM) to trust, for push services with a private certificate (tests). */
  ca?: string
  /** Who speaks HTTP/1.1: Herald's own framing on undici's connector (default), or undici's Pool (the fallback). */
  http1?: 'herald' | 'undici'
}

interface Origin {
  /** HTTP/1.1 keep-alive connections: for http: origins and HTTPS ones without h2. One of the two, as the client's http1 option says. */
  h1: Http1Origin | null
  pool: Pool | null
  /** Set while the origin may speak h2; dropped once it answers ALPN without it. */
  h2: Http2Origin | null
  /** Epoch ms before which nothing is sent to this origin (after a 429). */
  pausedUntil: number
  /** Requests sent and not yet answered (at most the connection count). */
  inFlight: number
  /** Sends waiting for one of those to finish, first come first served. */
  waiting: Array<() => void>
  /** Pushes allowed in flight now: SLOW_START_WINDOW on a cold origin, one more per HTTP answer (not per timeout or network error), up to the connection count. */
  window: number
  /** When the last push to it finished (epoch ms): idle past the keep-alive, its connections are gone and it is cold again. */
  lastActiveAt: number
}

/**
 * Pushes in flight to a cold origin (one TLS handshake each on HTTP/1.1).
 * 64 rather than 16: a fan-out's first round trip leaves the main thread
 * half idle, and starting more handshakes in it brings the ramp to 512 two
 * round trips sooner (20,000 subscribers: 3-6% more pushes/s, the first
 * push no later; 128 did no better; docs/performance.md).
 */
export const SLOW_START_WINDOW = 64
/**
 * Connections an origin is given ahead of a batch's pushes (preconnect):
 * enough for the first pushes to a cold one to leave once encrypted. Not the
 * whole slow-start window: on two cores, 16 handshakes at once held the main
 * thread ~40 ms while the batch was being prepared, and its first push left
 * no sooner (docs/performance.md); the window's other connections open as its
 * pushes are handed over.
 */
export const PRECONNECT = 2
/** Idle connections are closed after this long (the pool's keepAliveTimeout), and an origin is cold again. */
const KEEP_ALIVE_MS = 60_000

/** The scheme, host and port of an endpoint, as written (`https://host:port`): a key for its origin without parsing it. */
function endpointPrefix(endpoint: string): string {
  const pathAt = endpoint.indexOf('/', endpoint.indexOf('//') + 2)
  return pathAt < 0 ? endpoint : endpoint.slice(0, pathAt)
}

/** Retry-After (seconds or an HTTP date) in ms from now; null when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | null {
  return parseRetryAfterMs((Array.isArray(value) ? value[0] : value) ?? null, now)
}

export function classify(status: number, retryAfterMs: number | null): PushOutcome {
  if (status >= 200 && status < 300) return { kind: 'delivered', status }
  if (status === 404 || status === 410) return { kind: 'gone', status }
  if (status === 429 || status === 408 || status >= 500) return { kind: 'retry', status, retryAfterMs }
  return { kind: 'rejected', status }
}

/** The `reason` of a JSON answer body ({"reason":"VapidPkHashMismatch"}, Apple's form), or null. */
export function answerReason(body: string): string | null {
  try {
    const parsed: unknown = JSON.parse(body)
    const reason = parsed && typeof parsed === 'object' ? (parsed as { reason?: unknown }).reason : undefined
    return typeof reason === 'string' ? reason.slice(0, 100) : null
  } catch {
    return null
  }
}

/** Called once with a push's outcome (PushClient.dispatchPush). It should not throw: what it throws is reported as an unhandled rejection, and the push stays settled. */
export type PushDone = (outcome: PushOutcome) => void

/**
 * One HTTP/1.1 push through the pool's dispatcher: keeps only the status,
 * Retry-After and (for a 400) the start of the body, discards the rest as it
 * arrives, and hands the outcome to the client when the answer is complete.
 * One object per push, its methods on the prototype: no body stream, no
 * promise and no closures per push (issue 26: the send path's allocations).
 */
class PushAnswer implements Dispatcher.DispatchHandler, Http1Handler {
  private statusCode = 0
  private retryAfter: string | undefined = undefined
  private body = ''
  /** Answered or failed: once only, whatever undici calls after. */
  private settled = false

  constructor(
    private readonly client: PushClient,
    private readonly origin: Origin,
    private readonly done: PushDone,
  ) {}

  // The handler methods undici 7's Pool checks for (it refuses a handler of only the newer onResponse* ones).
  onConnect(): void {}

  onHeaders(status: number, rawHeaders: Buffer[]): boolean {
    this.statusCode = status
    for (let i = 0; i < rawHeaders.length; i += 2) {
      if (rawHeaders[i].length === 11 && rawHeaders[i].toString('latin1').toLowerCase() === 'retry-after') {
        this.retryAfter = rawHeaders[i + 1].toString('latin1')
      }
    }
    return true
  }

  onData(chunk: Buffer): boolean {
    // The answer's body is not needed (but a 400's start, where Apple names why it refused); read and dropped so the connection is reused.
    if (this.statusCode === 400 && this.body.length < ANSWER_BODY_KEPT) this.body += chunk.toString('utf8', 0, ANSWER_BODY_KEPT - this.body.length)
    return true
  }

  onComplete(): void {
    if (this.settled) return
    this.settled = true
    this.client.settle(this.origin, true, this.client.answered(this.origin, this.statusCode, this.retryAfter, this.body), this.done)
  }

  /** The whole answer at once (Http1Origin). */
  onAnswer(status: number, retryAfter: string | undefined, body: string): void {
    this.statusCode = status
    this.retryAfter = retryAfter
    this.body = body
    this.onComplete()
  }

  onError(err: Error): void {
    if (this.settled) return
    this.settled = true
    this.client.settle(this.origin, true, networkFailure(err), this.done)
  }
}

/** A push that got no answer: refused for good when its host is private, else to retry. */
function networkFailure(err: unknown): PushOutcome {
  const error = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException }
  const code = error.code === NOT_PUBLIC_CODE || error.cause?.code === NOT_PUBLIC_CODE ? NOT_PUBLIC_CODE : error.code
  // An endpoint whose host resolves to a private address is refused for good, never sent to.
  if (code === NOT_PUBLIC_CODE) return { kind: 'rejected', status: 0 }
  return { kind: 'retry', status: null, retryAfterMs: null, error: code ?? error.message }
}

/** Pushes planned per push in flight allowed (whenRoom): one round trip in flight, one more ready. */
const PLANNED_PER_SLOT = 2

export class PushClient {
  private readonly origins = new Map<string, Origin>()
  /** Pushes batches have planned (plan()) and not yet finished with (finished()): encrypting, waiting, in flight. */
  private planned = 0
  /** Callers of whenRoom() still waiting, first come first served. */
  private roomWaiters: Array<() => void> = []
  private readonly timeoutMs: number
  private readonly connections: number
  private readonly allowPrivate: boolean
  private readonly defaultRetryAfterMs: number
  private readonly http2: boolean
  private readonly http2Sessions: number
  private readonly ca: string | undefined
  private readonly http1: 'herald' | 'undici'
  /**
   * One TLS context for every connection of this client, rather than one
   * built per connection from the same options (undici's default): ~0.18 ms
   * less main-thread CPU per TLS connection, and a fan-out opens up to
   * HERALD_PUSH_CONNECTIONS of them per push service.
   */
  private readonly tlsContext: SecureContext

  constructor(options: PushClientOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 10_000
    this.connections = options.connectionsPerOrigin ?? 128
    this.allowPrivate = options.allowPrivateAddresses ?? false
    this.defaultRetryAfterMs = options.defaultRetryAfterMs ?? 60_000
    this.http2 = options.http2 ?? true
    this.http2Sessions = options.http2Sessions ?? 4
    this.ca = options.ca
    this.http1 = options.http1 ?? 'herald'
    this.tlsContext = createSecureContext(this.ca ? { ca: this.ca } : {})
  }

  private origin(url: URL): Origin {
    let origin = this.origins.get(url.origin)
    if (!origin) {
      const https = url.protocol === 'https:'
      // Unless allowed, sockets open only to public addresses, judged when connecting (DNS can change).
      const connect = this.allowPrivate
        ? buildConnector({ timeout: this.timeoutMs, secureContext: this.tlsContext })
        : publicOnlyConnector({ timeout: this.timeoutMs, secureContext: this.tlsContext })
      const h1 = this.http1 === 'herald'
        ? new Http1Origin(url, { connect, connections: this.connections, timeoutMs: this.timeoutMs, keepAliveMs: KEEP_ALIVE_MS })
        : null
      const pool = h1
        ? null
        : new Pool(url.origin, {
          connections: this.connections,
          pipelining: 1,
          keepAliveTimeout: KEEP_ALIVE_MS,
          headersTimeout: this.timeoutMs,
          bodyTimeout: this.timeoutMs,
          connect,
        })
      const h2 = https && this.http2
        ? new Http2Origin(url, { timeoutMs: this.timeoutMs, allowPrivateAddresses: this.allowPrivate, sessions: this.http2Sessions, ca: this.ca })
        : null
      origin = { h1, pool, h2, pausedUntil: 0, inFlight: 0, waiting: [], window: SLOW_START_WINDOW, lastActiveAt: 0 }
      this.origins.set(url.origin, origin)
    }
    return origin
  }

  /** Ms left on a 429 pause of this endpoint's push service, or 0. */
  pausedFor(endpoint: URL, now = Date.now()): number {
    const origin = this.origins.get(endpoint.origin)
    return origin ? Math.max(0, origin.pausedUntil - now) : 0
  }

  /** One push; resolves with its outcome (never rejects). */
  send(request: PushRequest): Promise<PushOutcome> {
    return new Promise((resolve) => this.dispatchPush(request, resolve))
  }

  /**
   * One push, its outcome handed to `done` once (never thrown): the form of
   * send() a fan-out uses, with no promise per push. A push waits here, as
   * one closure, while its origin has as many in flight as its window allows.
   */
  dispatchPush(request: PushRequest, done: PushDone): void {
    const origin = this.origin(request.endpoint)
    if (origin.inFlight === 0 && Date.now() - origin.lastActiveAt > KEEP_ALIVE_MS) origin.window = SLOW_START_WINDOW
    if (origin.inFlight >= Math.min(this.connections, origin.window)) {
      // The slot is counted by the push that hands it over (settle()).
      origin.waiting.push(() => this.start(origin, request, done))
      return
    }
    origin.inFlight++
    this.start(origin, request, done)
  }

  /** Sends a push that holds one of its origin's slots. */
  private start(origin: Origin, request: PushRequest, done: PushDone): void {
    // A push answered at once from a 429 pause opens no connection: it neither widens the window nor keeps the origin warm.
    const paused = origin.pausedUntil - Date.now()
    if (paused > 0) {
      this.settle(origin, false, { kind: 'retry', status: 429, retryAfterMs: paused }, done)
      return
    }
    const path = request.endpoint.pathname + request.endpoint.search
    if (origin.h2) {
      const h2 = origin.h2
      h2.request(path, request.headers, request.body).then(
        (answer) => this.settle(origin, true, this.answered(origin, answer.status, answer.headers['retry-after'], answer.body), done),
        (err: unknown) => {
          if (!(err instanceof NoHttp2Error)) {
            this.settle(origin, true, networkFailure(err), done)
            return
          }
          // The origin does not speak h2: HTTP/1.1 from now on, this push included.
          if (origin.h2 === h2) {
            origin.h2 = null
            void h2.close()
          }
          this.dispatchH1(origin, path, request, done)
        },
      )
      return
    }
    this.dispatchH1(origin, path, request, done)
  }

  private dispatchH1(origin: Origin, path: string, request: PushRequest, done: PushDone): void {
    const answer = new PushAnswer(this, origin, done)
    if (origin.h1) {
      origin.h1.dispatch(path, request.headers, request.body, answer)
      return
    }
    try {
      origin.pool!.dispatch({ method: 'POST', path, headers: request.headers, body: request.body }, answer)
    } catch (err) {
      // undici calls onError itself for a closed pool; what it throws is answered here, through the same once-only guard.
      answer.onError(err as Error)
    }
  }

  /** What an answer means: its outcome, and a 429's pause of the whole origin. (For PushAnswer.) */
  answered(origin: Origin, status: number, retryAfterHeader: string | string[] | undefined, body: string | undefined): PushOutcome {
    const retryAfterMs = parseRetryAfter(retryAfterHeader)
    if (status === 429) {
      const wait = retryAfterMs ?? this.defaultRetryAfterMs
      origin.pausedUntil = Math.max(origin.pausedUntil, Date.now() + wait)
      return { kind: 'retry', status: 429, retryAfterMs: wait }
    }
    const outcome = classify(status, retryAfterMs)
    if (outcome.kind === 'rejected' && body) {
      const reason = answerReason(body)
      if (reason) outcome.reason = reason
    }
    return outcome
  }

  /** (For PushAnswer.) A push is over: its slot passes straight to the next waiter (an answer widens the window, so one more may start), then `done` hears the outcome. */
  settle(origin: Origin, sent: boolean, outcome: PushOutcome, done: PushDone): void {
    if (sent) {
      origin.lastActiveAt = Date.now()
      // Only an answer widens the window: a push service that times out or drops connections is given no more of them.
      if ((outcome.status ?? 0) > 0 && origin.window < this.connections) origin.window++
    }
    origin.inFlight--
    const cap = Math.min(this.connections, origin.window)
    while (origin.inFlight < cap && origin.waiting.length > 0) {
      origin.inFlight++
      // Started once the answer's handling is over: undici counts the connection busy until then, and would open another.
      queueMicrotask(origin.waiting.shift()!)
    }
    try {
      done(outcome)
    } catch (err) {
      // Not into undici's parser or the h2 session, and never a second settle: the process's handler reports it.
      void Promise.reject(err)
    }
  }

  /**
   * Starts the TLS handshakes of a batch's first pushes while the batch is
   * still being saved, checked and encrypted: each push service among these
   * endpoints is given up to PRECONNECT connections (fewer if the batch has
   * fewer pushes for it), counting those it has. One paused by a 429, or
   * that may speak HTTP/2 (HERALD_PUSH_HTTP2 on, and ALPN has not ruled it
   * out), is left as it is; so is an endpoint that is not an http(s) URL
   * (its push fails when sent). The connections are opened as a push's
   * are: to a public address only, unless private ones are allowed.
   */
  preconnect(recipients: ReadonlyArray<{ endpoint: string }>): void {
    if (this.http1 !== 'herald') return
    const counts = new Map<string, number>()
    for (const { endpoint } of recipients) {
      const prefix = endpointPrefix(endpoint)
      counts.set(prefix, (counts.get(prefix) ?? 0) + 1)
    }
    const now = Date.now()
    for (const [prefix, count] of counts) {
      let url: URL
      try {
        url = new URL(prefix)
      } catch {
        continue
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:') continue
      const origin = this.origin(url)
      if (!origin.h1 || origin.h2 || origin.pausedUntil > now) continue
      origin.h1.preconnect(Math.min(count, PRECONNECT))
    }
  }

  /** A batch is about to encrypt and send this many pushes. */
  plan(pushes: number): void {
    this.planned += pushes
  }

  /** Pushes of plan() that are over (answered, or never sent); each may let one waiting batch start. */
  finished(pushes = 1): void {
    this.planned -= pushes
    if (this.roomWaiters.length > 0 && this.hasRoom()) this.roomWaiters.shift()!()
  }

  /** Pushes planned no more than twice those the known origins may have in flight now (less on a cold origin). */
  private hasRoom(): boolean {
    if (this.planned <= 0) return true
    let slots = 0
    for (const origin of this.origins.values()) slots += Math.min(this.connections, origin.window)
    return this.planned <= PLANNED_PER_SLOT * slots
  }

  /**
   * Resolves when the pushes planned are few enough that more would find a
   * connection within about a round trip, or after maxWaitMs whatever the
   * backlog (so a push service that hangs slows other broadcasts' batches
   * without stopping them). A batch job calls it before it reads and
   * encrypts its slice: while a cold push service takes few pushes at a time
   * (slow start) the next batches wait rather than hold the event loop and
   * the cores with database work and encryption whose pushes could not leave
   * yet, while the first pushes' TLS handshakes need both. One waiter goes per
   * push finished while there is room (a batch counts in only once it has
   * read its slice, so several may start close together); with nothing
   * planned at all, at once.
   */
  whenRoom(maxWaitMs: number): Promise<void> {
    if (this.planned <= 0 || (this.roomWaiters.length === 0 && this.hasRoom())) return Promise.resolve()
    return new Promise<void>((resolve) => {
      const waiter = (): void => {
        clearTimeout(timer)
        resolve()
      }
      const timer = setTimeout(() => {
        this.roomWaiters = this.roomWaiters.filter((w) => w !== waiter)
        resolve()
        // The batch behind it need not sit out its own wait if there is room now.
        if (this.roomWaiters.length > 0 && this.hasRoom()) this.roomWaiters.shift()!()
      }, maxWaitMs)
      this.roomWaiters.push(waiter)
    })
  }

  async close(): Promise<void> {
    for (const waiter of this.roomWaiters.splice(0)) waiter()
    await Promise.all([...this.origins.values()].map((origin) => Promise.all([
      origin.h1?.close(),
      origin.pool?.close().catch(() => undefined),
      origin.h2?.close(),
    ])))
    this.origins.clear()
  }
}
