// Liveness and readiness for load balancers and orchestrators (decisions.md §6).
import type { AppContext } from '../context.ts'
import type { App } from './app-type.ts'
import { AppError } from '../errors.ts'
import { Type } from 'typebox'
import { ErrorBody } from './error-body.ts'

const Ok = Type.Object({ ok: Type.Boolean() })

export function registerHealthRoutes(app: App, ctx: AppContext, isReady: () => Promise<boolean> | boolean): void {
  app.get('/healthz', { schema: { tags: ['health'], response: { 200: Ok } } }, async () => ({ ok: true }))

  app.get('/readyz', { schema: { tags: ['health'], response: { 200: Ok, 503: ErrorBody } } }, async () => {
    try {
      await ctx.db.query('SELECT 1')
    } catch {
      throw new AppError('not_ready', 'The database does not answer.')
    }
    if (!(await isReady())) throw new AppError('not_ready', 'The background worker is not running.')
    return { ok: true }
  })
}
