// HTTP/1.1 to one push service origin, with only what a push needs: a POST
// written in one piece on a keep-alive connection, and an answer read for its
// status, Retry-After and (on a 400) the start of its body, the rest counted
// and dropped. The sockets come from undici's connector (the push client's
// one TLS context, TLS session reuse, and the public-address check when
// connecting), so only the HTTP framing is here. undici's Pool, which did
// this before, costs ~17 µs more main-thread CPU per push on a 2-core machine
// (bench/http1-client.ts, docs/performance.md); it stays the fallback
// (HERALD_PUSH_HTTP1=undici).
//
// One request per connection at a time (no pipelining), as before. Answers
// are framed by Content-Length, chunked Transfer-Encoding, or the
// connection's end; 1xx answers are skipped. A connection is reused only
// after a complete answer that did not say `Connection: close` and was
// followed by nothing in its read (a connection the server ends or resets is
// dropped), and not past the idle time the server's `Keep-Alive: timeout`
// gives, less 2 s (as undici). A close that crosses a reused connection's
// request fails that push as a dropped connection does (undici's Pool has the
// same race). Anything malformed ends the connection and fails its push (a
// network failure: the push is retried later).
import type { Socket } from 'node:net'
import type { buildConnector } from 'undici'
import { ANSWER_BODY_KEPT } from './http2-origin.ts'

/** What the push client hears about one push sent over HTTP/1.1. */
export interface Http1Handler {
  onAnswer(status: number, retryAfter: string | undefined, body: string): void
  onError(err: Error): void
}

export interface Http1OriginOptions {
  /** Opens a socket (TLS for https:) to the origin. */
  connect: buildConnector.connector
  /** Connections at most; a push finding none free waits for one (PushClient keeps no more in flight than this). */
  connections: number
  /** A push with no complete answer this long after it was handed to a connection (connecting included) fails. */
  timeoutMs: number
  /** An idle connection is closed after this long. */
  keepAliveMs: number
}

/** Status line and headers of one answer, at most (Node's own HTTP server and client allow 16 KB). */
const MAX_HEAD_BYTES = 16 * 1024
/** A chunk-size line or a trailer line, at most. */
const MAX_LINE_BYTES = 1024
const CRLF = Buffer.from('\r\n')
const CRLFCRLF = Buffer.from('\r\n\r\n')
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: [^\r\n]*)?$/
/** What a field value may not hold (RFC 9110: visible ASCII, space, tab, obs-text): CR, LF and NUL above all, and nothing past latin1, which writing would truncate into them. */
const UNSAFE_VALUE = /[^\t\x20-\x7e\x80-\xff]/
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
/** Header names the request's framing owns: a caller's would contradict it. */
const FRAMING_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'expect', 'te', 'trailer'])
/** An origin-form request target: a path from a parsed URL (ASCII, percent-encoded), no spaces or controls. */
const PATH = /^\/[\x21-\x7e]*$/
/** Left off the server's Keep-Alive timeout before a connection is thought idle too long to reuse (undici's threshold). */
const KEEP_ALIVE_MARGIN_MS = 2000

const enum Phase {
  /** Reading a status line and headers. */
  Head,
  /** Reading a body of `remaining` bytes. */
  Length,
  ChunkSize,
  ChunkData,
  /** The CRLF after a chunk's data. */
  ChunkEnd,
  Trailers,
  /** A body that ends with the connection. */
  UntilClose,
  /** No push on the connection. */
  Idle,
}

/** A failure of the connection or of the answer's framing: a network failure to the push client. */
export class Http1Error extends Error {
  constructor(message: string, readonly code: string) {
    super(message)
  }
}

class Connection {
  socket: Socket | null = null
  handler: Http1Handler | null = null
  /** The request waiting for the socket to connect. */
  pendingWrite: Buffer | null = null
  /** When the push in flight was handed to the connection, or when it went idle (epoch ms). */
  since = 0
  private phase = Phase.Idle
  private buffered: Buffer | null = null
  /** Where in `buffered` the search for the head's end resumes: bytes already searched are not searched again. */
  private searchedTo = 0
  private status = 0
  private retryAfter: string | undefined = undefined
  private body = ''
  private remaining = 0
  private keepAlive = true
  /** How long this connection may stay idle: the origin's keep-alive, or less when the server said so. */
  idleLimitMs: number
  closed = false

  constructor(private readonly origin: Http1Origin, keepAliveMs: number) {
    this.idleLimitMs = keepAliveMs
  }

  /** Sends a request on this connection (connected or not yet). */
  send(request: Buffer, handler: Http1Handler, now: number): void {
    if (this.closed) return handler.onError(new Http1Error('connection closed', 'ECONNRESET'))
    this.handler = handler
    this.since = now
    this.phase = Phase.Head
    this.status = 0
    this.retryAfter = undefined
    this.body = ''
    this.keepAlive = true
    this.searchedTo = 0
    if (this.socket) this.socket.write(request)
    else this.pendingWrite = request
  }

  connected(socket: Socket): void {
    this.socket = socket
    socket.on('data', (chunk: Buffer) => this.read(chunk))
    socket.on('error', (err: Error) => this.lost(err))
    socket.on('end', () => this.lost(new Http1Error('connection ended before the answer was complete', 'ECONNRESET')))
    socket.on('close', () => this.lost(new Http1Error('connection closed', 'ECONNRESET')))
    if (this.closed) {
      socket.destroy()
      return
    }
    if (this.pendingWrite) {
      const request = this.pendingWrite
      this.pendingWrite = null
      socket.write(request)
    }
  }

  /**
   * The connection ended, was reset or failed: an answer whose body runs to
   * the connection's end is complete (its status was read: failing it would
   * send an accepted push again); any other push in flight failed.
   */
  private lost(err: Error): void {
    if (this.phase === Phase.UntilClose && !this.closed) {
      this.keepAlive = false
      this.finish()
    }
    this.close(err)
  }

  /** Ends the connection; its push in flight, if any, fails with err. Once only. */
  close(err: Error): void {
    if (this.closed) return
    this.closed = true
    this.phase = Phase.Idle
    this.socket?.destroy()
    const handler = this.handler
    this.handler = null
    this.origin.dropped(this)
    handler?.onError(err)
  }

  private read(data: Buffer): void {
    let buf = data
    if (this.buffered) {
      buf = Buffer.concat([this.buffered, data])
      this.buffered = null
    }
    let i = 0
    while (i < buf.length && !this.closed) {
      switch (this.phase) {
        case Phase.Idle:
          // After an answer, or between pushes: nothing asked for these bytes, so the connection is not trusted again.
          return this.close(new Http1Error('bytes from the push service with no push in flight', 'EPROTO'))
        case Phase.Head: {
          const end = buf.indexOf(CRLFCRLF, Math.max(i, this.searchedTo - 3))
          this.searchedTo = 0
          if (end < 0 || end - i > MAX_HEAD_BYTES) {
            this.keep(buf, i, MAX_HEAD_BYTES, 'answer head')
            this.searchedTo = buf.length - i
            return
          }
          if (!this.head(buf.toString('latin1', i, end))) return
          i = end + 4
          break
        }
        case Phase.Length:
        case Phase.ChunkData:
        case Phase.UntilClose: {
          const n = this.phase === Phase.UntilClose ? buf.length - i : Math.min(this.remaining, buf.length - i)
          this.kept(buf, i, i + n)
          i += n
          this.remaining -= n
          if (this.remaining === 0 && this.phase === Phase.Length) this.finish()
          else if (this.remaining === 0 && this.phase === Phase.ChunkData) this.phase = Phase.ChunkEnd
          break
        }
        case Phase.ChunkEnd: {
          if (buf.length - i < 2) return this.keep(buf, i, 2, 'chunk')
          if (buf[i] !== 13 || buf[i + 1] !== 10) return this.close(new Http1Error('chunk not followed by CRLF', 'EPROTO'))
          i += 2
          this.phase = Phase.ChunkSize
          break
        }
        case Phase.ChunkSize: {
          const end = buf.indexOf(CRLF, i)
          if (end < 0 || end - i > MAX_LINE_BYTES) return this.keep(buf, i, MAX_LINE_BYTES, 'chunk size')
          const size = /^([0-9A-Fa-f]{1,8})[ \t]*(;.*)?$/.exec(buf.toString('latin1', i, end))
          if (!size) return this.close(new Http1Error('malformed chunk size', 'EPROTO'))
          i = end + 2
          this.remaining = parseInt(size[1], 16)
          this.phase = this.remaining === 0 ? Phase.Trailers : Phase.ChunkData
          break
        }
        case Phase.Trailers: {
          const end = buf.indexOf(CRLF, i)
          if (end < 0 || end - i > MAX_LINE_BYTES) return this.keep(buf, i, MAX_LINE_BYTES, 'trailer')
          const empty = end === i
          i = end + 2
          if (empty) this.finish()
          break
        }
      }
    }
  }

  /** Keeps the unread bytes for the next read, or fails when more than `limit` are kept. */
  private keep(buf: Buffer, from: number, limit: number, what: string): void {
    if (buf.length - from > limit) return this.close(new Http1Error(`${what} too long`, 'EPROTO'))
    this.buffered = buf.subarray(from)
  }

  /** Keeps the start of a 400's body (Apple's reason); other bodies are only counted. */
  private kept(buf: Buffer, from: number, to: number): void {
    if (this.status === 400 && this.body.length < ANSWER_BODY_KEPT) this.body += buf.toString('utf8', from, Math.min(to, from + ANSWER_BODY_KEPT - this.body.length))
  }

  /** Reads a status line and headers; false when the connection was closed for them. */
  private head(text: string): boolean {
    const lines = text.split('\r\n')
    const statusLine = STATUS_LINE.exec(lines[0])
    if (!statusLine) {
      this.close(new Http1Error('malformed status line', 'EPROTO'))
      return false
    }
    const status = Number(statusLine[2])
    let keepAlive = statusLine[1] === '1'
    let length = -1
    let transferEncoding: string | null = null
    let retryAfter: string | undefined
    let keepAliveHeader: string | null = null
    for (let n = 1; n < lines.length; n++) {
      const line = lines[n]
      const colon = line.indexOf(':')
      const name = colon > 0 ? line.slice(0, colon) : ''
      if (!TOKEN.test(name)) {
        this.close(new Http1Error('malformed header line', 'EPROTO'))
        return false
      }
      const value = line.slice(colon + 1).trim()
      switch (name.toLowerCase()) {
        case 'content-length':
          if (!/^\d{1,15}$/.test(value) || (length >= 0 && Number(value) !== length)) {
            this.close(new Http1Error('malformed Content-Length', 'EPROTO'))
            return false
          }
          length = Number(value)
          break
        case 'transfer-encoding':
          transferEncoding = transferEncoding === null ? value : `${transferEncoding}, ${value}`
          break
        case 'connection': {
          const tokens = value.toLowerCase().split(',').map((token) => token.trim())
          if (tokens.includes('close')) keepAlive = false
          else if (tokens.includes('keep-alive') && statusLine[1] === '0') keepAlive = true
          break
        }
        case 'retry-after':
          retryAfter = value
          break
        case 'keep-alive':
          keepAliveHeader = value
          break
      }
    }
    // 1xx: informational, the answer follows (101 would switch protocols, which no push asks for).
    if (status >= 100 && status < 200) {
      if (status === 101) {
        this.close(new Http1Error('unexpected 101 Switching Protocols', 'EPROTO'))
        return false
      }
      return true
    }
    this.status = status
    this.retryAfter = retryAfter
    this.keepAlive = keepAlive
    const serverIdle = keepAliveHeader === null ? null : /(?:^|[,\s])timeout=(\d{1,9})/i.exec(keepAliveHeader)
    if (serverIdle) {
      // The server closes an idle connection after this; reusing it near then would race its close.
      this.idleLimitMs = Math.min(this.idleLimitMs, Number(serverIdle[1]) * 1000 - KEEP_ALIVE_MARGIN_MS)
      if (this.idleLimitMs <= 0) this.keepAlive = false
    }
    if (status === 204 || status === 304) {
      this.finish()
    } else if (transferEncoding !== null) {
      // RFC 9112 §6.3: chunked last means chunked (and Content-Length is ignored); any other coding runs to the close.
      const codings = transferEncoding.toLowerCase().split(',')
      if (codings[codings.length - 1].trim() === 'chunked') {
        this.phase = Phase.ChunkSize
      } else {
        this.keepAlive = false
        this.phase = Phase.UntilClose
      }
    } else if (length > 0) {
      this.remaining = length
      this.phase = Phase.Length
    } else if (length === 0) {
      this.finish()
    } else {
      this.keepAlive = false
      this.phase = Phase.UntilClose
    }
    return true
  }

  /** The answer is complete: the push hears it, then the connection is idle again (or ends). */
  private finish(): void {
    const handler = this.handler!
    this.handler = null
    this.phase = Phase.Idle
    this.since = Date.now()
    const { status, retryAfter, body } = this
    if (this.keepAlive) this.origin.idle(this)
    else this.close(new Http1Error('connection closed after its answer', 'ECONNRESET'))
    handler.onAnswer(status, retryAfter, body)
  }
}

interface Waiting {
  request: Buffer
  handler: Http1Handler
}

/**
 * Each headers object's lines, checked and joined once: a fan-out hands the
 * same object, never changed after, to every push of a batch that shares a
 * VAPID signature (send-batch.ts), so the checks run per object, not per
 * push. `refused`: the header that failed them.
 */
const headerLines = new WeakMap<Record<string, string>, string | { refused: string }>()

function linesOf(headers: Record<string, string>): string | { refused: string } {
  const known = headerLines.get(headers)
  if (known !== undefined) return known
  let lines: string | { refused: string } = ''
  for (const name in headers) {
    const value = headers[name]
    if (!TOKEN.test(name) || FRAMING_HEADERS.has(name.toLowerCase()) || UNSAFE_VALUE.test(value)) {
      lines = { refused: name }
      break
    }
    lines += `${name}: ${value}\r\n`
  }
  headerLines.set(headers, lines)
  return lines
}

export class Http1Origin {
  /** Connected, no push in flight: the last one to go idle is used first (its socket is warmest). */
  private readonly idleConnections: Connection[] = []
  /** Every connection open or opening. */
  private readonly all = new Set<Connection>()
  /** Opened ahead of any push (preconnect), connected or not yet: the next pushes take these after the idle ones, before opening more. */
  private readonly ahead: Connection[] = []
  /** Pushes for which no connection was free (PushClient keeps no more in flight than connections, so rarely any): each takes the next one that is. */
  private readonly waiting: Waiting[] = []
  private readonly host: string
  private readonly target: { hostname: string; host: string; protocol: string; port: string }
  private sweep: NodeJS.Timeout | null = null
  /** Set by close(): resolves once every connection is closed. */
  private closed: Promise<void> | null = null
  private resolveClosed: (() => void) | null = null

  constructor(url: URL, private readonly options: Http1OriginOptions) {
    this.host = url.host
    this.target = { hostname: url.hostname.replace(/^\[|\]$/g, ''), host: url.host, protocol: url.protocol, port: url.port }
  }

  /**
   * Sends one POST. The handler hears the answer or the failure once. A path
   * that is not an origin-form target, a header name that is not a token or
   * that the framing owns, and a value with CR, LF, NUL or anything past
   * latin1 are refused before anything is written.
   */
  dispatch(path: string, headers: Record<string, string>, body: Buffer, handler: Http1Handler): void {
    if (this.closed) return handler.onError(new Http1Error('push client closed', 'ECLOSED'))
    if (!PATH.test(path)) return handler.onError(new Http1Error('invalid request path', 'EINVALIDPATH'))
    const lines = linesOf(headers)
    if (typeof lines !== 'string') return handler.onError(new Http1Error(`invalid header ${lines.refused}`, 'EINVALIDHEADER'))
    const head = `POST ${path} HTTP/1.1\r\nhost: ${this.host}\r\n${lines}content-length: ${body.length}\r\n\r\n`
    // Latin1: one byte a character (the checks above allow nothing wider).
    const request = Buffer.allocUnsafe(head.length + body.length)
    const headBytes = request.write(head, 'latin1')
    body.copy(request, headBytes)
    const free = this.idleConnections.pop() ?? this.ahead.shift()
    if (free) free.send(request, handler, Date.now())
    else if (this.all.size < this.options.connections) this.open({ request, handler })
    else this.waiting.push({ request, handler })
  }

  /**
   * Opens connections, with no push on them yet, until this origin has
   * `count` (at most its cap): a batch's first pushes then find them up, or
   * half-way there, instead of each starting its TLS handshake once it is
   * encrypted. A failure to connect only drops the connection (the next push
   * opens its own and hears the failure).
   */
  preconnect(count: number): void {
    if (this.closed) return
    while (this.all.size < Math.min(count, this.options.connections)) {
      const connection = this.open(null)
      // Refused at once (a connector that throws): the next push opens its own and hears why.
      if (connection.closed) return
      this.ahead.push(connection)
    }
  }

  /** A new connection, with its first push on it (if any) before it connects: a connector may fail at once (a private address), and the push must hear it. */
  private open(first: Waiting | null): Connection {
    const connection = new Connection(this, this.options.keepAliveMs)
    this.all.add(connection)
    if (first) connection.send(first.request, first.handler, Date.now())
    else connection.since = Date.now()
    try {
      this.options.connect(this.target, (err, socket) => {
        if (err || !socket) connection.close(err ?? new Http1Error('no socket', 'ECONNREFUSED'))
        else connection.connected(socket as Socket)
      })
    } catch (err) {
      connection.close(err as Error)
    }
    if (this.all.size > 0) this.startSweep()
    return connection
  }

  /**
   * (For Connection.) Its answer is complete: it waits for the next push, or
   * takes a waiting one once the read that completed the answer is over (bytes
   * after the answer in that read close it first, and are not taken for the
   * next push's answer). Once the origin is closing, it closes.
   */
  idle(connection: Connection): void {
    if (this.closed) return connection.close(new Http1Error('push client closed', 'ECLOSED'))
    if (this.waiting.length === 0) {
      this.idleConnections.push(connection)
      return
    }
    queueMicrotask(() => {
      // Closed meanwhile: dropped() gave the waiting push a new connection.
      if (connection.closed) return
      if (this.closed) return connection.close(new Http1Error('push client closed', 'ECLOSED'))
      const next = this.waiting.shift()
      if (next) connection.send(next.request, next.handler, Date.now())
      else this.idleConnections.push(connection)
    })
  }

  /** (For Connection.) Closed: forgotten, and a waiting push gets a connection of its own. */
  dropped(connection: Connection): void {
    this.all.delete(connection)
    const at = this.idleConnections.indexOf(connection)
    if (at >= 0) this.idleConnections.splice(at, 1)
    const unused = this.ahead.indexOf(connection)
    if (unused >= 0) this.ahead.splice(unused, 1)
    if (this.waiting.length > 0 && !this.closed) {
      this.open(this.waiting.shift()!)
    }
    if (this.all.size === 0) {
      this.stopSweep()
      this.resolveClosed?.()
    }
  }

  /**
   * One timer for the origin while it has connections: pushes past the
   * timeout fail, connections idle past their keep-alive close. Checked every
   * quarter of the timeout (at most a second), so a push fails between 1 and
   * 1.25 timeouts after it was handed to a connection.
   */
  private startSweep(): void {
    if (this.sweep) return
    const every = Math.max(5, Math.min(1000, this.options.timeoutMs / 4))
    this.sweep = setInterval(() => {
      const now = Date.now()
      for (const connection of [...this.all]) {
        if (connection.handler) {
          if (now - connection.since >= this.options.timeoutMs) connection.close(new Http1Error(`no answer within ${this.options.timeoutMs} ms`, 'ERR_PUSH_TIMEOUT'))
        } else if (now - connection.since >= connection.idleLimitMs) {
          connection.close(new Http1Error('idle', 'EIDLE'))
        }
      }
    }, every)
    this.sweep.unref()
  }

  private stopSweep(): void {
    if (this.sweep) clearInterval(this.sweep)
    this.sweep = null
  }

  /**
   * Takes no more pushes, fails those still waiting for a connection (none
   * was written), and closes the idle connections; resolves once the pushes
   * in flight are answered (or time out) and their connections closed. A
   * push already written is not cut off: the push service may have taken it,
   * and failing it here would send it again later. Called again, the same promise.
   */
  close(): Promise<void> {
    if (this.closed) return this.closed
    this.closed = new Promise((resolve) => {
      this.resolveClosed = resolve
    })
    for (const { handler } of this.waiting.splice(0)) handler.onError(new Http1Error('push client closed', 'ECLOSED'))
    for (const connection of [...this.idleConnections, ...this.ahead]) connection.close(new Http1Error('push client closed', 'ECLOSED'))
    if (this.all.size === 0) {
      this.stopSweep()
      this.resolveClosed!()
    }
    return this.closed
  }
}
