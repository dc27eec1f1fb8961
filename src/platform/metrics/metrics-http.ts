// /metrics over HTTP: on the main port behind the operator token (like the
// /admin routes), or on HERALD_METRICS_PORT without one (a port the operator
// keeps private). And the count, latency and debug log line of every request.
import http from 'node:http'
import type { FastifyRequest } from 'fastify'
import type { AppContext } from '../context.ts'
import type { App } from '../http/app-type.ts'
import { adminAuth } from '../http/auth.ts'
import { AppError } from '../errors.ts'
import { ErrorBody } from '../http/shared-schemas.ts'
import { ConfigError } from '../config.ts'
import type { Metrics } from './metrics.ts'

/** The route label of a request no route matched: never the raw URL (it holds ids, and any path a scanner tries). */
const UNMATCHED = 'unmatched'

async function refuseAll(_request: FastifyRequest): Promise<void> {
  throw new AppError('invalid_admin_token', 'No operator token is configured on this server.')
}

export function registerMetricsRoute(app: App, ctx: AppContext): void {
  app.get(
    '/metrics',
    {
      onRequest: ctx.config.adminToken ? adminAuth(ctx.config.adminToken) : refuseAll,
      schema: {
        operationId: 'getMetrics',
        tags: ['admin'],
        security: [{ adminToken: [] }],
        summary: 'Prometheus metrics of this process (text exposition format)',
        produces: ['text/plain'],
        response: {
          200: {
            description: 'Every metric of this process, in the Prometheus text format (version 0.0.4).',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          401: ErrorBody,
        },
      },
    },
    async (_request, reply) => {
      const text = await ctx.metrics.text()
      return reply.type(ctx.metrics.contentType).send(text as never)
    },
  )
}

/** Counts every answered request by its route pattern and status, and times it. */
export function installRequestMetrics(app: App, metrics: Metrics): void {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? UNMATCHED
    const method = request.method
    const status = reply.statusCode
    metrics.httpRequests.inc({ method, route, status: String(status) })
    metrics.httpSeconds.observe({ method, route }, reply.elapsedTime / 1000)
  })
}

export interface MetricsServer {
  port: number
  close(): Promise<void>
}

/**
 * GET /metrics without a token, on its own port: for a Prometheus on the
 * private network, while PORT faces the public. Nothing else is served there.
 */
export async function startMetricsServer(metrics: Metrics, host: string, port: number): Promise<MetricsServer> {
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '').split('?', 1)[0]
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify(new AppError('not_found').toBody()))
      return
    }
    metrics.text().then(
      (text) => response.writeHead(200, { 'content-type': metrics.contentType }).end(request.method === 'HEAD' ? undefined : text),
      () => response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify(new AppError('internal_error').toBody())),
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new ConfigError(`HERALD_METRICS_PORT ${port} on ${host} is in use`) : err))
    server.listen(port, host, () => resolve())
  })
  const address = server.address()
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
