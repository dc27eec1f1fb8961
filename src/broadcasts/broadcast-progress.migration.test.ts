// Migration 0007 on a database with broadcasts already sent: failures by
// reason and the push service breakdown are filled in from their events, and
// a failure whose event went with an erased subscriber counts as gone.
// Runs on a database of its own migrated up to 0006 first.
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

it('fills failures by reason and the push service breakdown of existing broadcasts from their events', async () => {
  const all = readMigrations()
  expect(all.map((m) => m.name)).toContain('0007_broadcast_progress.sql')
  await migrate(db, all.filter((m) => m.id < 7))

  await db.query(`INSERT INTO projects (id, name, plan, vapid_public, vapid_private) VALUES ('prj_a', 'p', 'free', 'x', 'y')`)
  const subscribers: Array<[string, string]> = [
    ['sub_fcm1', 'https://fcm.googleapis.com/fcm/send/1'],
    ['sub_fcm2', 'https://fcm.googleapis.com/fcm/send/2'],
    ['sub_moz1', 'https://updates.push.services.mozilla.com/wpush/v2/1'],
    ['sub_moz2', 'https://updates.push.services.mozilla.com/wpush/v2/2'],
    ['sub_app1', 'https://web.push.apple.com/1'],
    ['sub_oth1', 'https://push.example.net/1'],
    ['sub_erased', 'https://fcm.googleapis.com/fcm/send/3'],
  ]
  for (const [id, endpoint] of subscribers) {
    await db.query(`INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth) VALUES ($1, 'prj_a', $2, 'k', 'a')`, [id, endpoint])
  }
  for (const [id, failed] of [['bdc_sent', 4], ['bdc_quiet', 0], ['bdc_gone_all', 2]] as const) {
    await db.query(
      `INSERT INTO broadcasts (id, project_id, status, target, title, body, url, ttl, urgency, audience, delivered, failed)
       VALUES ($1, 'prj_a', 'sent', '{"type":"all"}', 't', 'b', '/', 60, 'normal', $2, $3, $4)`,
      [id, id === 'bdc_sent' ? 8 : failed, id === 'bdc_sent' ? 4 : 0, failed],
    )
  }
  const events: Array<[string, string, string, string | null]> = [
    ['bdc_sent', 'sub_fcm1', 'delivered', null],
    ['bdc_sent', 'sub_moz1', 'delivered', null],
    ['bdc_sent', 'sub_app1', 'delivered', null],
    ['bdc_sent', 'sub_oth1', 'delivered', null],
    ['bdc_sent', 'sub_fcm2', 'failed', '{"reason": "gone", "status": 410}'],
    ['bdc_sent', 'sub_moz2', 'failed', '{"reason": "unreachable", "status": 503}'],
    ['bdc_sent', 'sub_oth1', 'failed', '{"reason": "rejected", "status": 400}'],
    ['bdc_sent', 'sub_erased', 'failed', '{"reason": "rejected", "status": 403}'],
    ['bdc_sent', 'sub_fcm1', 'clicked', null],
    ['bdc_gone_all', 'sub_erased', 'failed', '{"reason": "unreachable", "status": null}'],
  ]
  for (const [i, [broadcast, subscriber, type, meta]] of events.entries()) {
    await db.query(`INSERT INTO events (id, project_id, broadcast_id, subscriber_id, type, meta) VALUES ($1, 'prj_a', $2, $3, $4, $5)`, [
      `evt_${i}`,
      broadcast,
      subscriber,
      type,
      meta,
    ])
  }
  // Erasure takes the subscriber's events with it.
  await db.query(`DELETE FROM subscribers WHERE id = 'sub_erased'`)

  expect(await migrate(db)).toEqual(all.filter((m) => m.id >= 7).map((m) => m.name))
  const rows = await db.query(
    `SELECT id, retrying, failed_gone, failed_rejected, failed_unreachable, fcm_delivered, fcm_failed, mozilla_delivered, mozilla_failed,
            apple_delivered, apple_failed, wns_delivered, wns_failed, other_delivered, other_failed, last_error_at
       FROM broadcasts ORDER BY id`,
  )
  const zero = { retrying: 0, fcm_delivered: 0, fcm_failed: 0, mozilla_delivered: 0, mozilla_failed: 0, apple_delivered: 0, apple_failed: 0, wns_delivered: 0, wns_failed: 0, other_delivered: 0, other_failed: 0, last_error_at: null }
  expect(rows.rows).toEqual([
    // Both failures went with the erased subscriber: gone.
    { id: 'bdc_gone_all', ...zero, failed_gone: 2, failed_rejected: 0, failed_unreachable: 0 },
    { id: 'bdc_quiet', ...zero, failed_gone: 0, failed_rejected: 0, failed_unreachable: 0 },
    {
      id: 'bdc_sent',
      ...zero,
      // 4 failed: gone (fcm2), unreachable (moz2), rejected (oth1), and the erased one's rejected, now gone.
      failed_gone: 2,
      failed_rejected: 1,
      failed_unreachable: 1,
      fcm_delivered: 1,
      fcm_failed: 1,
      mozilla_delivered: 1,
      mozilla_failed: 1,
      apple_delivered: 1,
      other_delivered: 1,
      other_failed: 1,
    },
  ])
})
