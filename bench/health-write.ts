// Micro-benchmark of the write fan-out adds per batch for subscription health
// (issue 23, migration 0025): recordPushHealth for 500 delivered pushes at a
// time, beside the batch's events insert that fan-out already made, each in
// its own transaction. docs/performance.md, "Subscription health".
// Run: npx tsx bench/health-write.ts [passes, default 3]   (DATABASE_URL set: on a database of its own on that server instead)
//
// Prints wall time per subscriber for each pass over 20,000 subscribers (40
// batches of 500); later passes update rows the first one wrote. On the
// embedded database the write runs in Herald's main thread, so this time is
// CPU of that thread.
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { openDatabase } from '../src/platform/db/database.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { newId } from '../src/platform/ids.ts'
import type { Queryable } from '../src/platform/db/database.ts'
import { recordEvents } from '../src/events/events.store.ts'
import { recordPushHealth } from '../src/subscribers/health.store.ts'

const PASSES = Number(process.argv[2] ?? 3)
const SUBSCRIBERS = 20_000
const BATCH = 500
const serverUrl = process.env.DATABASE_URL ?? null

const name = `herald_bench_health_${randomBytes(4).toString('hex')}`
const admin = async (sql: string): Promise<void> => {
  const client = new pg.Client({ connectionString: serverUrl! })
  await client.connect()
  await client.query(sql).finally(() => client.end())
}
let url: string | null = null
if (serverUrl) {
  await admin(`CREATE DATABASE ${name}`)
  const parsed = new URL(serverUrl)
  parsed.pathname = `/${name}`
  url = parsed.toString()
}
const db = await openDatabase({ databaseUrl: url, dataDir: null })
try {
  await migrate(db)
  const project = newId('prj')
  const broadcast = newId('bdc')
  await db.query(`INSERT INTO projects (id, name, plan, vapid_public, vapid_private) VALUES ($1, 'bench', 'free', 'p', 'k')`, [project])
  await db.query(
    `INSERT INTO broadcasts (id, project_id, status, target, title, body, url, ttl, urgency)
     VALUES ($1, $2, 'sending', '{"type":"all"}', 'T', 'B', '/', 86400, 'normal')`,
    [broadcast, project],
  )
  const subscribers = Array.from({ length: SUBSCRIBERS }, () => newId('sub'))
  await db.query(
    `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, tags)
     SELECT id, $2, 'https://fcm.googleapis.com/fcm/send/' || id, 'k', 'a', '{"plan":"pro"}' FROM unnest($1::text[]) AS s(id)`,
    [subscribers, project],
  )
  const time = async (label: string, write: (tx: Queryable, slice: string[]) => Promise<unknown>): Promise<void> => {
    const started = performance.now()
    for (let at = 0; at < SUBSCRIBERS; at += BATCH) await db.transaction((tx) => write(tx, subscribers.slice(at, at + BATCH)))
    console.log(`  ${label}: ${((1000 * (performance.now() - started)) / SUBSCRIBERS).toFixed(1)} µs per subscriber`)
  }
  console.log(`Health write, ${serverUrl ? 'PostgreSQL' : 'embedded'}: ${SUBSCRIBERS} subscribers, batches of ${BATCH}`)
  for (let pass = 1; pass <= PASSES; pass++) {
    await time(`pass ${pass}, events insert (the existing write)`, (tx, slice) =>
      recordEvents(tx, slice.map((subscriber_id) => ({ id: newId('evt'), project_id: project, broadcast_id: broadcast, subscriber_id, type: 'delivered' as const })), { ownBroadcasts: true }))
    await time(`pass ${pass}, recordPushHealth (the health write)`, (tx, slice) =>
      recordPushHealth(tx, project, slice.map((subscriberId) => ({ subscriberId, delivered: true, gone: false }))))
  }
} finally {
  await db.close()
  if (serverUrl) await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
}
