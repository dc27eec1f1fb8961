// Micro-benchmark of the database write fan-out makes per push: one delivered
// event row, written 500 at a time by recordEvents (as a batch job does), on
// the schema before migration 0016 (the events' three foreign keys) and after
// it (the subscriber's key alone). Issue 14; docs/performance.md.
// Run: npx tsx bench/events-insert.ts [rounds, default 3]   (DATABASE_URL set: also on that server)
//
// Prints wall time per event row, median of the rounds; each round is a fresh
// database (embedded: in memory) with 20,000 subscribers and 40 batches of 500
// events. On the embedded database the write runs in Herald's main thread, so
// this time is CPU of that thread and a stall of its event loop.
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { openDatabase, type Database } from '../src/platform/db/database.ts'
import { migrate, readMigrations } from '../src/platform/db/migrate.ts'
import { recordEvents, type NewEvent } from '../src/events/events.store.ts'
import { newId } from '../src/platform/ids.ts'

const ROUNDS = Number(process.argv[2] ?? 3)
const SUBSCRIBERS = 20_000
const BATCH = 500

/** A database of its own on the server for one round (dropped after), or null for an in-memory embedded one. */
async function scratchDatabase(serverUrl: string | null): Promise<{ url: string | null; drop: () => Promise<void> }> {
  if (!serverUrl) return { url: null, drop: async () => undefined }
  const name = `herald_bench_events_${randomBytes(4).toString('hex')}`
  const admin = async (sql: string): Promise<void> => {
    const client = new pg.Client({ connectionString: serverUrl })
    await client.connect()
    await client.query(sql).finally(() => client.end())
  }
  await admin(`CREATE DATABASE ${name}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) }
}

async function round(serverUrl: string | null, throughMigration: number): Promise<number> {
  const scratch = await scratchDatabase(serverUrl)
  const db: Database = await openDatabase({ databaseUrl: scratch.url, dataDir: null })
  try {
    await migrate(db, readMigrations().filter((m) => m.id <= throughMigration))
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
      `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth)
       SELECT id, $2, 'https://push.example/' || id, 'k', 'a' FROM unnest($1::text[]) AS s(id)`,
      [subscribers, project],
    )
    const started = performance.now()
    for (let at = 0; at < SUBSCRIBERS; at += BATCH) {
      const events: NewEvent[] = subscribers.slice(at, at + BATCH).map((subscriber_id) => ({
        id: newId('evt'),
        project_id: project,
        broadcast_id: broadcast,
        subscriber_id,
        external_id: null,
        type: 'delivered',
        meta: null,
      }))
      await db.transaction((tx) => recordEvents(tx, events, { ownBroadcasts: true }))
    }
    return ((performance.now() - started) * 1000) / SUBSCRIBERS
  } finally {
    await db.close()
    await scratch.drop()
  }
}

const targets: Array<[string, string | null]> = [['embedded', null]]
if (process.env.DATABASE_URL) targets.push(['postgres', process.env.DATABASE_URL])
for (const [name, url] of targets) {
  for (const [label, through] of [['before 0016 (three foreign keys)', 15], ['after 0016 (subscriber key only)', 16]] as const) {
    const perRow: number[] = []
    for (let i = 0; i < ROUNDS; i++) perRow.push(await round(url, through))
    perRow.sort((a, b) => a - b)
    console.log(`${name.padEnd(9)} ${label.padEnd(34)} ${perRow[Math.floor(perRow.length / 2)].toFixed(1).padStart(6)} µs per event row  (rounds ${perRow.map((v) => v.toFixed(1)).join(', ')})`)
  }
}
