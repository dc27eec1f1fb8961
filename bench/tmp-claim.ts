import pg from 'pg'
import { openDatabase } from '../src/platform/db/database.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { newId } from '../src/platform/ids.ts'
import { createProject } from '../src/projects/projects.service.ts'
import { claimDueDeliveries, completeDeliveries, enqueueDeliveriesForEvents } from '../src/webhooks/webhook-deliveries.store.ts'
const admin = new pg.Client({ connectionString: process.env.DATABASE_URL }); await admin.connect()
await admin.query('DROP DATABASE IF EXISTS herald_tmp_claim WITH (FORCE)'); await admin.query('CREATE DATABASE herald_tmp_claim'); await admin.end()
const db = await openDatabase({ databaseUrl: 'postgres://postgres@127.0.0.1:5432/herald_tmp_claim', dataDir: null })
await migrate(db)
const project = (await createProject(db, { name: 'x', plan: 'max' })).project.id
const bdc = newId('bdc')
await db.query(`INSERT INTO broadcasts (id, project_id, status, target, title, body, url, ttl, urgency) VALUES ($1, $2, 'sent', '{"type":"all"}', 't', 'b', '/', 60, 'normal')`, [bdc, project])
await db.query(`INSERT INTO webhooks (id, project_id, url, events, secret) VALUES ($1, $2, 'https://x/', '{delivered}', 's')`, [newId('whk'), project])
for (let i = 0; i < 40; i++) {
  const ids = Array.from({ length: 500 }, () => newId('evt'))
  await db.transaction(async (tx) => {
    await tx.query(`INSERT INTO events (id, project_id, broadcast_id, type) SELECT id, $1, $2, 'delivered' FROM unnest($3::text[]) AS e(id)`, [project, bdc, ids])
    await enqueueDeliveriesForEvents(tx, project, ids.map((id) => ({ id, type: 'delivered' })))
  })
}
const opts = { limit: 64, perEndpoint: 64, room: new Map(), leaseMs: 60000, workerId: 'w' }
let total = 0
for (let i = 0; i < 100; i++) {
  const t0 = performance.now()
  const c = await claimDueDeliveries(db, opts)
  total += performance.now() - t0
  await completeDeliveries(db, c.map((d) => d.id), 'w')
  if (i % 25 === 0) console.log(i, (performance.now() - t0).toFixed(1), 'ms')
}
console.log('avg claim', (total / 100).toFixed(1), 'ms')
const r = await db.query(`EXPLAIN (ANALYZE, BUFFERS) WITH room AS (
       SELECT w.id, 64 AS free FROM webhooks w WHERE w.status = 'active'),
     picked AS (
       SELECT due.id FROM room
        CROSS JOIN LATERAL (
          SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
           WHERE d.webhook_id = room.id AND d.status = 'pending' AND d.next_attempt_at <= now()
           ORDER BY d.next_attempt_at, d.id
           LIMIT room.free
           FOR UPDATE SKIP LOCKED) due
        ORDER BY due.next_attempt_at, due.id
        LIMIT 64)
     UPDATE webhook_deliveries d
        SET attempts = d.attempts + 1, locked_by = 'w', next_attempt_at = now() + interval '60 seconds'
       FROM picked, webhooks w, events e
      WHERE d.id = picked.id AND w.id = d.webhook_id AND e.id = d.event_id
     RETURNING d.id`)
console.log(r.rows.map((x: any) => x['QUERY PLAN']).join('\n'))
await db.close()
