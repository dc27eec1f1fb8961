// HTTP/1.1 to one push service origin, with only what a push needs: a POST
// written in one piece on a keep-alive connection, and an answer read for its
// status, Retry-After and (on a 400) the start of its body, the rest counted
// and dropped. The sockets come from undici's connector (the push client's
// one TLS context, TLS session reuse, and the public-address check when
// connecting), so only the HTTP framing is here. undici's Client, which did
// this before, costs ~25 µs more main-thread CPU per push on a 2-core machine
// (bench/http1-client.ts, docs/performance.md); undici stays the fallback
// (HERALD_PUSH_HTTP1=undici).
//
// One request per connection at a time (no pipelining), as before. Answers are
// framed by Content-Length, chunked Transfer-Encoding, or the connection's
// end; 1xx answers are skipped. A connection is reused only after a complete
// answer that did not say `Connection: close` and was followed by nothing.
// Anything malformed ends the connection and fails its push (a network
// failure: the push is retried later, as for a dropped connection).
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
  /** Connections at most; PushClient never has more pushes in flight than this. */
  connections: number
  /** A push with no complete answer this long after it was written fails. */
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
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: [^\r\n]*)?$/
/** RFC 9110 field values: visible characters, spaces and tabs (obs-text too); never CR, LF or NUL. */
const UNSAFE_VALUE = /[\0\r\n]/
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

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
  private status = 0
  private retryAfter: string | undefined = undefined
  private body = ''
  private remaining = 0
  private keepAlive = true
  private closed = false

  constructor(private readonly origin: Http1Origin) {}

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
    if (this.socket) this.socket.write(request)
    else this.pendingWrite = request
  }

  connected(socket: Socket): void {
    this.socket = socket
    socket.on('data', (chunk: Buffer) => this.read(chunk))
    socket.on('error', (err: Error) => this.close(err))
    socket.on('end', () => this.ended())
    socket.on('close', () => this.close(new Http1Error('connection closed', 'ECONNRESET')))
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

  /** The server ended its side: an answer read until then is complete; otherwise the push failed. */
  private ended(): void {
    if (this.phase === Phase.UntilClose) {
      this.keepAlive = false
      this.finish()
    }
    this.close(new Http1Error('connection ended before the answer was complete', 'ECONNRESET'))
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
          const end = buf.indexOf(CRLFCRLF, i)
          if (end < 0 || end - i > MAX_HEAD_BYTES) return this.keep(buf, i, MAX_HEAD_BYTES, 'answer head')
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

export class Http1Origin {
  /** Connected, no push in flight: the last one to go idle is used first (its socket is warmest). */
  private readonly idleConnections: Connection[] = []
  /** Every connection open or opening. */
  private readonly all = new Set<Connection>()
  private readonly host: string
  private readonly target: { hostname: string; host: string; protocol: string; port: string; servername?: string }
  private sweep: NodeJS.Timeout | null = null
  private isClosed = false
  /** Set by close(): resolves it once every connection is closed. */
  private closing: (() => void) | null = null

  constructor(url: URL, private readonly options: Http1OriginOptions) {
    this.host = url.host
    this.target = { hostname: url.hostname.replace(/^\[|\]$/g, ''), host: url.host, protocol: url.protocol, port: url.port }
  }

  /**
   * Sends one POST. The handler hears the answer or the failure once; a
   * header value with CR, LF or NUL is refused before anything is written.
   */
  dispatch(path: string, headers: Record<string, string>, body: Buffer, handler: Http1Handler): void {
    if (this.isClosed) return handler.onError(new Http1Error('push client closed', 'ECLOSED'))
    let head = `POST ${path} HTTP/1.1\r\nhost: ${this.host}\r\n`
    for (const name in headers) {
      const value = headers[name]
      if (!TOKEN.test(name) || UNSAFE_VALUE.test(value)) return handler.onError(new Http1Error(`invalid header ${name}`, 'EINVALIDHEADER'))
      head += `${name}: ${value}\r\n`
    }
    head += `content-length: ${body.length}\r\n\r\n`
    const request = Buffer.allocUnsafe(Buffer.byteLength(head, 'latin1') + body.length)
    const headBytes = request.write(head, 'latin1')
    body.copy(request, headBytes)
    const idle = this.idleConnections.pop()
    if (idle) {
      idle.send(request, handler, Date.now())
    } else {
      // PushClient keeps no more pushes in flight than connections; past that (it would be a bug) the push fails rather than queue.
      if (this.all.size >= this.options.connections) return handler.onError(new Http1Error('no free connection', 'EBUSY'))
      const connection = new Connection(this)
      this.all.add(connection)
      // The push is on the connection before it connects: a connector may fail at once (a private address), and the push must hear it.
      connection.send(request, handler, Date.now())
      this.options.connect(this.target, (err, socket) => {
        if (err || !socket) connection.close(err ?? new Http1Error('no socket', 'ECONNREFUSED'))
        else connection.connected(socket as Socket)
      })
    }
    this.startSweep()
  }

  /** (For Connection.) Ready for another push; closed instead once the origin is closing. */
  idle(connection: Connection): void {
    if (this.closing) return connection.close(new Http1Error('push client closed', 'ECLOSED'))
    this.idleConnections.push(connection)
  }

  /** (For Connection.) Closed: forgotten. */
  dropped(connection: Connection): void {
    this.all.delete(connection)
    const at = this.idleConnections.indexOf(connection)
    if (at >= 0) this.idleConnections.splice(at, 1)
    if (this.all.size === 0) {
      this.stopSweep()
      this.closing?.()
    }
  }

  /**
   * One timer for the origin while it has connections: pushes past the
   * timeout fail, connections idle past the keep-alive close. Checked every
   * quarter of the timeout (at most a second), so a push fails between 1 and
   * 1.25 timeouts after it was written.
   */
  private startSweep(): void {
    if (this.sweep) return
    const every = Math.max(5, Math.min(1000, this.options.timeoutMs / 4))
    this.sweep = setInterval(() => {
      const now = Date.now()
      for (const connection of [...this.all]) {
        if (connection.handler) {
          if (now - connection.since >= this.options.timeoutMs) connection.close(new Http1Error(`no answer within ${this.options.timeoutMs} ms`, 'ERR_PUSH_TIMEOUT'))
        } else if (now - connection.since >= this.options.keepAliveMs) {
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
   * Takes no more pushes and closes the idle connections; resolves once the
   * pushes in flight are answered (or time out) and their connections closed.
   * A push already written is not cut off: the push service may have taken it,
   * and failing it here would send it again later.
   */
  close(): Promise<void> {
    this.isClosed = true
    return new Promise((resolve) => {
      this.closing = resolve
      for (const connection of [...this.idleConnections]) connection.close(new Http1Error('push client closed', 'ECLOSED'))
      if (this.all.size === 0) {
        this.stopSweep()
        resolve()
      }
    })
  }
}
