// An answer given before the client has finished sending its body (a 413 for
// a body over the route's limit, a 401 refused before the body is read) must
// still reach the client. Closing the socket while the client is writing makes
// the kernel answer its next bytes with a reset: the client gets EPIPE or
// ECONNRESET instead of the answer, and may lose the answer already sitting in
// its receive buffer. So, like nginx's lingering close, the rest of the body
// is read and thrown away, chunk by chunk and never held, before the answer
// goes out; then the connection is reused or closed cleanly. A client that
// keeps sending past DISCARD_MAX_BYTES or DISCARD_MAX_MS (or declares a
// Content-Length over the byte bound) is cut off after the answer, as before.
import type { IncomingMessage } from 'node:http'
import type { FastifyInstance } from 'fastify'

/** A few times the largest route limit (send's 2 MiB); a client sending more than this after a refusal is not a mistaken upload. */
export const DISCARD_MAX_BYTES = 32 * 1024 * 1024
/** Enough for the byte bound over a slow link; past it a client is holding the connection, not uploading. */
export const DISCARD_MAX_MS = 10_000

export interface DiscardBounds {
  bytes: number
  ms: number
}

/**
 * Reads what is left of the request body and drops it. Resolves true once the
 * body has ended, false when a bound was passed, the client went away or
 * `abort` was called (server shutdown).
 */
export function discardBody(raw: IncomingMessage, bounds: DiscardBounds, onAbort: (abort: () => void) => () => void): Promise<boolean> {
  const declared = Number(raw.headers['content-length'])
  if (declared > bounds.bytes) return Promise.resolve(false)
  return new Promise((resolve) => {
    let seen = 0
    const onData = (chunk: Buffer) => {
      seen += chunk.length
      if (seen > bounds.bytes) finish(false)
    }
    const onEnd = () => finish(true)
    const onGone = () => finish(false)
    const timer = setTimeout(onGone, bounds.ms)
    const forget = onAbort(onGone)
    function finish(ended: boolean) {
      clearTimeout(timer)
      forget()
      raw.off('data', onData).off('end', onEnd).off('close', onGone).off('error', onGone)
      resolve(ended)
    }
    raw.on('data', onData).once('end', onEnd).once('close', onGone).once('error', onGone)
    raw.resume()
  })
}

/** Installs the discard on every response sent while the request body is still arriving. */
export function discardUnreadBodies(app: FastifyInstance, bounds: DiscardBounds = { bytes: DISCARD_MAX_BYTES, ms: DISCARD_MAX_MS }): void {
  const inProgress = new Set<() => void>()
  const register = (abort: () => void) => {
    inProgress.add(abort)
    return () => inProgress.delete(abort)
  }
  // A shutdown does not wait for a slow client's body.
  app.addHook('preClose', (done) => {
    for (const abort of inProgress) abort()
    done()
  })
  app.addHook('onSend', (request, reply, payload, done) => {
    const raw = request.raw
    // `complete` is false on a real request whose body has not all arrived (app.inject's requests do not have it).
    if (raw.complete !== false || raw.readableEnded || raw.destroyed) return done(null, payload)
    discardBody(raw, bounds, register).then((ended) => {
      if (!ended) reply.header('connection', 'close')
      done(null, payload)
    }, done)
  })
}
