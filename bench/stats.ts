// `npm run bench -- --only stats` (issue 25, docs/stats.md, docs/performance.md
// "Numbers over time"): GET /v1/stats on a project with 10 million events'
// worth of history, and what the hourly rollup adds to the writes that count.
//
// Per storage mode, a fresh database (embedded: in memory; PostgreSQL: a
// database of its own on the server, dropped after):
// 1. Seeds the rollup the way production writes it (SQL generate_series): a
//    year of hours of one project, about 1,150 events an hour (pushes sent,
//    delivered, failed by reason, shown, clicked, dismissed; subscribers gained
//    and lost), 10 million events in all, beside 20 other projects' years (so
//    the primary key holds 184,000 rows, not one project's alone), and the
//    project's active count equal to what the rows add up to.
// 2. Times GET /v1/stats in-process (app.inject, the route, auth, service, SQL
//    and serialization): 30 days of hours and a year of days, median and p95.
// 3. Times the writes that count: a fan-out batch of 500 pushes (recordBatch,
//    which includes the rollup's upsert) beside the upsert alone; a batch of 100
//    click beacons (recordBeacons) beside its upsert alone; 500 subscribers
//    inserted with the triggers counting them and with them off.
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { openDatabase, type Database } from '../src/platform/db/database.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { loadConfig } from '../src/platform/config.ts'
import { createContext } from '../src/platform/context.ts'
import { buildApp } from '../src/app.ts'
import { newId } from '../src/platform/ids.ts'
import { recordBatch } from '../src/delivery/batch-outcomes.ts'
import { recordBeacons } from '../src/events/events.service.ts'
import type { SendingBroadcast } from '../src/broadcasts/broadcast-state.ts'
import { addStats } from '../src/stats/stats.store.ts'
import { batchStats, beaconStats } from '../src/stats/stats-deltas.ts'
import type { Storage } from './fanout.ts'

const ADMIN = 'bench-admin-token-0123456789abcdef'
const HOURS = 366 * 24
const OTHER_PROJECTS = 20
const RUNS = 40

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

const ms = (n: number) => n.toFixed(n < 10 ? 2 : 1)

async function scratch(serverUrl: string | undefined, storage: Storage): Promise<{ url: string | null; drop: () => Promise<void> }> {
  if (storage === 'embedded') return { url: null, drop: async () => undefined }
  const name = `herald_bench_stats_${randomBytes(4).toString('hex')}`
  const admin = async (sql: string): Promise<void> => {
    const client = new pg.Client({ connectionString: serverUrl })
    await client.connect()
    await client.query(sql).finally(() => client.end())
  }
  await admin(`CREATE DATABASE ${name}`)
  const url = new URL(serverUrl!)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) }
}

/** A year of one project's hours: a daily rhythm, a send most hours, events adding up to about 10 million. */
async function seedRollup(db: Database, projectId: string, start: Date): Promise<{ events: number; active: number }> {
  await db.query(
    `INSERT INTO stats_hourly (project_id, hour, sent, delivered, failed, failed_gone, failed_unreachable, shown, clicked, dismissed,
                               gained_subscribe, gained_import, gained_migrated, lost_unsubscribed, lost_expired, lost_erased)
     SELECT $1, h, s, d, s - d, (s - d) / 2, (s - d) - (s - d) / 2,
            d * 9 / 10, d / 15, d / 30, 6 + w, w / 3, 0, 3, 2, 0
       FROM (SELECT h, 200 + (180 * (1 + sin(extract(hour FROM h) / 24.0 * 2 * pi())))::int AS s,
                    (extract(hour FROM h))::int % 4 AS w
               FROM generate_series($2::timestamptz, $2::timestamptz + ($3 - 1) * interval '1 hour', interval '1 hour') AS h) x,
            LATERAL (SELECT s * 95 / 100 AS d) y`,
    [projectId, start, HOURS],
  )
  const sums = await db.query<{ events: string; net: string }>(
    `SELECT sum(sent + delivered + failed + shown + clicked + dismissed + gained_subscribe + gained_import + lost_unsubscribed + lost_expired) AS events,
            sum(gained_subscribe + gained_import + gained_migrated - lost_unsubscribed - lost_expired - lost_erased) AS net
       FROM stats_hourly WHERE project_id = $1`,
    [projectId],
  )
  // The active count the rows lead to, from 20,000 at the start of the year.
  const active = 20_000 + Number(sums.rows[0].net)
  await db.query('UPDATE project_counters SET active_subscribers = $2 WHERE project_id = $1', [projectId, active])
  await db.query('UPDATE projects SET stats_since = $2 WHERE id = $1', [projectId, start])
  return { events: Number(sums.rows[0].events), active }
}

async function timeEach(runs: number, fn: () => Promise<unknown>): Promise<{ p50: number; p95: number }> {
  for (let i = 0; i < 3; i++) await fn() // warm up: plans, caches, JIT
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const started = performance.now()
    await fn()
    times.push(performance.now() - started)
  }
  return { p50: percentile(times, 50), p95: percentile(times, 95) }
}

export async function benchStats(storage: Storage, serverUrl: string | undefined): Promise<void> {
  const target = await scratch(serverUrl, storage)
  const db = await openDatabase({ databaseUrl: target.url, dataDir: null })
  try {
    await migrate(db)
    const ctx = createContext(loadConfig({ NODE_ENV: 'test', HERALD_ADMIN_TOKEN: ADMIN, HERALD_PUBLIC_URL: 'http://localhost:3000', HERALD_LOG_LEVEL: 'silent' }), db)
    const app = await buildApp(ctx)
    const created = await app.inject({ method: 'POST', url: '/admin/v1/projects', headers: { authorization: `Bearer ${ADMIN}` }, payload: { name: 'bench', plan: 'max' } })
    const project = created.json() as { id: string; api_key: string }
    const headers = { authorization: `Bearer ${project.api_key}` }
    await app.inject({ method: 'PATCH', url: '/v1/me', headers, payload: { default_timezone: 'Europe/Paris' } })

    const now = Date.now()
    const start = new Date(Math.floor(now / 3_600_000) * 3_600_000 - (HOURS - 1) * 3_600_000)
    const seedStarted = performance.now()
    const { events, active } = await seedRollup(db, project.id, start)
    for (let i = 0; i < OTHER_PROJECTS; i++) {
      const other = newId('prj')
      await db.query(`INSERT INTO projects (id, name, plan, vapid_public, vapid_private) VALUES ($1, 'other', 'free', 'p', 'k')`, [other])
      await seedRollup(db, other, start)
    }
    if (storage === 'postgres') await db.query('ANALYZE stats_hourly')
    const seedSeconds = (performance.now() - seedStarted) / 1000
    console.log(`\nStats (${storage} storage): ${(events / 1e6).toFixed(1)} million events over a year of hours for one project (${HOURS} rows), ` +
      `${OTHER_PROJECTS} other projects alike (${(HOURS * (OTHER_PROJECTS + 1)).toLocaleString('en-US')} rows in stats_hourly), seeded in ${seedSeconds.toFixed(1)} s; ${active.toLocaleString('en-US')} active`)

    const get = (query: string) => async () => {
      const res = await app.inject({ method: 'GET', url: `/v1/stats?${query}`, headers })
      if (res.statusCode !== 200) throw new Error(`GET /v1/stats?${query}: ${res.statusCode} ${res.body}`)
    }
    const hourly = await timeEach(RUNS, get(`interval=hour&from=${now - 30 * 86_400_000}&to=${now}`))
    const daily = await timeEach(RUNS, get(`interval=day&from=${now - 365 * 86_400_000}&to=${now}`))
    console.log(`  GET /v1/stats, 30 days of hours (720 buckets): median ${ms(hourly.p50)} ms, p95 ${ms(hourly.p95)} ms over ${RUNS} requests`)
    console.log(`  GET /v1/stats, a year of days (366 buckets, Europe/Paris): median ${ms(daily.p50)} ms, p95 ${ms(daily.p95)} ms over ${RUNS} requests`)

    // The writes that count. A broadcast being sent, and subscribers to send to and to erase.
    const subscribers = Array.from({ length: 20_000 }, () => newId('sub'))
    await db.query(
      `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth)
       SELECT id, $2, 'https://fcm.googleapis.com/fcm/send/' || id, 'k', 'a' FROM unnest($1::text[]) AS s(id)`,
      [subscribers, project.id],
    )
    const broadcast = (await db.query<SendingBroadcast>(
      `INSERT INTO broadcasts (id, project_id, status, target, title, body, url, ttl, urgency, started_at, pending_batches, planning_done)
       VALUES ($1, $2, 'sending', '{"type":"all"}', 'T', 'B', '/', 86400, 'normal', now(), 1000000, false)
       RETURNING id, project_id, status, target, title, body, icon, image, url, ttl, urgency, topic, reserved, audience, started_at`,
      [newId('bdc'), project.id],
    )).rows[0]
    let at = 0
    const nextSlice = () => {
      const slice = subscribers.slice(at, at + 500)
      at = (at + 500) % subscribers.length
      return slice
    }
    const outcomesOf = (slice: string[]) => ({
      delivered: slice.slice(0, 490).map((subscriberId) => ({ subscriberId, externalId: null })),
      failed: slice.slice(490).map((subscriberId) => ({ subscriberId, externalId: null, reason: 'unreachable' as const, status: 503 })),
    })
    const batch = await timeEach(RUNS, () => db.transaction((tx) => recordBatch(tx, broadcast, outcomesOf(nextSlice()), 0)))
    const batchUpsert = await timeEach(RUNS, () => db.transaction((tx) => addStats(tx, [batchStats(project.id, outcomesOf(nextSlice()))])))
    const beacons = () => Array.from({ length: 100 }, () => ({ project_id: project.id, broadcast_id: broadcast.id, type: 'clicked' as const }))
    const beaconBatch = await timeEach(RUNS, () => recordBeacons(db, beacons()))
    const beaconUpsert = await timeEach(RUNS, () => db.transaction((tx) => addStats(tx, beaconStats(beacons()))))
    console.log(`  fan-out batch of 500 pushes (recordBatch: events, health, rollup, broadcast): median ${ms(batch.p50)} ms; ` +
      `of it the rollup's one upsert: median ${ms(batchUpsert.p50)} ms (${ms((1000 * batchUpsert.p50) / 500)} µs a push)`)
    console.log(`  beacon batch of 100 clicks (recordBeacons): median ${ms(beaconBatch.p50)} ms; ` +
      `of it the rollup's one upsert: median ${ms(beaconUpsert.p50)} ms (${ms((1000 * beaconUpsert.p50) / 100)} µs a beacon)`)

    const insertSubscribers = (counting: boolean) => async () => {
      await db.transaction(async (tx) => {
        if (!counting) await tx.query("SELECT set_config('herald.stats', 'off', true)")
        await tx.query(
          `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth)
           SELECT id, $2, 'https://fcm.googleapis.com/fcm/send/' || id, 'k', 'a' FROM unnest($1::text[]) AS s(id)`,
          [Array.from({ length: 500 }, () => newId('sub')), project.id],
        )
      })
    }
    const withTriggers = await timeEach(RUNS / 2, insertSubscribers(true))
    const without = await timeEach(RUNS / 2, insertSubscribers(false))
    console.log(`  500 subscribers inserted in one statement: median ${ms(withTriggers.p50)} ms counted by the triggers, ${ms(without.p50)} ms with them off`)
    await app.close()
  } finally {
    await db.close()
    await target.drop()
  }
}
