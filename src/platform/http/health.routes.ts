// Liveness and readiness for load balancers and orchestrators (decisions.md §6).
import type { AppContext } from '../context.ts'
import type { App } from './app-type.ts'
import { AppError } from '../errors.ts'
import { Type, type Static } from 'typebox'
import { ErrorBody, Ok } from './shared-schemas.ts'
import { VERSION } from '../version.ts'

/** version: the release this process runs (package.json), so a fleet mid-upgrade shows which process runs what. */
const Health = Type.Object({ ok: Type.Literal(true), version: Type.String({ description: 'Herald release of this process, e.g. 0.2.0' }) })

export function registerHealthRoutes(app: App, ctx: AppContext, isReady: () => Promise<boolean> | boolean): void {
  app.get('/healthz', { schema: { operationId: 'getHealth', tags: ['health'], security: [], summary: 'Liveness: the process answers, with the release it runs', response: { 200: Health } } }, async () => ({ ok: true, version: VERSION }) as const)

  app.get('/readyz', { schema: { operationId: 'getReadiness', tags: ['health'], security: [], summary: 'Readiness: the database answers and the worker runs (503 not_ready otherwise)', response: { 200: Ok, 503: ErrorBody } } }, async (_request, reply) => {
    // Answered here rather than thrown: the error handler logs every 5xx, and a
    // load balancer asking every few seconds during an outage would write a
    // line each time (the outage itself is logged once, by the database).
    const notReady = (message: string) => reply.code(503).send(new AppError('not_ready', message).toBody() as Static<typeof ErrorBody>)
    try {
      // Bounded: a database cut off by the network must not leave the check hanging.
      await ctx.db.ping()
    } catch {
      return notReady('The database does not answer.')
    }
    if (!(await isReady())) return notReady('The background worker is not running.')
    return { ok: true } as const
  })
}
