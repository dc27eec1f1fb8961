// Runs the service: the HTTP API, the background worker, or both in one
// process (the default, what `npm start` does).
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import type { Config, Role } from './platform/config.ts'
import { openDatabase } from './platform/db/database.ts'
import { migrate } from './platform/db/migrate.ts'
import { createContext } from './platform/context.ts'
import { resolveAdminToken } from './platform/admin-token.ts'
import { buildApp } from './app.ts'
import { createDeliveryWorker, type DeliveryWorker } from './delivery/delivery-worker.ts'
import { validateVapidSubject } from './delivery/vapid.ts'
import { ConfigError } from './platform/config.ts'

export async function serve(config: Config, role: Role): Promise<void> {
  const subjectProblem = validateVapidSubject(config.vapidSubject)
  if (subjectProblem) throw new ConfigError(`HERALD_VAPID_SUBJECT ${subjectProblem}`)
  if (!config.databaseUrl && config.dataDir) await createEmbeddedDatabaseApart(config.dataDir)
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })
  await migrate(db)
  const admin = resolveAdminToken(config)
  const ctx = createContext({ ...config, adminToken: admin.token }, db)
  const closers: Array<() => Promise<void>> = []

  let delivery: DeliveryWorker | null = null
  if (role === 'worker' || role === 'all') {
    delivery = createDeliveryWorker(ctx)
    await delivery.start()
    closers.push(() => delivery!.stop())
    if (role === 'worker') console.log(`Herald worker ${delivery.worker.workerId} running`)
  }

  if (role === 'api' || role === 'all') {
    const app = await buildApp(ctx, { isReady: () => delivery === null || delivery.worker.isRunning })
    await app.listen({ port: config.port, host: config.host })
    // The HTTP server closes first, so no request enqueues work for a stopped worker.
    closers.unshift(() => app.close())
    const address = app.server.address()
    const port = typeof address === 'object' && address ? address.port : config.port
    console.log(`Herald ${role === 'all' ? 'API and worker' : 'API'} listening on http://${config.host}:${port} (public URL ${config.publicUrl})`)
    console.log(`Storage: ${db.kind === 'embedded' ? `embedded PostgreSQL in ${config.dataDir}` : 'PostgreSQL server (DATABASE_URL)'}`)
    if (admin.generated && config.env !== 'production') {
      console.log(`Operator token (development; set HERALD_ADMIN_TOKEN to choose one): ${admin.token}`)
    }
  }

  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    ctx.log.info({ signal }, 'stopping')
    for (const close of closers) await close().catch(() => undefined)
    await ctx.rateLimiter.close()
    await db.close()
    process.exit(0)
  }
  process.on('SIGINT', () => void stop('SIGINT'))
  process.on('SIGTERM', () => void stop('SIGTERM'))
}

/**
 * Creating the embedded database (PostgreSQL's initdb, then the migrations)
 * leaves ~450 MB more resident in the process that did it, for good (measured:
 * ~740 MB on a first `npm start`, ~265 MB on the next). So on an empty data
 * directory it is done by `herald db migrate` in a child process that exits,
 * and this process opens the database afterwards like any later start.
 */
async function createEmbeddedDatabaseApart(dataDir: string): Promise<void> {
  if (fs.existsSync(path.join(dataDir, 'pgdata', 'PG_VERSION'))) return
  // The CLI this process was started as: src/main.ts under tsx, dist/src/main.js when built, bin/herald.js.
  const main = process.argv[1]
  console.log(`Creating the embedded database in ${dataDir}…`)
  await promisify(execFile)(process.execPath, [...process.execArgv, main, 'db', 'migrate'], { env: process.env })
}
