// A customer's webhook endpoint on localhost for tests and benchmarks: it
// records every request (headers and body) and can be told to answer badly
// (500, 410, 429, a redirect) a number of times, or slowly.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export interface ReceivedWebhook {
  path: string
  headers: Record<string, string>
  body: string
  /** The body parsed as JSON (undefined when it is not JSON). */
  json: unknown
  at: number
}

export type Answer =
  | { status: 500 | 503 | 410 | 400 | 404 }
  | { status: 429; retryAfter?: string }
  /** A redirect to `location` (a path on this receiver, or a URL). */
  | { status: 301 | 302 | 307 | 308; location: string }

export interface WebhookReceiver {
  /** Base URL, e.g. http://127.0.0.1:40123. Paths are free: /hook, /a, /b … are recorded apart. */
  url: string
  port: number
  received: ReceivedWebhook[]
  /** Requests to one path. */
  on(path: string): ReceivedWebhook[]
  /** Answer `answer` to the next `times` requests to `path` (default: forever), then 200 again. */
  fail(path: string, answer: Answer, times?: number): void
  /** Wait this long before answering requests to `path`. */
  delay(path: string, ms: number): void
  /** Only count requests (no bodies kept): benchmarks. */
  countOnly: boolean
  count: number
  /** Most requests to `path` ever open at the same moment. */
  maxInFlight(path: string): number
  /** Requests to `path` answered so far. */
  answered(path: string): number
  reset(): void
  /** Resolves once `path` has received `n` requests, or rejects after timeoutMs. */
  waitFor(path: string, n: number, timeoutMs?: number): Promise<ReceivedWebhook[]>
  close(): Promise<void>
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const failures = new Map<string, { answer: Answer; left: number }>()
  const delays = new Map<string, number>()
  const sockets = new Set<Socket>()
  const open = new Map<string, number>()
  const peak = new Map<string, number>()
  const answers = new Map<string, number>()

  const receiver: WebhookReceiver = {
    url: '',
    port: 0,
    received: [],
    countOnly: false,
    count: 0,
    on: (path) => receiver.received.filter((r) => r.path === path),
    maxInFlight: (path) => peak.get(path) ?? 0,
    answered: (path) => answers.get(path) ?? 0,
    fail(path, answer, times = Infinity) {
      failures.set(path, { answer, left: times })
    },
    delay(path, ms) {
      delays.set(path, ms)
    },
    reset() {
      receiver.received = []
      receiver.count = 0
      failures.clear()
      delays.clear()
      peak.clear()
      answers.clear()
    },
    async waitFor(path, n, timeoutMs = 15_000) {
      const start = Date.now()
      for (;;) {
        const got = receiver.on(path)
        if (got.length >= n) return got
        if (Date.now() - start > timeoutMs) throw new Error(`${path} received ${got.length} of ${n} webhooks`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const path = (req.url ?? '/').split('?')[0]
    receiver.count++
    if (!receiver.countOnly) {
      const body = Buffer.concat(chunks).toString('utf8')
      let json: unknown
      try {
        json = JSON.parse(body)
      } catch {
        json = undefined
      }
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]))
      receiver.received.push({ path, headers, body, json, at: Date.now() })
    }
    const now = (open.get(path) ?? 0) + 1
    open.set(path, now)
    peak.set(path, Math.max(peak.get(path) ?? 0, now))
    const wait = delays.get(path)
    if (wait) await new Promise((resolve) => setTimeout(resolve, wait))
    open.set(path, (open.get(path) ?? 1) - 1)
    answers.set(path, (answers.get(path) ?? 0) + 1)
    const failure = failures.get(path)
    if (failure && failure.left > 0) {
      failure.left--
      const { answer } = failure
      const headers: Record<string, string> = {}
      if ('location' in answer) headers.location = answer.location
      if ('retryAfter' in answer && answer.retryAfter !== undefined) headers['retry-after'] = answer.retryAfter
      res.writeHead(answer.status, headers).end('no')
      return
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy())
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receiver.port = (server.address() as AddressInfo).port
  receiver.url = `http://127.0.0.1:${receiver.port}`
  return receiver
}
