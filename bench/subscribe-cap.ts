// The subscriber cap check at subscribe with a large project, on PostgreSQL:
// the counter row of migration 0003 against the exact count it replaced, the
// whole POST /v1/subscribe, and what the counting triggers cost the writes.
//
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/subscribe-cap.ts [subscribers]
//
// Works in a database of its own (herald_bench_cap_*), dropped at the end.
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { buildApp } from '../src/app.ts'
import { createContext } from '../src/platform/context.ts'
import { openDatabase, type Database } from '../src/platform/db/database.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { createApiKey, createProject } from '../src/projects/projects.service.ts'
import { updateProject } from '../src/projects/projects.store.ts'
import { subscription } from '../src/subscribers/subscribers.fixtures.ts'
import { testConfig } from '../test/support/app.ts'
import { withDatabase } from '../test/support/database.ts'

const SUBSCRIBERS = Number(process.argv[2] ?? 900_000)
const serverUrl = process.env.DATABASE_URL
if (!serverUrl) throw new Error('set DATABASE_URL to a PostgreSQL server')

function summary(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(2)
  return `n=${sorted.length} p50=${at(0.5)} ms p95=${at(0.95)} ms p99=${at(0.99)} ms max=${sorted[sorted.length - 1].toFixed(2)} ms`
}

async function timed(n: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < n; i++) {
    const start = performance.now()
    await fn(i)
    out.push(performance.now() - start)
  }
  return out
}

/** The cap check as it was before 0003: an exact count, stopped at the cap. */
const OLD_COUNT = `SELECT count(*)::int8 AS n FROM (
  SELECT 1 FROM subscribers WHERE project_id = $1 AND status = 'active' LIMIT $2) capped`
const NEW_COUNT = 'SELECT active_subscribers FROM project_counters WHERE project_id = $1 FOR NO KEY UPDATE'

async function main(): Promise<void> {
  const name = `herald_bench_cap_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  let db: Database | null = null
  try {
    const url = withDatabase(serverUrl!, name)
    db = await openDatabase({ databaseUrl: url, dataDir: null })
    await migrate(db)
    const { project } = await createProject(db, { name: 'bench', plan: 'pro' })
    await updateProject(db, project.id, { limits: { requests_per_minute: 1_000_000 } })
    const cap = 1_000_000 // the pro plan's

    const start = performance.now()
    await db.query(
      `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, external_id)
       SELECT 'sub_bench' || lpad(n::text, 9, '0'), $1, 'https://fcm.googleapis.com/fcm/send/bench' || n,
              'BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM', 'tBHItJI5svbpez7KI4CCXg',
              'user_' || (n % 300000)
         FROM generate_series(1, $2) n`,
      [project.id, SUBSCRIBERS],
    )
    await db.query('VACUUM ANALYZE subscribers')
    console.log(`${SUBSCRIBERS} active subscribers inserted in ${((performance.now() - start) / 1000).toFixed(1)} s`)
    const counted = await db.query<{ n: number }>(`SELECT count(*)::int8 AS n FROM subscribers WHERE project_id = $1 AND status = 'active'`, [project.id])
    const counter = await db.query<{ n: number }>('SELECT active_subscribers AS n FROM project_counters WHERE project_id = $1', [project.id])
    console.log(`count(*) = ${counted.rows[0].n}, counter = ${counter.rows[0].n}`)

    // 1. The cap check statement alone, inside a transaction as subscribe runs it.
    const inTx = (sql: string, params: unknown[]) => db!.transaction((tx) => tx.query(sql, params))
    await timed(5, () => inTx(OLD_COUNT, [project.id, cap])) // warm the cache
    console.log(`old cap check (count, LIMIT cap):  ${summary(await timed(30, () => inTx(OLD_COUNT, [project.id, cap])))}`)
    await timed(20, () => inTx(NEW_COUNT, [project.id]))
    console.log(`new cap check (counter row lock):  ${summary(await timed(500, () => inTx(NEW_COUNT, [project.id])))}`)

    // 2. The whole subscribe through the HTTP layer (app.inject, no socket).
    const ctx = createContext(testConfig({ DATABASE_URL: url, HERALD_ALLOW_PRIVATE_ENDPOINTS: 'false' }), db)
    const app = await buildApp(ctx)
    const post = (payload: Record<string, unknown>) =>
      app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload }).then((res) => {
        if (res.statusCode !== 201) throw new Error(`subscribe answered ${res.statusCode}: ${res.body}`)
      })
    await timed(20, () => post(subscription()))
    console.log(`POST /v1/subscribe, new endpoint:  ${summary(await timed(1000, () => post(subscription())))}`)
    const repeat = subscription()
    await post(repeat)
    console.log(`POST /v1/subscribe, repeat:        ${summary(await timed(500, () => post(repeat)))}`)
    const usage = await app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${(await createApiKey(db, project.id, { name: 'bench' })).key}` } })
    console.log(`GET /v1/me usage: ${JSON.stringify(usage.json().project.usage)}`)
    await app.close()
    await ctx.rateLimiter.close()

    // 3. What the triggers cost the writes: the same statements with the
    // triggers on and off, each in a transaction rolled back.
    const stmts: Array<[string, string, unknown[]]> = [
      ['insert 1 row', `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth) VALUES ('sub_x', $1, 'https://x.example/1', 'k', 'a')`, [project.id]],
      ['upsert repeat (refresh)', `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth) VALUES ('sub_y', $1, 'https://fcm.googleapis.com/fcm/send/bench7', 'k', 'a')
         ON CONFLICT (project_id, endpoint) DO UPDATE SET p256dh = EXCLUDED.p256dh, status = 'active', last_seen_at = now()`, [project.id]],
      ['expire 1,000 rows in one UPDATE', `UPDATE subscribers SET status = 'expired' WHERE id = ANY($1::text[]) AND status = 'active'`,
        [Array.from({ length: 1000 }, (_, i) => `sub_bench${String(5000 + i * 7).padStart(9, '0')}`)]],
      ['erase by external_id (3 rows)', `DELETE FROM subscribers WHERE project_id = $1 AND external_id = 'user_4242'`, [project.id]],
    ]
    for (const [label, sql, params] of stmts) {
      const result: Record<string, string> = {}
      for (const triggers of ['on', 'off']) {
        const samples: number[] = []
        const client = new pg.Client({ connectionString: url })
        await client.connect()
        for (let i = 0; i < 60; i++) {
          await client.query('BEGIN')
          if (triggers === 'off') await client.query('ALTER TABLE subscribers DISABLE TRIGGER USER')
          const t0 = performance.now()
          await client.query(sql, params)
          samples.push(performance.now() - t0)
          await client.query('ROLLBACK')
        }
        await client.end()
        result[triggers] = summary(samples.slice(10)) // the first runs warm the cache
      }
      console.log(`${label}:\n  triggers on:  ${result.on}\n  triggers off: ${result.off}`)
    }
  } finally {
    await db?.close()
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
    console.log(`dropped ${name}`)
  }
}

await main()
