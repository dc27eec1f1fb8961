// Migration 0003 on a database that already has projects and subscribers:
// the counters start from a count of the existing rows, then the triggers
// keep them. Runs on a database of its own migrated up to 0002 first.
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../test/support/database.ts'
import type { Database } from '../platform/db/database.ts'
import { migrate, readMigrations } from '../platform/db/migrate.ts'

let test: TestDatabase
let db: Database

beforeAll(async () => {
  // Not cloned from the test template, which has every migration applied.
  test = await createTestDatabase({ migrated: false })
  db = test.db
})
afterAll(async () => {
  await test?.drop()
})

async function counters(): Promise<Record<string, number>> {
  const result = await db.query<{ project_id: string; n: number }>('SELECT project_id, active_subscribers AS n FROM project_counters')
  return Object.fromEntries(result.rows.map((r) => [r.project_id, r.n]))
}

it('backfills every project from its existing subscribers, then the triggers take over', async () => {
  const all = readMigrations()
  expect(all.map((m) => m.name)).toContain('0003_subscriber_counts.sql')
  await migrate(db, all.filter((m) => m.id < 3))

  for (const id of ['prj_a', 'prj_b', 'prj_empty']) {
    await db.query(`INSERT INTO projects (id, name, plan, vapid_public, vapid_private) VALUES ($1, 'p', 'free', 'x', 'y')`, [id])
  }
  await db.query(
    `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, status)
     SELECT 'sub_' || p || n, p, 'https://push.example/' || p || n, 'k', 'a',
            CASE WHEN n % 4 = 0 THEN 'expired' WHEN n % 4 = 1 THEN 'unsubscribed' ELSE 'active' END
       FROM unnest(ARRAY['prj_a', 'prj_b']) p, generate_series(1, CASE WHEN p = 'prj_a' THEN 40 ELSE 7 END) n`,
  )
  expect(await migrate(db)).toEqual(all.filter((m) => m.id >= 3).map((m) => m.name))
  expect(await counters()).toEqual({ prj_a: 20, prj_b: 4, prj_empty: 0 })

  await db.query(`UPDATE subscribers SET status = 'active' WHERE project_id = 'prj_b'`)
  await db.query(`DELETE FROM subscribers WHERE id = 'sub_prj_a2'`)
  await db.query(`INSERT INTO projects (id, name, plan, vapid_public, vapid_private) VALUES ('prj_new', 'p', 'free', 'x', 'y')`)
  expect(await counters()).toEqual({ prj_a: 19, prj_b: 7, prj_empty: 0, prj_new: 0 })
  await db.query('TRUNCATE subscribers CASCADE')
  expect(await counters()).toEqual({ prj_a: 0, prj_b: 0, prj_empty: 0, prj_new: 0 })
})
