// The HTTP server of a `serve --role worker` process: only /healthz,
// /readyz and /metrics (with the operator token), so a worker host can be
// health-checked and scraped like an API host.
import Fastify from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { AppContext } from '../context.ts'
import type { App } from './app-type.ts'
import { installErrorHandling } from './errors.ts'
import { registerHealthRoutes } from './health.routes.ts'
import { newId } from '../ids.ts'
import { RequestLog } from './request-log.ts'
import { installRequestMetrics, registerMetricsRoute } from '../metrics/metrics-http.ts'

export async function buildHealthApp(ctx: AppContext, isReady: () => Promise<boolean> | boolean): Promise<App> {
  const app = Fastify({
    loggerInstance: ctx.log,
    genReqId: () => newId('req'),
    return503OnClosing: true,
    logController: new RequestLog(),
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App
  installErrorHandling(app)
  installRequestMetrics(app, ctx.metrics)
  registerHealthRoutes(app, ctx, isReady)
  registerMetricsRoute(app, ctx)
  await app.ready()
  return app
}
