// One interface over the two ways Herald stores data: the embedded PGlite
// database (no server needed) and a PostgreSQL server (DATABASE_URL). The SQL
// and the migrations are the same for both.
import fs from 'node:fs'
import { setFlagsFromString } from 'node:v8'
import pg from 'pg'
import type { PGlite } from '@electric-sql/pglite'
import { lockDataDir } from './data-dir-lock.ts'
import { DatabaseAvailability, isConnectionError, type DatabaseLog } from './availability.ts'
import { listenOnServer } from './listen-connection.ts'
import { openEmbeddedThread } from './embedded-thread.ts'
import {
  DEFAULT_DB_CONNECT_TIMEOUT_MS,
  DEFAULT_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  DEFAULT_DB_LOCK_TIMEOUT_MS,
  DEFAULT_DB_STATEMENT_TIMEOUT_MS,
} from '../config.ts'

export interface QueryResult<T> {
  rows: T[]
  rowCount: number
}

/** Anything SQL can be run on: the database itself or an open transaction. */
export interface Queryable {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<QueryResult<T>>
  /**
   * NOTIFY channel once the transaction has committed (at once outside one).
   * Sent outside the transaction and coalesced: PostgreSQL serialises the
   * commits of notifying transactions, which would make every send and every
   * beacon wait for the others' WAL flush.
   */
  notifyAfterCommit(channel: string): void
}

/** Coalesces NOTIFYs: one in flight per channel, one more if asked meanwhile. */
class Notifier {
  private readonly pending = new Set<string>()
  private running = false

  constructor(private readonly send: (channel: string) => Promise<unknown>) {}

  notify(channel: string): void {
    this.pending.add(channel)
    if (!this.running) void this.flush()
  }

  private async flush(): Promise<void> {
    this.running = true
    while (this.pending.size > 0) {
      const channels = [...this.pending]
      this.pending.clear()
      // A lost wake-up only delays work until the next poll.
      await Promise.all(channels.map((channel) => this.send(channel).catch(() => undefined)))
    }
    this.running = false
  }
}

export interface Database extends Queryable {
  readonly kind: 'embedded' | 'postgres'
  /** Runs fn in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>
  /** Runs a script of several statements (migrations). */
  exec(sql: string, tx?: Queryable): Promise<void>
  /**
   * Calls onNotify for each NOTIFY on channel (LISTEN), and onNotify('') after
   * a reconnection. On a server this holds one connection of its own, pinged
   * and replaced when it drops or goes silent (listen-connection.ts).
   * Resolves to a function that stops listening.
   */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>
  /** Resolves when the database answers a trivial query within a short time (/readyz); rejects otherwise. */
  ping(): Promise<void>
  /** Connections now (for /metrics): open, running a query or transaction, and requests waiting for one. */
  connections(): DatabaseConnections
  close(): Promise<void>
}

export interface DatabaseConnections {
  total: number
  inUse: number
  waiting: number
}

// int8 (counts, sums) as a JS number: every bigint Herald stores fits in 2^53.
pg.types.setTypeParser(20, (value) => Number(value))

/** A server not reachable at start is asked again after this long, then twice as long each time, up to START_RETRY_MAX_MS. */
const START_RETRY_MIN_MS = 250
const START_RETRY_MAX_MS = 5_000
/** /readyz's query gets this long to be answered before the process is reported not ready. */
const PING_TIMEOUT_MS = 2_000
/**
 * TCP keepalive on every server connection: an idle connection whose peer is
 * gone (a host cut off, a server that vanished without closing) is probed
 * after this long and dropped once the probes go unanswered (Node 20 sets only
 * this delay; the probes follow the OS's settings, on Linux 9 probes 75 s
 * apart), and the pool replaces it. The server side of a cut is bounded by
 * idle_in_transaction_session_timeout instead, and the LISTEN connection by
 * its ping (listen-connection.ts), both in seconds.
 */
const KEEPALIVE_INITIAL_DELAY_MS = 10_000

/** The server did not answer a ping in time: counted as unreachable (the code is a socket error's). */
class PingTimeoutError extends Error {
  readonly code = 'ETIMEDOUT'
  constructor() {
    super(`the database did not answer within ${PING_TIMEOUT_MS} ms`)
  }
}

class PostgresDatabase implements Database {
  readonly kind = 'postgres'
  private readonly notifier = new Notifier((channel) => this.pool.query('SELECT pg_notify($1, $2)', [channel, '']))
  readonly availability: DatabaseAvailability

  constructor(
    private readonly pool: pg.Pool,
    private readonly clientConfig: pg.ClientConfig,
    log: DatabaseLog | null,
  ) {
    this.availability = new DatabaseAvailability(log, () => this.ping())
    // A server restart drops idle connections; the pool replaces them, and the
    // error must not take the process down.
    pool.on('error', (err) => this.availability.failed(err))
  }

  notifyAfterCommit(channel: string): void {
    this.notifier.notify(channel)
  }

  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    return listenOnServer(this.clientConfig, channel, onNotify, this.availability)
  }

  async ping(): Promise<void> {
    await this.observe(() => {
      // Bounded as a whole: waiting for a free or new connection (every one
      // stuck on a cut network) counts too, not only the query.
      const query = this.pool.query({ text: 'SELECT 1', query_timeout: PING_TIMEOUT_MS } as pg.QueryConfig)
      let timer: NodeJS.Timeout | undefined
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new PingTimeoutError()), PING_TIMEOUT_MS)
      })
      return Promise.race([query, timeout]).finally(() => {
        clearTimeout(timer)
        query.catch(() => undefined) // its late failure, once the race is lost, is nobody's concern
      })
    })
  }

  /** Reports the outcome of a round trip to the server to availability. */
  private async observe<R>(run: () => Promise<R>): Promise<R> {
    const startedAt = this.availability.begin()
    try {
      const value = await run()
      this.availability.succeeded(startedAt)
      return value
    } catch (err) {
      this.availability.failed(err, startedAt)
      throw err
    }
  }

  connections(): DatabaseConnections {
    return { total: this.pool.totalCount, inUse: this.pool.totalCount - this.pool.idleCount, waiting: this.pool.waitingCount }
  }

  async query<T>(text: string, params?: unknown[]): Promise<QueryResult<T>> {
    const result = await this.observe(() => this.pool.query(text, params as unknown[]))
    return { rows: result.rows as T[], rowCount: result.rowCount ?? 0 }
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const startedAt = this.availability.begin()
    const client = await this.observe(() => this.pool.connect())
    // A checked-out client has no listener of the pool's: without one, the
    // connection dropping mid-transaction (a server restart) is an unhandled
    // 'error' event that kills the process. The query in flight fails anyway,
    // and the broken client is destroyed on release instead of reused.
    let broken: Error | undefined
    const onError = (err: Error) => void (broken = err)
    client.on('error', onError)
    const channels = new Set<string>()
    const tx: Queryable & { client: pg.PoolClient } = {
      client,
      notifyAfterCommit: (channel) => void channels.add(channel),
      async query<R>(text: string, params?: unknown[]) {
        const result = await client.query(text, params as unknown[])
        return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 }
      },
    }
    try {
      await client.query('BEGIN')
      const value = await fn(tx)
      await client.query('COMMIT')
      this.availability.succeeded(startedAt)
      for (const channel of channels) this.notifier.notify(channel)
      return value
    } catch (err) {
      // A connection that failed under a statement is not rolled back on (it would hang or fail too): destroyed.
      if (isConnectionError(err)) broken ??= err as Error
      if (!broken) await client.query('ROLLBACK').catch((rollbackErr: Error) => void (broken = rollbackErr))
      this.availability.failed(broken ?? err, startedAt)
      throw err
    } finally {
      client.off('error', onError)
      client.release(broken ?? false)
    }
  }

  async exec(sql: string, tx?: Queryable): Promise<void> {
    const target = tx && 'client' in tx ? (tx as { client: pg.PoolClient }).client : this.pool
    await target.query(sql)
  }

  async close(): Promise<void> {
    this.availability.close()
    await this.pool.end()
  }
}

type PGliteTx = Parameters<Parameters<PGlite['transaction']>[0]>[0]

class EmbeddedDatabase implements Database {
  readonly kind = 'embedded'
  /** Queries and transactions started and not yet over (running or queued in PGlite). */
  private operations = 0
  private readonly notifier = new Notifier((channel) => this.db.query('SELECT pg_notify($1, $2)', [channel, '']))

  notifyAfterCommit(channel: string): void {
    this.notifier.notify(channel)
  }

  constructor(
    private readonly db: PGlite,
    private readonly unlock: () => void = () => undefined,
  ) {}

  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    const stop = await this.db.listen(channel, onNotify)
    return async () => {
      await stop().catch(() => undefined)
    }
  }

  async ping(): Promise<void> {
    await this.db.query('SELECT 1')
  }

  /**
   * PGlite is one connection that runs one query or transaction at a time and
   * queues the rest: in use while anything runs, the others waiting.
   */
  connections(): DatabaseConnections {
    return { total: 1, inUse: Math.min(1, this.operations), waiting: Math.max(0, this.operations - 1) }
  }

  async query<T>(text: string, params?: unknown[]): Promise<QueryResult<T>> {
    this.operations++
    try {
      const result = await this.db.query<T>(text, params as unknown[])
      return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length }
    } finally {
      this.operations--
    }
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const channels = new Set<string>()
    this.operations++
    const value = await this.db.transaction(async (inner) => {
      const tx: Queryable & { inner: PGliteTx } = {
        inner,
        notifyAfterCommit: (channel) => void channels.add(channel),
        async query<R>(text: string, params?: unknown[]) {
          const result = await inner.query<R>(text, params as unknown[])
          return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length }
        },
      }
      return fn(tx)
    }).finally(() => this.operations--)
    for (const channel of channels) this.notifier.notify(channel)
    return value
  }

  async exec(sql: string, tx?: Queryable): Promise<void> {
    if (tx && 'inner' in tx) await (tx as { inner: PGliteTx }).inner.exec(sql)
    else await this.db.exec(sql)
  }

  async close(): Promise<void> {
    await this.db.close()
    this.unlock()
  }
}

/**
 * The embedded server runs inside this process's memory, so its caches are
 * sized for a laptop: PostgreSQL's default 128 MB of shared buffers would be
 * most of Herald's footprint (measured: 360 MB resident at start with the
 * default, 237 MB with 32 MB of shared buffers; 8 MB and small WAL and temp
 * buffers took another ~20-30 MB off an open database, docs/performance.md).
 */
const EMBEDDED_SETTINGS = ['shared_buffers=8MB', 'work_mem=2MB', 'maintenance_work_mem=16MB', 'wal_buffers=512kB', 'temp_buffers=2MB']

export interface DatabaseOptions {
  /** postgres://… to use a server; otherwise the embedded database. */
  databaseUrl: string | null
  /** Where the embedded database keeps its files; null keeps it in memory (tests). */
  dataDir: string | null
  /**
   * The embedded database in a worker thread of its own (HERALD_EMBEDDED_THREAD,
   * issue 26: PostgreSQL's WebAssembly off the main thread); false runs it in
   * this thread (the default here, for tests and tools that open a database
   * themselves). Herald's config turns it on by default: measured on a quiet
   * 2-core machine, a fan-out moves 20-25% more pushes a second with it, for
   * ~25 MB more RSS (docs/performance.md, issue 26).
   */
  embeddedThread?: boolean
  /** Connections in the pool when on a server. Default 10. */
  poolSize?: number
  /** Where a server outage is logged, once as it starts and once as it ends. Default: not logged. */
  log?: DatabaseLog
  /** A server that cannot be reached yet is waited for (the service starting), rather than an error (the CLI). Default false. */
  waitUntilReachable?: boolean
  /** Server-side bounds on every connection (config.ts explains each); defaults from config.ts. */
  statementTimeoutMs?: number
  lockTimeoutMs?: number
  idleInTransactionTimeoutMs?: number
  connectTimeoutMs?: number
}

/** Settings every connection to a server opens with, pool and LISTEN alike. */
function serverClientConfig(options: DatabaseOptions & { databaseUrl: string }): pg.ClientConfig {
  return {
    connectionString: options.databaseUrl,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_DB_CONNECT_TIMEOUT_MS,
    // Sent in the startup message: the server applies them to the session.
    statement_timeout: options.statementTimeoutMs ?? DEFAULT_DB_STATEMENT_TIMEOUT_MS,
    lock_timeout: options.lockTimeoutMs ?? DEFAULT_DB_LOCK_TIMEOUT_MS,
    idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs ?? DEFAULT_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  }
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.databaseUrl) {
    const clientConfig = serverClientConfig({ ...options, databaseUrl: options.databaseUrl })
    const pool = new pg.Pool({ ...clientConfig, max: options.poolSize ?? 10 })
    const database = new PostgresDatabase(pool, clientConfig, options.log ?? null)
    for (let delay = START_RETRY_MIN_MS; ; delay = Math.min(START_RETRY_MAX_MS, delay * 2)) {
      try {
        await database.query('SELECT 1')
        return database
      } catch (err) {
        if (!options.waitUntilReachable || !isConnectionError(err)) {
          await database.close().catch(() => undefined)
          throw err
        }
        // Logged once by database.availability, like an outage later on.
        await new Promise((resolve) => setTimeout(resolve, delay))
      }
    }
  }
  if (options.dataDir) fs.mkdirSync(options.dataDir, { recursive: true })
  const unlock = options.dataDir ? lockDataDir(options.dataDir) : undefined
  if (options.embeddedThread === true) return openEmbeddedThread(options.dataDir, EMBEDDED_SETTINGS, unlock ?? (() => undefined))
  // Imported only here: on a PostgreSQL server Herald never loads the embedded one (~45 MB).
  const { PGlite } = await import('@electric-sql/pglite')
  // PostgreSQL compiled to WebAssembly is a large module: V8's optimising tier
  // compiles all of it again beside the baseline code, ~70 MB more resident
  // (measured 196 → 124 MB for an open database). Baseline code only for this
  // module; the flag is put back once it is compiled, for any other module.
  setFlagsFromString('--liftoff-only')
  let db: PGlite
  try {
    db = new PGlite(options.dataDir ? `${options.dataDir}/pgdata` : undefined, { postgresqlconf: EMBEDDED_SETTINGS })
    await db.waitReady
  } finally {
    setFlagsFromString('--no-liftoff-only')
  }
  return new EmbeddedDatabase(db, unlock)
}
