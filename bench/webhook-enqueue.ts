// Micro-benchmark of the webhook half of recording a fan-out's events: 500
// delivered events of a project with no webhook endpoint (the common case),
// passed to enqueueDeliveriesForEventsOfProjects, against the single joined
// INSERT it ran before it first looked whether the project has an endpoint.
// Issue 14; docs/performance.md.
// Run: npx tsx bench/webhook-enqueue.ts   (DATABASE_URL set: also on that server, in a scratch database)
//
// Prints CPU of this process per call (median of 10 rounds of 40 calls, the
// two forms alternating): on the embedded database that is the main thread's
// time; on a server, only the client's share.
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { openDatabase, type Queryable } from '../src/platform/db/database.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { newId } from '../src/platform/ids.ts'
import { enqueueDeliveriesForEventsOfProjects, type EventRef } from '../src/webhooks/webhook-deliveries.store.ts'

type Events = Array<EventRef & { project_id: string }>

/** The statement as it was: every event passed to a join that finds no endpoint. */
async function joinAlone(q: Queryable, events: Events): Promise<void> {
  await q.query(
    `WITH inserted AS (
       INSERT INTO webhook_deliveries (webhook_id, event_id)
       SELECT w.id, e.id
         FROM unnest($1::text[], $2::text[], $3::text[]) AS e(id, type, project_id)
         JOIN webhooks w ON w.project_id = e.project_id AND w.status = 'active' AND e.type = ANY (w.events)
       RETURNING 1)
     SELECT count(*)::int AS n FROM inserted`,
    [events.map((e) => e.id), events.map((e) => e.type), events.map((e) => e.project_id)],
  )
}

async function scratch(serverUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `herald_bench_hooks_${randomBytes(4).toString('hex')}`
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

async function measure(label: string, serverUrl: string | null): Promise<void> {
  const place = serverUrl ? await scratch(serverUrl) : null
  const db = await openDatabase({ databaseUrl: place?.url ?? null, dataDir: null })
  try {
    await migrate(db)
    const project = newId('prj')
    await db.query(`INSERT INTO projects (id, name, plan, vapid_public, vapid_private) VALUES ($1, 'bench', 'free', 'p', 'k')`, [project])
    const events: Events = Array.from({ length: 500 }, () => ({ id: newId('evt'), type: 'delivered', project_id: project }))
    const forms: Array<[string, (q: Queryable, e: Events) => Promise<unknown>]> = [
      ['one joined INSERT (before)', joinAlone],
      ['look for endpoints first (now)', enqueueDeliveriesForEventsOfProjects],
    ]
    const perCall = new Map<string, number[]>(forms.map(([name]) => [name, []]))
    for (let round = 0; round < 10; round++) {
      for (const [name, run] of forms) {
        const before = process.cpuUsage()
        for (let i = 0; i < 40; i++) await run(db, events)
        const used = process.cpuUsage(before)
        perCall.get(name)!.push((used.user + used.system) / 40)
      }
    }
    for (const [name, values] of perCall) {
      values.sort((a, b) => a - b)
      const median = (values[4] + values[5]) / 2
      console.log(`${label.padEnd(9)} ${name.padEnd(32)} ${median.toFixed(0).padStart(6)} µs CPU per 500 events (${(median / 500).toFixed(2)} µs per event)`)
    }
  } finally {
    await db.close()
    await place?.drop()
  }
}

await measure('embedded', null)
if (process.env.DATABASE_URL) await measure('postgres', process.env.DATABASE_URL)
