// The embedded database (PGlite) in a worker thread of its own (issue 26), so
// PostgreSQL's WebAssembly and PGlite's parsing of every result run beside the
// main thread's HTTP and TLS work instead of inside it. Plain JavaScript, like
// the encryption threads, so the thread starts without a TypeScript loader.
//
// Driven by embedded-thread.ts over postMessage. Results are built here by
// PGlite exactly as in the main thread before (Date, number, bigint, parsed
// JSON, Uint8Array for bytea) and cross by structured clone, which keeps every
// one of those types. Requests (main → thread), each with a numeric id and
// answered once with { id, result } or { id, error }:
//   { op: 'query', text, params, tx? }  { op: 'exec', sql, tx? }
//   { op: 'begin' } → a transaction id; its statements carry tx until
//   { op: 'end', tx, commit } commits it (or rolls it back)
//   { op: 'listen', channel, listener }, { op: 'unlisten', listener }: notifications come as { notify: listener, payload }
//   { op: 'close' }
// Statements run in the order they arrive, queued by PGlite as they were in
// the main thread: a statement outside a transaction waits for it to end.
import { setFlagsFromString } from 'node:v8'
import { parentPort, workerData } from 'node:worker_threads'
import { PGlite } from '@electric-sql/pglite'

/** An Error's message, name, stack and PostgreSQL fields (code, constraint, detail…), which structured clone would drop. */
function serializeError(err) {
  if (!(err instanceof Error)) return { message: String(err) }
  const out = { message: err.message, name: err.name, stack: err.stack }
  for (const [key, value] of Object.entries(err)) {
    if (value === undefined || typeof value === 'function') continue
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) continue // e.g. a result; not worth cloning
    out[key] = value
  }
  return out
}

/** A transaction rolled back because the main thread's function threw: not an error of its own. */
class RolledBack extends Error {}

let db
// PostgreSQL compiled to WebAssembly is a large module: V8's optimising tier
// compiles all of it again beside the baseline code, ~70 MB more resident
// (database.ts). Baseline code only while it loads.
setFlagsFromString('--liftoff-only')
try {
  db = new PGlite(workerData.dataDir ? `${workerData.dataDir}/pgdata` : undefined, { postgresqlconf: workerData.settings })
  await db.waitReady
} catch (err) {
  parentPort.postMessage({ id: 0, error: serializeError(err) })
  process.exit(1)
} finally {
  setFlagsFromString('--no-liftoff-only')
}

/** Open transactions by id: PGlite's handle, and how to end it. */
const transactions = new Map()
let nextTransaction = 1
/** Stop functions of LISTENs by the main thread's listener id. */
const listeners = new Map()

function target(tx) {
  if (tx === undefined) return db
  const open = transactions.get(tx)
  if (!open) throw new Error(`transaction ${tx} is not open`)
  return open.inner
}

function begin() {
  return new Promise((resolveBegin, rejectBegin) => {
    const id = nextTransaction++
    const open = { inner: null, end: null, done: null }
    const ended = new Promise((resolve, reject) => (open.end = { resolve, reject }))
    open.done = db.transaction((inner) => {
      open.inner = inner
      transactions.set(id, open)
      resolveBegin(id)
      return ended
    })
    // Failing before the function ran (BEGIN itself): the main thread's begin fails.
    open.done.catch((err) => {
      if (open.inner === null) rejectBegin(err)
    })
  })
}

async function end(tx, commit) {
  const open = transactions.get(tx)
  if (!open) throw new Error(`transaction ${tx} is not open`)
  transactions.delete(tx)
  if (commit) open.end.resolve()
  else open.end.reject(new RolledBack())
  try {
    await open.done
  } catch (err) {
    if (!(err instanceof RolledBack)) throw err
  }
  return null
}

async function handle(message) {
  switch (message.op) {
    case 'query': {
      const result = await target(message.tx).query(message.text, message.params)
      return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length }
    }
    case 'exec':
      await target(message.tx).exec(message.sql)
      return null
    case 'begin':
      return begin()
    case 'end':
      return end(message.tx, message.commit)
    case 'listen': {
      const stop = await db.listen(message.channel, (payload) => parentPort.postMessage({ notify: message.listener, payload }))
      listeners.set(message.listener, stop)
      return null
    }
    case 'unlisten': {
      const stop = listeners.get(message.listener)
      listeners.delete(message.listener)
      if (stop) await stop()
      return null
    }
    case 'close':
      await db.close()
      return null
    default:
      throw new Error(`unknown request ${message.op}`)
  }
}

parentPort.on('message', (message) => {
  handle(message).then(
    (result) => parentPort.postMessage({ id: message.id, result }),
    (err) => parentPort.postMessage({ id: message.id, error: serializeError(err) }),
  )
})
parentPort.postMessage({ id: 0, result: 'ready' })
