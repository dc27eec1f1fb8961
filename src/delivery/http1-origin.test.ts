// Http1Origin against a TCP server that answers with scripted bytes: how each
// answer is framed, when a connection is reused, and what fails a push.
import net, { type AddressInfo, type Socket } from 'node:net'
import { buildConnector } from 'undici'
import { afterEach, describe, expect, it } from 'vitest'
import { until } from '../../test/support/lost-claim.ts'
import { Http1Origin, type Http1Handler } from './http1-origin.ts'

interface Answer {
  status?: number
  retryAfter?: string
  body?: string
  error?: { code: string; message: string }
}

/** A server that hands each request (head and body as received) to `answer`, which writes what it likes on the socket. */
async function scriptedServer(answer: (socket: Socket, request: string, index: number) => void) {
  const requests: string[] = []
  const sockets: Socket[] = []
  let ended = 0
  const server = net.createServer((socket) => {
    sockets.push(socket)
    socket.on('close', () => ended++)
    let buffered = ''
    socket.setEncoding('latin1')
    socket.on('error', () => {})
    socket.on('data', (chunk: string) => {
      buffered += chunk
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n')
        if (end < 0) return
        const length = Number(/content-length: (\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0)
        if (buffered.length < end + 4 + length) return
        const request = buffered.slice(0, end + 4 + length)
        buffered = buffered.slice(end + 4 + length)
        requests.push(request)
        answer(socket, request, requests.length - 1)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
  return {
    url,
    requests,
    /** Connections the server accepted. */
    get connections() {
      return sockets.length
    },
    /** Of those, the ones closed since (by either side). */
    get ended() {
      return ended
    },
    close: () => {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** The plain answer to a push: 201 and no body. */
const CREATED = 'HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n'

/** A complete answer as Http1Origin hands it over. */
function answered(status: number, body = '', retryAfter?: string): Answer {
  return { status, retryAfter, body }
}

const open: Array<{ close(): unknown }> = []
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close()
})

function origin(url: URL, options: { connections?: number; timeoutMs?: number; keepAliveMs?: number } = {}): Http1Origin {
  const h1 = new Http1Origin(url, {
    connect: buildConnector({ timeout: 2000 }),
    connections: options.connections ?? 4,
    timeoutMs: options.timeoutMs ?? 2000,
    keepAliveMs: options.keepAliveMs ?? 60_000,
  })
  open.push(h1)
  return h1
}

function push(h1: Http1Origin, path = '/push/a', headers: Record<string, string> = { ttl: '60' }, body = Buffer.from('encrypted')): Promise<Answer> {
  return new Promise((resolve) => {
    const handler: Http1Handler = {
      onAnswer: (status, retryAfter, text) => resolve({ status, retryAfter, body: text }),
      onError: (err) => resolve({ error: { code: (err as NodeJS.ErrnoException).code ?? '', message: err.message } }),
    }
    h1.dispatch(path, headers, body, handler)
  })
}

/** Writes the bytes one at a time, each in its own packet where the stack allows (a head and a body split anywhere). */
async function dribble(socket: Socket, text: string): Promise<void> {
  for (const char of text) {
    socket.write(char)
    await new Promise((resolve) => setImmediate(resolve))
  }
}

describe('Http1Origin', () => {
  it('writes one POST with the host, the headers and the body, and reuses the connection after a complete answer', async () => {
    const server = await scriptedServer((socket) => socket.write('HTTP/1.1 201 Created\r\nLocation: /m/1\r\nContent-Length: 0\r\n\r\n'))
    open.push(server)
    const h1 = origin(server.url)
    expect(await push(h1, '/push/abc?x=1', { ttl: '60', urgency: 'high' }, Buffer.from('0123456789'))).toEqual(answered(201))
    expect(await push(h1)).toEqual(answered(201))
    expect(server.requests[0]).toBe(`POST /push/abc?x=1 HTTP/1.1\r\nhost: ${server.url.host}\r\nttl: 60\r\nurgency: high\r\ncontent-length: 10\r\n\r\n0123456789`)
    expect(server.connections).toBe(1)
  })

  it('reads answers split into single bytes: status, Retry-After and a 400 body kept, chunked with extensions and trailers', async () => {
    const answers = [
      'HTTP/1.1 429 Too Many Requests\r\nretry-after: 7\r\ncontent-length: 5\r\n\r\nslow!',
      'HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n6;ext=1\r\n{"reas\r\n14\r\non":"BadJwtToken"}  \r\n0\r\nX-Trailer: yes\r\n\r\n',
      `HTTP/1.1 100 Continue\r\n\r\n${CREATED}`,
    ]
    const server = await scriptedServer((socket, _request, index) => void dribble(socket, answers[index]))
    open.push(server)
    const h1 = origin(server.url)
    expect(await push(h1)).toEqual(answered(429, '', '7'))
    expect(await push(h1)).toEqual(answered(400, '{"reason":"BadJwtToken"}  '))
    expect(await push(h1)).toEqual(answered(201))
    expect(server.connections).toBe(1)
  })

  it('reads a body to the end of the connection when nothing frames it, and does not reuse a connection that said close', async () => {
    const answers = [
      'HTTP/1.1 410 Gone\r\nConnection: close\r\nContent-Length: 4\r\n\r\ngone',
      'HTTP/1.0 201 Created\r\n\r\nno length',
      'HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: gzip\r\n\r\nnot chunked',
      'HTTP/1.1 204 No Content\r\n\r\n',
    ]
    const server = await scriptedServer((socket, _request, index) => {
      socket.write(answers[index])
      if (index < 3) socket.end()
    })
    open.push(server)
    const h1 = origin(server.url)
    expect(await push(h1)).toEqual(answered(410))
    expect(await push(h1)).toEqual(answered(201))
    expect(await push(h1)).toEqual(answered(400, 'not chunked'))
    expect(await push(h1)).toEqual(answered(204))
    expect(server.connections).toBe(4)
  })

  it('fails the push and ends the connection on a malformed answer; the next push gets a new connection', async () => {
    const bad = [
      'HTTP/2 201\r\n\r\n',
      'HTTP/1.1 201 Created\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
      'HTTP/1.1 201 Created\r\nno colon here\r\n\r\n',
      'HTTP/1.1 201 Created\r\n folded: value\r\n\r\n',
      'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX',
      'HTTP/1.1 101 Switching Protocols\r\n\r\n',
      `HTTP/1.1 201 Created\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`,
    ]
    const server = await scriptedServer((socket, _request, index) => socket.write(index < bad.length ? bad[index] : CREATED))
    open.push(server)
    const h1 = origin(server.url)
    for (const answer of bad) {
      const outcome = await push(h1)
      expect(outcome.error?.code, answer.slice(0, 60)).toBe('EPROTO')
    }
    expect(await push(h1)).toEqual(answered(201))
    expect(server.connections).toBe(bad.length + 1)
  })

  it('does not trust a connection again after bytes nobody asked for, during or after an answer', async () => {
    const server = await scriptedServer((socket, _request, index) => {
      if (index === 0) socket.write(`${CREATED}HTTP/1.1 201 Created\r\n\r\n`)
      else if (index === 1) {
        socket.write(CREATED)
        setTimeout(() => socket.write('surprise'), 20)
      } else socket.write(CREATED)
    })
    open.push(server)
    const h1 = origin(server.url)
    expect(await push(h1)).toEqual(answered(201))
    expect(await push(h1)).toEqual(answered(201))
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(await push(h1)).toEqual(answered(201))
    expect(server.connections).toBe(3)
  })

  it('fails a push whose connection drops before the answer is complete, and one that gets no answer in time', async () => {
    const server = await scriptedServer((socket, _request, index) => {
      if (index === 0) socket.end('HTTP/1.1 201 Created\r\nContent-Length: 10\r\n\r\nshort')
      if (index === 1) socket.destroy()
      // index 2: never answered
    })
    open.push(server)
    const h1 = origin(server.url, { timeoutMs: 200 })
    expect((await push(h1)).error?.code).toBe('ECONNRESET')
    expect((await push(h1)).error?.code).toMatch(/^ECONNRESET|EPIPE$/)
    const started = Date.now()
    expect((await push(h1)).error?.code).toBe('ERR_PUSH_TIMEOUT')
    const waited = Date.now() - started
    expect(waited).toBeGreaterThanOrEqual(190)
    expect(waited).toBeLessThan(1000)
  })

  it('refuses, before writing anything, a header or path that would split or reframe the request', async () => {
    const server = await scriptedServer((socket) => socket.write(CREATED))
    open.push(server)
    const h1 = origin(server.url)
    expect((await push(h1, '/push/a', { topic: 'a\r\nx-injected: 1' })).error?.code).toBe('EINVALIDHEADER')
    // Written as latin1, U+010D U+010A would become CR LF.
    expect((await push(h1, '/push/a', { topic: 'a\u010d\u010ax-injected: 1' })).error?.code).toBe('EINVALIDHEADER')
    expect((await push(h1, '/push/a', { 'bad name': 'v' })).error?.code).toBe('EINVALIDHEADER')
    // The checks are made once per headers object (a batch shares one): its second push is refused too.
    const shared = { ttl: '60', topic: 'a\nb' }
    expect((await push(h1, '/push/a', shared)).error?.message).toBe('invalid header topic')
    expect((await push(h1, '/push/a', shared)).error?.message).toBe('invalid header topic')
    for (const name of ['Content-Length', 'host', 'Transfer-Encoding', 'connection']) {
      expect((await push(h1, '/push/a', { [name]: '1' })).error?.code, name).toBe('EINVALIDHEADER')
    }
    for (const path of ['push/a', '/push/a b', '/push/a\r\nx: 1', 'http://other/push']) {
      expect((await push(h1, path)).error?.code, path).toBe('EINVALIDPATH')
    }
    expect(await push(h1, '/push/a', { ttl: '60', 'x-ok': 'caf\u00e9 \t v' })).toEqual(answered(201))
    expect(server.requests).toHaveLength(1)
    expect(server.requests.join('')).not.toContain('x-injected')
  })

  it('holds a push past its connections until one is free', async () => {
    const server = await scriptedServer((socket, _request, index) => {
      if (index >= 2) socket.write(CREATED)
      // the first two are never answered: they time out
    })
    open.push(server)
    const h1 = origin(server.url, { connections: 2, timeoutMs: 300 })
    const order: string[] = []
    const first = push(h1).then((answer) => order.push(`first ${answer.error?.code}`))
    const second = push(h1).then((answer) => order.push(`second ${answer.error?.code}`))
    const third = push(h1).then((answer) => order.push(`third ${answer.status}`))
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(server.requests).toHaveLength(2)
    await Promise.all([first, second, third])
    // The third went out once the first's connection was given up. Whether its answer or the second's
    // timeout (a moment after the first's) comes first is up to the event loop: CI has seen both.
    expect([...order].sort()).toEqual(['first ERR_PUSH_TIMEOUT', 'second ERR_PUSH_TIMEOUT', 'third 201'])
    expect(order.indexOf('third 201')).toBeGreaterThan(order.indexOf('first ERR_PUSH_TIMEOUT'))
    expect(server.requests).toHaveLength(3)
  })

  it('gives a waiting push a connection only after the read that freed it: bytes after the answer are not its answer', async () => {
    const server = await scriptedServer((socket, _request, index) => {
      if (index === 0) socket.write(`${CREATED}HTTP/1.1 410 Gone\r\nContent-Length: 0\r\n\r\n`)
      else socket.write(CREATED)
    })
    open.push(server)
    const h1 = origin(server.url, { connections: 1 })
    const [first, waiting] = await Promise.all([push(h1, '/push/first'), push(h1, '/push/waiting')])
    expect(first).toEqual(answered(201))
    expect(waiting).toEqual(answered(201))
    expect(server.connections).toBe(2)
    expect(server.requests.map((r) => r.split(' ')[1])).toEqual(['/push/first', '/push/waiting'])
  })

  it('keeps an answer read to the end of the connection when the connection is reset rather than ended', async () => {
    const server = await scriptedServer((socket) => {
      socket.write('HTTP/1.1 201 Created\r\n\r\naccepted, and then')
      setTimeout(() => socket.resetAndDestroy(), 30)
    })
    open.push(server)
    const h1 = origin(server.url)
    expect(await push(h1)).toEqual(answered(201))
  })

  it('takes the server\'s Keep-Alive timeout, less 2 s: under 2 s the connection is not reused', async () => {
    const server = await scriptedServer((socket, _request, index) => {
      socket.write(`HTTP/1.1 201 Created\r\nKeep-Alive: timeout=${index < 2 ? 1 : 5}, max=100\r\nContent-Length: 0\r\n\r\n`)
    })
    open.push(server)
    const h1 = origin(server.url)
    for (let i = 0; i < 4; i++) expect((await push(h1)).status).toBe(201)
    expect(server.connections).toBe(3) // the first two closed after their answer; the third kept for the fourth push
  })

  it('fails the push when the connector throws, and still closes', async () => {
    const h1 = new Http1Origin(new URL('http://127.0.0.1:1'), {
      connect: () => {
        throw Object.assign(new Error('connector broke'), { code: 'EBROKEN' })
      },
      connections: 2,
      timeoutMs: 1000,
      keepAliveMs: 1000,
    })
    expect((await push(h1)).error).toEqual({ code: 'EBROKEN', message: 'connector broke' })
    await h1.close()
  })

  it('fails a push it cannot connect for, with the connector\'s error', async () => {
    const spare = net.createServer()
    await new Promise<void>((resolve) => spare.listen(0, '127.0.0.1', resolve))
    const port = (spare.address() as AddressInfo).port
    await new Promise<void>((resolve) => spare.close(() => resolve()))
    const h1 = origin(new URL(`http://127.0.0.1:${port}`))
    expect((await push(h1)).error?.code).toBe('ECONNREFUSED')
  })

  it('closes a connection idle for the keep-alive', async () => {
    const server = await scriptedServer((socket) => socket.write(CREATED))
    open.push(server)
    const h1 = origin(server.url, { keepAliveMs: 100, timeoutMs: 400 })
    expect((await push(h1)).status).toBe(201)
    expect((await push(h1)).status).toBe(201)
    expect(server.connections).toBe(1)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await push(h1)).status).toBe(201)
    expect(server.connections).toBe(2)
  })

  it('on close, takes no more pushes, closes idle connections at once and the others once their push is answered', async () => {
    let release: (() => void) | null = null
    const closedByClient: number[] = []
    const server = await scriptedServer((socket, _request, index) => {
      socket.on('end', () => closedByClient.push(index))
      const answer = () => socket.write(CREATED)
      if (index === 0) release = answer
      else answer()
    })
    open.push(server)
    const h1 = origin(server.url)
    const inFlight = push(h1) // answered only on release
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect((await push(h1)).status).toBe(201) // a second connection, now idle
    expect(server.connections).toBe(2)
    let closed = false
    const closing = h1.close().then(() => (closed = true))
    const again = h1.close() // a second call: the same wait, not a promise that never settles
    expect((await push(h1)).error?.code).toBe('ECLOSED')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(closedByClient).toEqual([1])
    expect(closed).toBe(false)
    release!()
    expect((await inFlight).status).toBe(201)
    await closing
    await again
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(closedByClient).toEqual([1, 0])
  })

  it('opens connections ahead up to the count asked and its cap; pushes take them, connected or still connecting, before opening more', async () => {
    const server = await scriptedServer((socket) => socket.write(CREATED))
    open.push(server)
    const h1 = origin(server.url, { connections: 3 })
    h1.preconnect(2)
    // Taken while still connecting: written once it is up.
    const first = push(h1, '/push/first')
    await until(() => server.connections === 2)
    expect(await first).toEqual(answered(201))
    expect(server.requests.map((r) => r.split(' ')[1])).toEqual(['/push/first'])
    // Both idle now: two pushes at once take them, a third opens the third connection.
    expect((await Promise.all([push(h1), push(h1)])).map((a) => a.status)).toEqual([201, 201])
    expect(server.connections).toBe(2)
    expect((await Promise.all([push(h1), push(h1), push(h1)])).map((a) => a.status)).toEqual([201, 201, 201])
    expect(server.connections).toBe(3)
    // Never past the cap, nor past what it already has.
    h1.preconnect(10)
    h1.preconnect(1)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(server.connections).toBe(3)
  })

  it('drops a connection opened ahead that cannot connect: the next push opens its own and hears why', async () => {
    const spare = net.createServer()
    await new Promise<void>((resolve) => spare.listen(0, '127.0.0.1', resolve))
    const port = (spare.address() as AddressInfo).port
    await new Promise<void>((resolve) => spare.close(() => resolve()))
    const connector = buildConnector({ timeout: 2000 })
    let attempts = 0
    let failed = 0
    const h1 = new Http1Origin(new URL(`http://127.0.0.1:${port}`), {
      connect: (options, callback) => {
        attempts++
        connector(options, (err, socket) => {
          if (err) failed++
          callback(err, socket as never)
        })
      },
      connections: 4,
      timeoutMs: 2000,
      keepAliveMs: 60_000,
    })
    open.push(h1)
    h1.preconnect(2)
    await until(() => failed === 2)
    // Both dropped: the push opens a third, and hears its refusal.
    expect((await push(h1)).error?.code).toBe('ECONNREFUSED')
    expect(attempts).toBe(3)
    // A connector that throws: nothing opened, nothing thrown to the caller.
    const broken = new Http1Origin(new URL('http://127.0.0.1:1'), {
      connect: () => {
        throw new Error('connector broke')
      },
      connections: 2,
      timeoutMs: 1000,
      keepAliveMs: 1000,
    })
    broken.preconnect(2)
    await broken.close()
    // A connector that never answers: close() does not wait for what it was opening ahead.
    const silent = new Http1Origin(new URL('http://127.0.0.1:1'), { connect: () => {}, connections: 2, timeoutMs: 1000, keepAliveMs: 1000 })
    silent.preconnect(2)
    await silent.close()
  })

  it('closes connections opened ahead when idle for the keep-alive, and on close whether connected or not', async () => {
    const server = await scriptedServer((socket) => socket.write(CREATED))
    open.push(server)
    // Kept while within the keep-alive (the timer looks every 100 ms here).
    const kept = origin(server.url, { keepAliveMs: 60_000, timeoutMs: 400 })
    kept.preconnect(1)
    await until(() => server.connections === 1)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(server.ended).toBe(0)
    expect((await push(kept)).status).toBe(201)
    expect(server.connections).toBe(1)
    await kept.close()
    await until(() => server.ended === 1)

    const idle = origin(server.url, { keepAliveMs: 100, timeoutMs: 400 })
    idle.preconnect(2)
    await until(() => server.connections === 3)
    await until(() => server.ended === 3)
    // A later push opens a new one: the closed ones are gone.
    expect((await push(idle)).status).toBe(201)
    expect(server.connections).toBe(4)

    const closing = origin(server.url)
    closing.preconnect(2)
    // Closed at once: one may still be connecting, and close() waits for neither.
    await closing.close()
    await until(() => server.connections === 6 && server.ended === 6)
    expect((await push(closing)).error?.code).toBe('ECLOSED')
  })
})

