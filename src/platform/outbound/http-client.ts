// POSTs to URLs that came from outside (webhook endpoints). One undici Agent:
// a keep-alive pool per origin, capped in connections, redirects never
// followed (a 3xx is just an answer), a timeout on every request, and, unless
// private addresses are allowed, the connection-time address check.
import { Agent } from 'undici'
import { publicOnlyConnector } from './public-connect.ts'

export interface OutboundClientOptions {
  /** No answer (headers or body) within this long is a failure. */
  timeoutMs: number
  /** Connections per origin. */
  connectionsPerOrigin: number
  /** Allow loopback and private addresses (development and tests). */
  allowPrivateAddresses: boolean
}

export type OutboundResult =
  | { status: number; retryAfter: string | null }
  /** No HTTP answer: refused address, DNS failure, connection error or timeout. */
  | { status: null; error: string }

/** Answer bodies are not needed; reading at most this much keeps a chatty endpoint cheap. */
const MAX_ANSWER_BYTES = 64 * 1024

export class OutboundClient {
  private readonly agent: Agent
  /** The timeout given at construction: callers use it as a request's overall deadline too. */
  readonly timeoutMs: number

  constructor(options: OutboundClientOptions) {
    this.timeoutMs = options.timeoutMs
    const connect = { timeout: options.timeoutMs }
    this.agent = new Agent({
      connections: options.connectionsPerOrigin,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connect: options.allowPrivateAddresses ? connect : publicOnlyConnector(connect),
    })
  }

  async post(url: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<OutboundResult> {
    try {
      const target = new URL(url)
      const response = await this.agent.request({
        origin: target.origin,
        path: target.pathname + target.search,
        method: 'POST',
        headers,
        body,
        signal,
      })
      // Read (a bounded part of) the answer so the connection can be reused.
      let read = 0
      for await (const chunk of response.body) {
        read += (chunk as Buffer).length
        if (read > MAX_ANSWER_BYTES) {
          response.body.destroy()
          break
        }
      }
      const retryAfter = response.headers['retry-after']
      return { status: response.statusCode, retryAfter: (Array.isArray(retryAfter) ? retryAfter[0] : retryAfter) ?? null }
    } catch (err) {
      if (signal?.aborted && (signal.reason as Error | undefined)?.name === 'TimeoutError') {
        return { status: null, error: 'TimeoutError: no complete answer before the deadline' }
      }
      const error = err as NodeJS.ErrnoException
      return { status: null, error: error.code ? `${error.code}: ${error.message}` : error.message }
    }
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => undefined)
  }
}

/** Retry-After as seconds or an HTTP date, in ms from now; null when absent or unreadable. */
export function parseRetryAfterMs(value: string | null, now = Date.now()): number | null {
  if (!value) return null
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000
  const date = Date.parse(value)
  return Number.isNaN(date) ? null : Math.max(0, date - now)
}
