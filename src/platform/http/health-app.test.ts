// The HTTP server of a `serve --role worker` process: /healthz always, /readyz
// 200 while the database answers and the worker runs, else 503 not_ready with
// the error body of decisions.md section 1.
import { VERSION } from '../version.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.ts'
import { testConfig } from '../../../test/support/app.ts'
import { createContext, type AppContext } from '../context.ts'
import { buildHealthApp } from './health-app.ts'
import { openDatabase } from '../db/database.ts'

describe('the worker role health server', () => {
  let database: TestDatabase
  let ctx: AppContext
  beforeAll(async () => {
    database = await createTestDatabase()
    ctx = createContext(testConfig(), database.db)
  })
  afterAll(async () => {
    await ctx.rateLimiter.close()
    // Embedded, the second test closed it already.
    if (database.url) await database.drop()
  })

  it('answers /healthz and /readyz, and 503 not_ready while its worker is not running', async () => {
    let running = true
    const app = await buildHealthApp(ctx, () => running)
    expect((await app.inject('/healthz')).json()).toEqual({ ok: true, version: VERSION })
    expect((await app.inject('/readyz')).statusCode).toBe(200)
    running = false
    const notReady = await app.inject('/readyz')
    expect(notReady.statusCode).toBe(503)
    expect(notReady.json()).toEqual({ error: { code: 'not_ready', message: 'The background worker is not running.' } })
    expect((await app.inject('/v1/me')).statusCode).toBe(404)
    await app.close()
  })

  it('answers /readyz 503 once its database is gone, /healthz 200', async () => {
    // On a server, a handle of its own to close (the test database is still dropped after); embedded, the one database.
    const db = database.url ? await openDatabase({ databaseUrl: database.url, dataDir: null, poolSize: 1 }) : database.db
    const app = await buildHealthApp({ ...ctx, db }, () => true)
    expect((await app.inject('/readyz')).statusCode).toBe(200)
    await db.close()
    const notReady = await app.inject('/readyz')
    expect(notReady.statusCode).toBe(503)
    expect(notReady.json().error).toEqual({ code: 'not_ready', message: 'The database does not answer.' })
    expect((await app.inject('/healthz')).statusCode).toBe(200)
    await app.close()
  })
})
