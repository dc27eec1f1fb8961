// HTTP/2 to one push service origin with node:http2: a few long-lived sessions,
// each carrying many pushes at once as streams over one TLS connection. Used
// when the push service offers h2 by ALPN (FCM, Apple, Mozilla, Microsoft do);
// the caller falls back to HTTP/1.1 when it does not. Sockets open only to
// public addresses unless private ones are allowed, judged at connect time.
import http2, { type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2'
import { isIP } from 'node:net'
import tls from 'node:tls'
import { isPublicAddress } from '../platform/outbound/url-policy.ts'
import { NOT_PUBLIC_CODE, publicOnlyLookup } from '../platform/outbound/public-connect.ts'

/** A session with no stream for this long is closed; the next push opens a new one. */
const IDLE_MS = 60_000

export interface Http2OriginOptions {
  timeoutMs: number
  allowPrivateAddresses: boolean
  /** Sessions (TLS connections) to open to the origin; streams are spread over them. */
  sessions: number
  ca?: string
}

export interface Http2Answer {
  status: number
  headers: IncomingHttpHeaders
  /** The start of the answer's body on a 400 (ANSWER_BODY_KEPT bytes at most), where Apple names the reason; '' otherwise. */
  body?: string
}

/** Bytes of a 400's body kept: Apple's {"reason":"VapidPkHashMismatch"} fits many times over. */
export const ANSWER_BODY_KEPT = 512

/** Thrown by connect() when the origin does not speak h2: use HTTP/1.1 instead. */
export class NoHttp2Error extends Error {
  readonly code = 'ENOHTTP2'
}

function notPublic(host: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`${host} is not a public address`)
  error.code = NOT_PUBLIC_CODE
  return error
}

export class Http2Origin {
  private readonly sessions: (ClientHttp2Session | null)[]
  private readonly connecting: (Promise<ClientHttp2Session> | null)[]
  private readonly active: number[]
  private closed = false

  constructor(private readonly origin: URL, private readonly options: Http2OriginOptions) {
    this.sessions = new Array(options.sessions).fill(null)
    this.connecting = new Array(options.sessions).fill(null)
    this.active = new Array(options.sessions).fill(0)
  }

  /** Opens a TLS connection and resolves with an h2 session, or rejects with NoHttp2Error. */
  private connect(): Promise<ClientHttp2Session> {
    const host = this.origin.hostname.replace(/^\[|\]$/g, '')
    if (!this.options.allowPrivateAddresses && isIP(host) && !isPublicAddress(host)) return Promise.reject(notPublic(host))
    return new Promise((resolve, reject) => {
      const socket = tls.connect({
        host,
        port: Number(this.origin.port || 443),
        servername: isIP(host) ? undefined : host,
        ALPNProtocols: ['h2', 'http/1.1'],
        ...(this.options.ca ? { ca: this.options.ca } : {}),
        ...(this.options.allowPrivateAddresses ? {} : { lookup: publicOnlyLookup }),
      })
      const timer = setTimeout(() => socket.destroy(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' })), this.options.timeoutMs)
      socket.once('error', (err) => {
        clearTimeout(timer)
        reject(err)
      })
      socket.once('secureConnect', () => {
        clearTimeout(timer)
        if (socket.alpnProtocol !== 'h2') {
          socket.destroy()
          return reject(new NoHttp2Error(`${this.origin.origin} does not offer HTTP/2`))
        }
        const session = http2.connect(this.origin.origin, { createConnection: () => socket })
        session.on('error', () => undefined) // surfaced on the streams; the session is dropped on close
        // Idle sessions close, like the HTTP/1.1 pool's keep-alive: push service hosts come and go.
        session.setTimeout(IDLE_MS, () => session.close())
        resolve(session)
      })
    })
  }

  /** The slot with the fewest streams in flight, connected. */
  private async session(): Promise<{ slot: number; session: ClientHttp2Session }> {
    let slot = 0
    for (let i = 1; i < this.active.length; i++) if (this.active[i] < this.active[slot]) slot = i
    const open = this.sessions[slot]
    if (open && !open.closed && !open.destroyed) return { slot, session: open }
    let pending = this.connecting[slot]
    if (!pending) {
      pending = this.connect().then((session) => {
        const drop = () => {
          if (this.sessions[slot] === session) this.sessions[slot] = null
        }
        session.once('close', drop)
        session.once('goaway', drop)
        if (this.closed) session.close()
        else this.sessions[slot] = session
        return session
      }).finally(() => {
        this.connecting[slot] = null
      })
      this.connecting[slot] = pending
    }
    return { slot, session: await pending }
  }

  async request(path: string, headers: Record<string, string>, body: Buffer): Promise<Http2Answer> {
    const { slot, session } = await this.session()
    this.active[slot]++
    try {
      return await new Promise<Http2Answer>((resolve, reject) => {
        const stream = session.request({ ':method': 'POST', ':path': path, ...lowerCase(headers) }, { endStream: false })
        stream.setTimeout(this.options.timeoutMs, () => stream.close(http2.constants.NGHTTP2_CANCEL))
        stream.once('response', (answer) => {
          const status = Number(answer[':status'])
          // The body is not needed, but must be consumed; on a 400 its start is kept (the reason of Apple's refusals).
          let kept = ''
          if (status === 400) stream.on('data', (chunk: Buffer) => { if (kept.length < ANSWER_BODY_KEPT) kept += chunk.toString('utf8', 0, ANSWER_BODY_KEPT - kept.length) })
          else stream.resume()
          stream.once('end', () => resolve({ status, headers: answer, body: kept }))
        })
        stream.once('error', reject)
        stream.once('close', () => reject(Object.assign(new Error('stream closed before an answer'), { code: 'ECONNRESET' })))
        stream.end(body)
      })
    } finally {
      this.active[slot]--
    }
  }

  async close(): Promise<void> {
    this.closed = true
    await Promise.all(this.sessions.map((session) => session && new Promise<void>((resolve) => {
      if (session.closed || session.destroyed) return resolve()
      session.close(() => resolve())
      setTimeout(() => {
        session.destroy()
        resolve()
      }, 1000).unref()
    })))
  }
}

function lowerCase(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value
  return out
}
