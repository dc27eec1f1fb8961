// `herald dev push-service`: the local push service of push-service.ts on a
// port, with a small HTTP control surface beside the push endpoint so it can be
// driven from outside the process (curl, a browser-less client, another
// project's tests). It listens on 127.0.0.1 unless given a host, and writes its
// public URL (given, or made of host and port) into endpoints.
//
//   POST /subscriptions   {"applicationServerKey"?: "<VAPID public key>"}
//                         → 201 {endpoint, expirationTime: null, keys: {p256dh, auth}}
//   GET  /received        → {count, requests, received: [...decrypted pushes], rejected: [...]}
//                           (?endpoint=… for one subscription's pushes)
//   POST /faults          {"endpoint", "status": 404|410|429|500|…, "retry_after"?, "times"?}
//                         or {"endpoint", "hang": true, "times"?} → 204
//   POST /reset           → 204: forgets pushes, rejections and faults (subscriptions stay)
import type { IncomingMessage, ServerResponse } from 'node:http'
import { startPushService, type FailBehaviour, type PushService } from './push-service.ts'

export interface DevPushServiceOptions {
  /** Port to listen on; 0 picks a free one. */
  port: number
  /** Address to listen on (default 127.0.0.1). */
  host?: string
  /** Base URL other machines reach it at (default: from host and port); goes into endpoints and the VAPID audience. */
  publicUrl?: string
  /** Delay before every answer, in ms (a real push service is tens of ms away). */
  delayMs: number
}

const FAULT_STATUSES = new Set([400, 401, 403, 404, 410, 413, 429, 500, 503])
/** Largest control request body read; a subscription or fault request is far smaller. */
const MAX_CONTROL_BODY = 16 * 1024

class ControlError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

function json(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    res.writeHead(status, { 'content-length': '0' })
    res.end()
    return
  }
  const text = JSON.stringify(body, null, 2)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_CONTROL_BODY) throw new ControlError(413, `body over ${MAX_CONTROL_BODY} bytes`)
    chunks.push(chunk)
  }
  if (size === 0) return {}
  let value: unknown
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    throw new ControlError(400, 'body is not JSON')
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new ControlError(400, 'body must be a JSON object')
  return value as Record<string, unknown>
}

function faultFrom(body: Record<string, unknown>): { endpoint: string; behaviour: FailBehaviour } {
  const { endpoint, status, hang, times } = body
  if (typeof endpoint !== 'string') throw new ControlError(400, 'endpoint (a subscription endpoint of this push service) is required')
  if (times !== undefined && (typeof times !== 'number' || !Number.isInteger(times) || times < 0)) {
    throw new ControlError(400, 'times must be a whole number (0 clears the fault)')
  }
  const extra = times === undefined ? {} : { times }
  if (hang === true) return { endpoint, behaviour: { hang: true, ...extra } }
  if (typeof status !== 'number' || !FAULT_STATUSES.has(status)) {
    throw new ControlError(400, `status must be one of ${[...FAULT_STATUSES].join(', ')}, or send "hang": true`)
  }
  if (status === 429) {
    const retryAfter = body.retry_after ?? 1
    if (typeof retryAfter !== 'number' || !Number.isInteger(retryAfter) || retryAfter < 0) {
      throw new ControlError(400, 'retry_after must be a whole number of seconds')
    }
    return { endpoint, behaviour: { status: 429, retryAfter, ...extra } }
  }
  return { endpoint, behaviour: { status, ...extra } as FailBehaviour }
}

async function control(service: PushService, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', service.url)
  const route = `${req.method} ${url.pathname}`
  switch (route) {
    case 'POST /subscriptions': {
      const body = await readJson(req)
      const key = body.applicationServerKey
      if (key !== undefined && typeof key !== 'string') throw new ControlError(400, 'applicationServerKey must be a string')
      const subscription = service.createSubscription(key ? { applicationServerKey: key } : {})
      return json(res, 201, { endpoint: subscription.endpoint, expirationTime: null, keys: subscription.keys })
    }
    case 'GET /received': {
      const endpoint = url.searchParams.get('endpoint')
      let received = service.received
      if (endpoint) {
        try {
          received = service.receivedFor(endpoint)
        } catch (err) {
          throw new ControlError(404, (err as Error).message)
        }
      }
      return json(res, 200, { count: service.count, requests: service.requests, received, rejected: service.rejected })
    }
    case 'POST /faults': {
      const { endpoint, behaviour } = faultFrom(await readJson(req))
      try {
        service.fail(endpoint, behaviour)
      } catch (err) {
        throw new ControlError(404, (err as Error).message)
      }
      return json(res, 204)
    }
    case 'POST /reset':
      req.resume()
      service.reset()
      return json(res, 204)
    default:
      req.resume()
      throw new ControlError(404, `no route ${route}; see \`herald dev push-service --help\``)
  }
}

/** Starts the push service with its control routes; resolves once it listens. */
export async function startDevPushService(options: DevPushServiceOptions): Promise<PushService> {
  let service: PushService | null = null
  service = await startPushService({
    port: options.port,
    host: options.host,
    publicUrl: options.publicUrl,
    delayMs: options.delayMs,
    otherRequests: (req, res) => {
      control(service!, req, res).catch((err: unknown) => {
        const status = err instanceof ControlError ? err.status : 500
        if (!res.headersSent) json(res, status, { error: err instanceof Error ? err.message : String(err) })
      })
    },
  })
  return service
}

/** What the command prints once it listens. */
export function devPushServiceUsage(url: string, delayMs: number): string {
  return `Local push service listening on ${url} (answers after ${delayMs} ms; verifies VAPID and decrypts every push)

  New subscription (what a browser's PushSubscription.toJSON() gives):
    curl -s -X POST ${url}/subscriptions
    curl -s -X POST ${url}/subscriptions -d '{"applicationServerKey":"<project vapid_public_key>"}'
  Register it with Herald (which must run with HERALD_ALLOW_PRIVATE_ENDPOINTS=true to push to 127.0.0.1):
    curl -s -X POST "http://localhost:3000/v1/subscribe?project=<project id>" -H 'content-type: application/json' -d '<the subscription JSON>'
  What arrived, decrypted (?endpoint=… for one subscription):
    curl -s ${url}/received
  Make a subscription fail (status 400, 401, 403, 404, 410, 413, 429 with retry_after, 500, 503; or "hang": true; "times": N then accept):
    curl -s -X POST ${url}/faults -d '{"endpoint":"<endpoint>","status":410}'
  Forget pushes and faults:
    curl -s -X POST ${url}/reset

Ctrl-C stops it. Subscriptions live in memory and end with the process.`
}
