// Webhook delivery throughput on this machine:
//
//   node --import tsx bench/webhooks.ts [--events 20000] [--endpoints 1] [--delay 0] [--storage embedded|postgres]
//
// Writes N delivered events of one broadcast the way fan-out does (one
// recordBatch-style insert and enqueueDeliveriesForEvents per 500 events),
// then starts a webhook dispatcher with the default settings and times until
// a local receiver (answering after --delay ms) has every delivery. Also
// times the enqueue statement for a project without webhooks (the common case).
// The receiver runs in this process, so the figure is a floor.
import { parseArgs } from 'node:util'
import pg from 'pg'
import pino from 'pino'
import { DEFAULT_WEBHOOK_CONCURRENCY, DEFAULT_WEBHOOK_ENDPOINT_CONCURRENCY } from '../src/platform/config.ts'
import { openDatabase, type Database } from '../src/platform/db/database.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { newId } from '../src/platform/ids.ts'
import { OutboundClient } from '../src/platform/outbound/http-client.ts'
import { createProject } from '../src/projects/projects.service.ts'
import { enqueueDeliveriesForEvents } from '../src/webhooks/webhook-deliveries.store.ts'
import { WebhookDispatcher } from '../src/webhooks/webhook-dispatcher.ts'
import { newWebhookSecret } from '../src/webhooks/webhooks.service.ts'
import { startWebhookReceiver } from '../test/support/webhook-receiver.ts'

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    endpoints: { type: 'string', default: '1' },
    delay: { type: 'string', default: '0' },
    storage: { type: 'string', default: process.env.DATABASE_URL ? 'postgres' : 'embedded' },
  },
})
const events = Number(values.events)
const endpoints = Number(values.endpoints)
const delayMs = Number(values.delay)
const BATCH = 500

async function writeEvents(db: Database, projectId: string, broadcastId: string, count: number): Promise<number> {
  const start = performance.now()
  for (let done = 0; done < count; done += BATCH) {
    const n = Math.min(BATCH, count - done)
    const ids = Array.from({ length: n }, () => newId('evt'))
    await db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO events (id, project_id, broadcast_id, type) SELECT id, $1, $2, 'delivered' FROM unnest($3::text[]) AS e(id)`,
        [projectId, broadcastId, ids],
      )
      await enqueueDeliveriesForEvents(tx, projectId, ids.map((id) => ({ id, type: 'delivered' })))
    })
  }
  return performance.now() - start
}

async function newBroadcast(db: Database, projectId: string): Promise<string> {
  const id = newId('bdc')
  await db.query(
    `INSERT INTO broadcasts (id, project_id, status, target, title, body, url, ttl, urgency) VALUES ($1, $2, 'sent', '{"type":"all"}', 't', 'b', '/', 60, 'normal')`,
    [id, projectId],
  )
  return id
}

/** On PostgreSQL: a database of its own on the DATABASE_URL server, made afresh. */
async function benchDatabaseUrl(serverUrl: string): Promise<string> {
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${BENCH_DB} WITH (FORCE)`)
  await admin.query(`CREATE DATABASE ${BENCH_DB}`)
  await admin.end()
  const url = new URL(serverUrl)
  url.pathname = `/${BENCH_DB}`
  return url.toString()
}

const BENCH_DB = 'herald_bench_webhooks'
const db = await openDatabase(
  values.storage === 'postgres'
    ? { databaseUrl: await benchDatabaseUrl(process.env.DATABASE_URL!), dataDir: null }
    : { databaseUrl: null, dataDir: null },
)
await migrate(db)
const receiver = await startWebhookReceiver()
receiver.countOnly = true

// The common case: a project without webhooks pays one index probe per batch.
const quiet = (await createProject(db, { name: 'quiet', plan: 'max' })).project.id
const quietBroadcast = await newBroadcast(db, quiet)
const quietMs = await writeEvents(db, quiet, quietBroadcast, events)

const project = (await createProject(db, { name: 'bench', plan: 'max' })).project.id
for (let i = 0; i < endpoints; i++) {
  if (delayMs) receiver.delay(`/hook-${i}`, delayMs)
  await db.query('INSERT INTO webhooks (id, project_id, url, events, secret) VALUES ($1, $2, $3, $4, $5)', [
    newId('whk'),
    project,
    `${receiver.url}/hook-${i}`,
    ['delivered'],
    newWebhookSecret(),
  ])
}
const broadcast = await newBroadcast(db, project)
const loudMs = await writeEvents(db, project, broadcast, events)
const total = events * endpoints

const client = new OutboundClient({ timeoutMs: 10_000, connectionsPerOrigin: DEFAULT_WEBHOOK_CONCURRENCY, allowPrivateAddresses: true })
const dispatcher = new WebhookDispatcher({
  db,
  log: pino({ level: 'silent' }),
  client,
  concurrency: DEFAULT_WEBHOOK_CONCURRENCY,
  perEndpoint: DEFAULT_WEBHOOK_ENDPOINT_CONCURRENCY,
  leaseMs: 60_000,
  pollIntervalMs: 1000,
  retryBaseMs: 5000,
  disableAfterMs: 5 * 86_400_000,
})
const start = performance.now()
await dispatcher.start()
while (receiver.count < total) await new Promise((resolve) => setTimeout(resolve, 10))
const seconds = (performance.now() - start) / 1000
// Wait until every 2xx is recorded (rows deleted).
for (;;) {
  const left = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries')
  if (left.rows[0].n === 0) break
  await new Promise((resolve) => setTimeout(resolve, 10))
}
const recordedSeconds = (performance.now() - start) / 1000
await dispatcher.stop()
await client.close()
await receiver.close()
await db.close()
if (values.storage === 'postgres') {
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${BENCH_DB} WITH (FORCE)`)
  await admin.end()
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')
console.log(`Webhooks (${values.storage}): ${fmt(events)} events × ${endpoints} endpoint(s), receiver answers after ${delayMs} ms,`)
console.log(`  concurrency ${DEFAULT_WEBHOOK_CONCURRENCY} overall, ${DEFAULT_WEBHOOK_ENDPOINT_CONCURRENCY} per endpoint`)
console.log(`  delivered: ${fmt(total / seconds)} deliveries/s (${fmt(total / recordedSeconds)}/s until every outcome was recorded)`)
console.log(
  `  event writes, ${BATCH} per transaction: ${fmt((events / quietMs) * 1000)} events/s without webhooks, ` +
    `${fmt((events / loudMs) * 1000)} events/s with ${endpoints} webhook(s) (deliveries written in the same transaction)`,
)
