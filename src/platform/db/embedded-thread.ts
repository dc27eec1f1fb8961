// The main thread's side of the embedded database in a worker thread
// (embedded-thread.mjs, issue 26): the same Database as the in-process one,
// each statement a message to the thread and its result a message back.
// Herald's default (HERALD_EMBEDDED_THREAD, true unless set false); openDatabase without it runs PGlite in the calling thread.
import { Worker } from 'node:worker_threads'
import type { Database, DatabaseConnections, Queryable, QueryResult } from './database.ts'

/** V8 young generation of the database thread, in MB. */
const THREAD_YOUNG_MB = 8

type Pending = { resolve: (value: unknown) => void; reject: (err: Error) => void }

/** The thread ended (crashed, or out of memory) while statements were waiting: they fail, as on a lost connection. */
export class EmbeddedThreadStoppedError extends Error {
  constructor(reason: string) {
    super(`the embedded database thread stopped: ${reason}`)
  }
}

/** An error from the thread, rebuilt with its PostgreSQL fields (code, constraint, detail…) as PGlite threw it. */
function rebuildError(fields: Record<string, unknown>): Error {
  const err = new Error(String(fields.message))
  for (const [key, value] of Object.entries(fields)) {
    if (key !== 'message') (err as unknown as Record<string, unknown>)[key] = value
  }
  return err
}

/**
 * Only the flags a thread should share with the process: a CPU profile of
 * each thread (--cpu-prof, BENCH_PROFILE), not `--import tsx`, whose loader
 * and hooks thread would cost memory and start time for a plain .mjs file.
 */
function threadExecArgv(): string[] {
  return process.execArgv.filter((flag) => flag.startsWith('--cpu-prof'))
}

class ThreadedEmbeddedDatabase implements Database {
  readonly kind = 'embedded'
  private readonly pending = new Map<number, Pending>()
  private nextId = 1
  private nextListener = 1
  private readonly listeners = new Map<number, (payload: string) => void>()
  /** Queries and transactions started and not yet over. */
  private operations = 0
  private stopped: Error | null = null
  private closing: Promise<void> | null = null
  private readonly notifier: { pending: Set<string>; running: boolean }

  constructor(
    private readonly worker: Worker,
    private readonly unlock: () => void,
  ) {
    this.notifier = { pending: new Set(), running: false }
    worker.on('message', (message: { id?: number; result?: unknown; error?: Record<string, unknown>; notify?: number; payload?: string }) => {
      if (message.notify !== undefined) {
        this.listeners.get(message.notify)?.(message.payload ?? '')
        return
      }
      const waiting = this.pending.get(message.id!)
      if (!waiting) return
      this.pending.delete(message.id!)
      if (message.error) waiting.reject(rebuildError(message.error))
      else waiting.resolve(message.result)
    })
    const fail = (err: Error) => {
      this.stopped ??= err
      for (const waiting of this.pending.values()) waiting.reject(err)
      this.pending.clear()
    }
    worker.on('error', (err) => fail(new EmbeddedThreadStoppedError(err.message)))
    worker.on('exit', (code) => fail(new EmbeddedThreadStoppedError(`exited with code ${code}`)))
    // Not what keeps the process running: statements in flight are (see call).
    worker.unref()
  }

  /** One request to the thread. The thread holds the event loop open only while an answer is awaited (a CLI command ends when its work does). */
  private call<T>(message: Record<string, unknown>): Promise<T> {
    if (this.stopped) return Promise.reject(this.stopped)
    const id = this.nextId++
    if (this.pending.size === 0) this.worker.ref()
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject })
      message.id = id
      try {
        this.worker.postMessage(message)
      } catch (err) {
        // A parameter that cannot be copied to the thread (a function): this statement fails alone.
        this.pending.delete(id)
        reject(err as Error)
      }
    }).finally(() => {
      if (this.pending.size === 0) this.worker.unref()
    })
  }

  notifyAfterCommit(channel: string): void {
    // Coalesced as database.ts's Notifier does: one NOTIFY in flight per channel, one more if asked meanwhile.
    this.notifier.pending.add(channel)
    if (this.notifier.running) return
    this.notifier.running = true
    void (async () => {
      while (this.notifier.pending.size > 0) {
        const channels = [...this.notifier.pending]
        this.notifier.pending.clear()
        await Promise.all(channels.map((c) => this.call({ op: 'query', text: 'SELECT pg_notify($1, $2)', params: [c, ''] }).catch(() => undefined)))
      }
      this.notifier.running = false
    })()
  }

  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    const listener = this.nextListener++
    this.listeners.set(listener, onNotify)
    try {
      await this.call({ op: 'listen', channel, listener })
    } catch (err) {
      this.listeners.delete(listener)
      throw err
    }
    return async () => {
      this.listeners.delete(listener)
      await this.call({ op: 'unlisten', listener }).catch(() => undefined)
    }
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1')
  }

  connections(): DatabaseConnections {
    return { total: 1, inUse: Math.min(1, this.operations), waiting: Math.max(0, this.operations - 1) }
  }

  async query<T>(text: string, params?: unknown[]): Promise<QueryResult<T>> {
    this.operations++
    try {
      return await this.call<QueryResult<T>>({ op: 'query', text, params })
    } finally {
      this.operations--
    }
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const channels = new Set<string>()
    this.operations++
    let value: T
    try {
      const id = await this.call<number>({ op: 'begin' })
      const tx: Queryable & { embeddedTx: number } = {
        embeddedTx: id,
        notifyAfterCommit: (channel) => void channels.add(channel),
        query: <R>(text: string, params?: unknown[]) => this.call<QueryResult<R>>({ op: 'query', text, params, tx: id }),
      }
      try {
        value = await fn(tx)
      } catch (err) {
        await this.call({ op: 'end', tx: id, commit: false }).catch(() => undefined)
        throw err
      }
      await this.call({ op: 'end', tx: id, commit: true })
    } finally {
      this.operations--
    }
    for (const channel of channels) this.notifyAfterCommit(channel)
    return value
  }

  async exec(sql: string, tx?: Queryable): Promise<void> {
    await this.call({ op: 'exec', sql, tx: tx && 'embeddedTx' in tx ? (tx as { embeddedTx: number }).embeddedTx : undefined })
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        if (!this.stopped) await this.call({ op: 'close' })
      } finally {
        await this.worker.terminate()
        this.unlock()
      }
    })()
    return this.closing
  }
}

/** Opens PGlite in a thread of its own; resolves once the database answers. */
export async function openEmbeddedThread(dataDir: string | null, settings: string[], unlock: () => void): Promise<Database> {
  const worker = new Worker(new URL('./embedded-thread.mjs', import.meta.url), {
    workerData: { dataDir, settings },
    execArgv: threadExecArgv(),
    // The thread's churn is PGlite parsing results (a fan-out batch's 500
    // rows at a time): V8's default young generation would let it grow to
    // ~48 MB before collecting (docs/performance.md, issue 26).
    resourceLimits: { maxYoungGenerationSizeMb: THREAD_YOUNG_MB },
  })
  try {
    await new Promise<void>((resolve, reject) => {
      const onMessage = (message: { id?: number; error?: Record<string, unknown> }) => {
        if (message.id !== 0) return
        worker.off('message', onMessage)
        if (message.error) reject(rebuildError(message.error))
        else resolve()
      }
      worker.on('message', onMessage)
      worker.once('error', reject)
      worker.once('exit', (code) => reject(new EmbeddedThreadStoppedError(`exited with code ${code} while opening`)))
    })
  } catch (err) {
    await worker.terminate()
    unlock()
    throw err
  }
  worker.removeAllListeners('error')
  worker.removeAllListeners('exit')
  return new ThreadedEmbeddedDatabase(worker, unlock)
}
