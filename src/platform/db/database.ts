// One interface over the two ways Herald stores data: the embedded PGlite
// database (no server needed) and a PostgreSQL server (DATABASE_URL). The SQL
// and the migrations are the same for both.
import fs from 'node:fs'
import { setFlagsFromString } from 'node:v8'
import pg from 'pg'
import type { PGlite } from '@electric-sql/pglite'
import { lockDataDir } from './data-dir-lock.ts'

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
   * Calls onNotify for each NOTIFY on channel (LISTEN). On a server this holds
   * one connection of its own and reconnects after a restart of the server.
   * Resolves to a function that stops listening.
   */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>
  close(): Promise<void>
}

// int8 (counts, sums) as a JS number: every bigint Herald stores fits in 2^53.
pg.types.setTypeParser(20, (value) => Number(value))

/** Wait between attempts to re-open a LISTEN connection after it drops. */
const LISTEN_RECONNECT_MS = 1000

class PostgresDatabase implements Database {
  readonly kind = 'postgres'
  private readonly notifier = new Notifier((channel) => this.pool.query('SELECT pg_notify($1, $2)', [channel, '']))

  constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
  ) {}

  notifyAfterCommit(channel: string): void {
    this.notifier.notify(channel)
  }

  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    let client: pg.Client | null = null
    let stopped = false
    const connect = async (): Promise<void> => {
      if (stopped) return
      const next = new pg.Client({ connectionString: this.url })
      next.on('notification', (message) => {
        if (message.channel === channel) onNotify(message.payload ?? '')
      })
      next.on('error', () => {
        next.end().catch(() => undefined)
        if (client === next) client = null
        if (!stopped) setTimeout(() => void connect().catch(() => undefined), LISTEN_RECONNECT_MS).unref()
      })
      try {
        await next.connect()
        await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
        client = next
        // Anything notified while the connection was down is found by polling.
        onNotify('')
      } catch {
        next.end().catch(() => undefined)
        if (!stopped) setTimeout(() => void connect().catch(() => undefined), LISTEN_RECONNECT_MS).unref()
      }
    }
    await connect()
    return async () => {
      stopped = true
      await client?.end().catch(() => undefined)
    }
  }

  async query<T>(text: string, params?: unknown[]): Promise<QueryResult<T>> {
    const result = await this.pool.query(text, params as unknown[])
    return { rows: result.rows as T[], rowCount: result.rowCount ?? 0 }
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect()
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
      for (const channel of channels) this.notifier.notify(channel)
      return value
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined)
      throw err
    } finally {
      client.release()
    }
  }

  async exec(sql: string, tx?: Queryable): Promise<void> {
    const target = tx && 'client' in tx ? (tx as { client: pg.PoolClient }).client : this.pool
    await target.query(sql)
  }

  async close(): Promise<void> {
    await this.pool.end()
  }
}

type PGliteTx = Parameters<Parameters<PGlite['transaction']>[0]>[0]

class EmbeddedDatabase implements Database {
  readonly kind = 'embedded'
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

  async query<T>(text: string, params?: unknown[]): Promise<QueryResult<T>> {
    const result = await this.db.query<T>(text, params as unknown[])
    return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length }
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const channels = new Set<string>()
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
    })
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
  /** Connections in the pool when on a server. Default 10. */
  poolSize?: number
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.databaseUrl) {
    const pool = new pg.Pool({ connectionString: options.databaseUrl, max: options.poolSize ?? 10 })
    // A server restart drops idle connections; the pool replaces them, and the
    // error must not take the process down.
    pool.on('error', () => undefined)
    const database = new PostgresDatabase(pool, options.databaseUrl)
    await database.query('SELECT 1')
    return database
  }
  if (options.dataDir) fs.mkdirSync(options.dataDir, { recursive: true })
  const unlock = options.dataDir ? lockDataDir(options.dataDir) : undefined
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
