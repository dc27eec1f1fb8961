// Runs the service: the HTTP API, the background worker, or both in one
// process (the default, what `npm start` does).
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import type { Config, Role } from './platform/config.ts'
import { openDatabase, type Database } from './platform/db/database.ts'
import { isConnectionError } from './platform/db/availability.ts'
import { migrate } from './platform/db/migrate.ts'
import { createContext, createLogger } from './platform/context.ts'
import { resolveAdminToken } from './platform/admin-token.ts'
import { buildApp } from './app.ts'
import { buildHealthApp } from './platform/http/health-app.ts'
import { startMetricsServer } from './platform/metrics/metrics-http.ts'
import type { App } from './platform/http/app-type.ts'
import { createWorker, type BackgroundWorker } from './worker.ts'
import { validateVapidSubject } from './delivery/vapid.ts'
import { ConfigError } from './platform/config.ts'
import { describeProblems, productionProblems } from './platform/production-settings.ts'
import { VERSION } from './platform/version.ts'

/** Wait before running the migrations again after the database went away during them. */
const MIGRATE_RETRY_MS = 1_000
/** A stop that has not finished after this long (a database that does not answer) ends the process anyway. */
const STOP_TIMEOUT_MS = 20_000

export async function serve(config: Config, role: Role): Promise<void> {
  // Before anything opens: a production process on unsafe settings does not start at all.
  const unsafe = config.env === 'production' ? productionProblems(config) : []
  if (unsafe.length > 0) throw new ConfigError(`unsafe for NODE_ENV=production:\n${describeProblems(unsafe)}`)
  const subjectProblem = validateVapidSubject(config.vapidSubject)
  if (subjectProblem) throw new ConfigError(`HERALD_VAPID_SUBJECT ${subjectProblem}`)
  if (!config.databaseUrl && config.dataDir) await createEmbeddedDatabaseApart(config.dataDir)
  const log = createLogger(config)
  // The first line of every process: which release, which role (a fleet mid-upgrade runs two).
  log.info({ version: VERSION, role, node_version: process.versions.node }, `starting Herald ${VERSION} (--role ${role})`)
  // Closed in reverse order of opening by stop(), whatever was opened before the signal came.
  const closers: Array<() => Promise<void>> = []
  // The service runs until a signal stops it. Every other timer of a worker
  // (job polls, LISTEN reconnects, webhooks) is unref'd, and while the
  // database is away nothing else may hold the event loop: without this an
  // idle worker would quietly exit 0 in the middle of an outage.
  const keepRunning = setInterval(() => undefined, 1 << 30)
  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    log.info({ signal }, `stopping: received ${signal}`)
    setTimeout(() => {
      log.warn({ signal, timeout_ms: STOP_TIMEOUT_MS }, 'stopped before finishing: closing took too long')
      process.exit(0)
    }, STOP_TIMEOUT_MS).unref()
    for (const close of closers.reverse()) await close().catch(() => undefined)
    clearInterval(keepRunning)
    log.info({ signal }, 'stopped')
    process.exit(0)
  }
  process.on('SIGINT', () => void stop('SIGINT'))
  process.on('SIGTERM', () => void stop('SIGTERM'))
  process.on('exit', (code) => {
    if (!stopping) log.error({ code }, 'exiting without being told to stop')
  })
  // A promise nobody awaited must not end the service; it is logged loudly instead.
  process.on('unhandledRejection', (err) => log.error({ err }, 'unhandled promise rejection (a bug; the service keeps running)'))

  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    embeddedThread: config.embeddedThread,
    log,
    statementTimeoutMs: config.dbStatementTimeoutMs,
    lockTimeoutMs: config.dbLockTimeoutMs,
    idleInTransactionTimeoutMs: config.dbIdleInTransactionTimeoutMs,
    connectTimeoutMs: config.dbConnectTimeoutMs,
    waitUntilReachable: true,
  })
  closers.push(() => db.close())
  await migrateWhenReachable(db)
  const admin = resolveAdminToken(config)
  const ctx = createContext({ ...config, adminToken: admin.token }, db, log)
  closers.push(() => ctx.rateLimiter.close())

  let delivery: BackgroundWorker | null = null
  if (role === 'worker' || role === 'all') {
    delivery = createWorker(ctx)
    closers.push(() => delivery!.stop())
    await delivery.start()
  }
  const isReady = () => delivery === null || delivery.worker.isRunning

  // Every role answers /healthz and /readyz on PORT; a worker serves nothing else.
  const app = role === 'worker' ? await buildHealthApp(ctx, isReady) : await buildApp(ctx, { isReady })
  // Closed first, so no request enqueues work for a stopped worker.
  closers.push(() => app.close())
  await listen(app, config)
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : config.port
  // /metrics without a token on a port of its own, when asked for.
  const metricsServer = config.metricsPort === null ? null : await startMetricsServer(ctx.metrics, config.host, config.metricsPort)
  if (metricsServer) closers.push(() => metricsServer.close())
  if (role === 'worker') {
    console.log(`Herald ${VERSION} worker ${delivery!.worker.workerId} running (health checks on http://${config.host}:${port}/readyz)`)
    if (metricsServer) console.log(`Metrics on http://${config.host}:${metricsServer.port}/metrics`)
  } else {
    console.log(`Herald ${VERSION} ${role === 'all' ? 'API and worker' : 'API'} listening on http://${config.host}:${port} (public URL ${config.publicUrl})`)
    if (metricsServer) console.log(`Metrics on http://${config.host}:${metricsServer.port}/metrics`)
    console.log(`Storage: ${db.kind === 'embedded' ? `embedded PostgreSQL in ${config.dataDir}` : 'PostgreSQL server (DATABASE_URL)'}`)
    if (admin.generated && config.env !== 'production') {
      console.log(`Operator token (development; set HERALD_ADMIN_TOKEN to choose one): ${admin.token}`)
    }
  }
}

/** Migrations again after a connection failure (the database went away during them), until they are done. */
async function migrateWhenReachable(db: Database): Promise<void> {
  for (;;) {
    try {
      await migrate(db)
      return
    } catch (err) {
      if (!isConnectionError(err)) throw err
      // Logged once by the database's availability; each migration is its own transaction, so none is half applied.
      await new Promise((resolve) => setTimeout(resolve, MIGRATE_RETRY_MS))
    }
  }
}

async function listen(app: App, config: Config): Promise<void> {
  try {
    await app.listen({ port: config.port, host: config.host })
  } catch (err) {
    if ((err as { code?: string }).code !== 'EADDRINUSE') throw err
    throw new ConfigError(`port ${config.port} on ${config.host} is in use: give each Herald process on this machine its own PORT`)
  }
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
