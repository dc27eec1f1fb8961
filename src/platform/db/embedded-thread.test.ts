// The embedded database in a thread of its own (issue 26): the same results,
// errors, transactions and notifications as PGlite in the main thread, and the
// main thread free while a statement runs. Runs on PGlite in memory whatever
// the storage mode of the run (it is the embedded mode's adapter).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openDatabase, type Database } from './database.ts'

const TYPES_QUERY = `SELECT now() AS at, 1::int8 AS small8, 9007199254740993::int8 AS big8, 1.5::numeric AS num, 2::int4 AS i4,
  3.25::float8 AS f8, true AS yes, NULL::text AS nothing, '2020-01-02'::date AS day, interval '1 day' AS span,
  '{"a":[1,2],"b":{"c":null}}'::jsonb AS doc, '[1,"x"]'::json AS list, '\\x0102ff'::bytea AS bytes,
  ARRAY['x','y'] AS texts, ARRAY[1,2]::int8[] AS ints, 'ü€'::text AS text`

/** Each value's type and content, comparable across the two adapters. */
function describeRow(row: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(row).map(([key, value]) => [
      key,
      `${value === null ? 'null' : (value as object).constructor.name}:${JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? [...v] : v))}`,
    ]),
  )
}

describe('the embedded database in a thread', () => {
  let threaded: Database
  let inline: Database

  beforeAll(async () => {
    ;[threaded, inline] = await Promise.all([
      openDatabase({ databaseUrl: null, dataDir: null, embeddedThread: true }),
      openDatabase({ databaseUrl: null, dataDir: null, embeddedThread: false }),
    ])
    for (const db of [threaded, inline]) await db.exec('CREATE TABLE t (id int PRIMARY KEY, note text NOT NULL)')
  }, 60_000)

  afterAll(async () => {
    await Promise.all([threaded?.close(), inline?.close()])
  })

  it('gives results of the same types as PGlite in the main thread (Date, number, bigint, JSON, bytes, arrays)', async () => {
    const [a, b] = await Promise.all([threaded.query(TYPES_QUERY), inline.query(TYPES_QUERY)])
    const fromThread = describeRow(a.rows[0])
    const inMain = describeRow(b.rows[0])
    delete fromThread.at
    delete inMain.at
    expect(fromThread).toEqual(inMain)
    expect(a.rows[0].at).toBeInstanceOf(Date)
    expect(typeof a.rows[0].big8).toBe('bigint')
    expect(a.rows[0].bytes).toBeInstanceOf(Uint8Array)
    // Parameters cross too: a Buffer, a Date and an object for jsonb come back as they went.
    const at = new Date('2021-03-04T05:06:07.089Z')
    const echoed = await threaded.query<{ b: Uint8Array; d: Date; j: unknown }>('SELECT $1::bytea AS b, $2::timestamptz AS d, $3::jsonb AS j', [Buffer.from([7, 8]), at, { k: [1, 'v'] }])
    expect([...echoed.rows[0].b]).toEqual([7, 8])
    expect(echoed.rows[0].d.getTime()).toBe(at.getTime())
    expect(echoed.rows[0].j).toEqual({ k: [1, 'v'] })
  })

  it('reports rowCount as before, and errors with their PostgreSQL fields', async () => {
    for (const db of [threaded, inline]) {
      expect((await db.query("INSERT INTO t VALUES (1, 'a'), (2, 'b')")).rowCount).toBe(2)
      expect((await db.query("UPDATE t SET note = note || '!'")).rowCount).toBe(2)
    }
    const errors = await Promise.all([threaded, inline].map((db) => db.query("INSERT INTO t VALUES (1, 'again')").catch((err: unknown) => err as Record<string, unknown>)))
    for (const err of errors) expect(err).toBeInstanceOf(Error)
    const [fromThread, inMain] = errors as Array<Record<string, unknown>>
    expect(fromThread.code).toBe('23505')
    for (const field of ['message', 'code', 'constraint', 'detail', 'table', 'severity']) expect(fromThread[field]).toEqual(inMain[field])
  })

  it('commits a transaction that resolves, rolls back one that throws, and keeps statements outside it waiting until it ends', async () => {
    await threaded.transaction(async (tx) => {
      await tx.query("INSERT INTO t VALUES (10, 'kept')")
    })
    const failure = new Error('changed my mind')
    await expect(
      threaded.transaction(async (tx) => {
        await tx.query("INSERT INTO t VALUES (11, 'dropped')")
        throw failure
      }),
    ).rejects.toBe(failure)
    // A statement sent while a transaction is open runs after it: it sees the committed row.
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const open = threaded.transaction(async (tx) => {
      await tx.query("INSERT INTO t VALUES (12, 'late')")
      await held
    })
    await new Promise((resolve) => setTimeout(resolve, 20))
    const outside = threaded.query<{ n: number }>('SELECT count(*)::int AS n FROM t WHERE id = 12')
    release()
    await open
    expect((await outside).rows[0].n).toBe(1)
    expect((await threaded.query('SELECT id FROM t WHERE id >= 10 ORDER BY id')).rows).toEqual([{ id: 10 }, { id: 12 }])
  })

  it('delivers notifications to listeners until they stop', async () => {
    const got: string[] = []
    const stop = await threaded.listen('thread_test', (payload) => got.push(payload))
    await threaded.query("SELECT pg_notify('thread_test', 'one')")
    await expect.poll(() => got).toEqual(['one'])
    await stop()
    await threaded.query("SELECT pg_notify('thread_test', 'two')")
    await threaded.query('SELECT 1')
    expect(got).toEqual(['one'])
  })

  it('leaves the main thread free while a statement runs (in the main thread, PGlite holds it)', async () => {
    const HEAVY = 'SELECT count(*)::int AS n FROM generate_series(1, 1000000) AS g(i) WHERE i % 7 = 0'
    const ticksDuring = async (db: Database) => {
      let ticks = 0
      const timer = setInterval(() => ticks++, 5)
      const pending = db.query(HEAVY)
      // The statement has been handed over; count what the event loop does until it answers.
      const startTicks = ticks
      await pending
      clearInterval(timer)
      return ticks - startTicks
    }
    expect(await ticksDuring(inline)).toBe(0)
    expect(await ticksDuring(threaded)).toBeGreaterThan(0)
  })

  it('fails statements waiting when the thread dies, and every later one, instead of hanging (last: it ends the thread)', async () => {
    const pending = threaded.query('SELECT count(*) FROM generate_series(1, 1000000)')
    await (threaded as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate()
    await expect(pending).rejects.toThrow(/embedded database thread stopped/)
    await expect(threaded.query('SELECT 1')).rejects.toThrow(/embedded database thread stopped/)
  })
})
