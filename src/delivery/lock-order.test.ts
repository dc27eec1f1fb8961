// Transactions on a broadcast's row take their locks in one order (fanout.ts):
// batches finishing together and beacon batches on the same broadcasts never
// deadlock, and the counts stay exact.
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, testDbMode, type TestDatabase } from '../../test/support/database.ts'
import { recordBeacons, type Beacon } from '../events/events.service.ts'
import { newId } from '../platform/ids.ts'
import { createProject } from '../projects/projects.service.ts'
import { findSendingBroadcast, type SendingBroadcast } from '../broadcasts/broadcast-state.ts'
import { recordBatch } from './batch-outcomes.ts'

let database: TestDatabase
beforeAll(async () => {
  database = await createTestDatabase()
})
afterAll(async () => {
  await database.drop()
})

/** A broadcast being sent to `subscribers` new subscribers, with `batches` batch jobs outstanding and its last slice planned. */
async function sendingBroadcast(subscribers: number, batches: number): Promise<{ broadcast: SendingBroadcast; subscriberIds: string[] }> {
  const { project } = await createProject(database.db, { name: 'p' })
  const subscriberIds = Array.from({ length: subscribers }, () => newId('sub'))
  await database.db.query(
    `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth)
     SELECT id, $1, 'https://push.example/' || id, 'k', 'a' FROM unnest($2::text[]) AS s(id)`,
    [project.id, subscriberIds],
  )
  const id = newId('bdc')
  await database.db.query(
    `INSERT INTO broadcasts (id, project_id, status, target, title, body, url, ttl, urgency, audience, reserved, started_at, pending_batches, planning_done)
     VALUES ($1, $2, 'sending', '{"type":"all"}', 't', 'b', '/', 60, 'normal', $3, $3, now(), $4, true)`,
    [id, project.id, subscribers, batches],
  )
  const broadcast = await findSendingBroadcast(database.db, id)
  return { broadcast: broadcast!, subscriberIds }
}

async function counts(id: string): Promise<Record<string, unknown>> {
  const result = await database.db.query(
    'SELECT status, audience, delivered, failed, clicked, dismissed, pending_batches FROM broadcasts WHERE id = $1',
    [id],
  )
  return result.rows[0]
}

describe.skipIf(testDbMode() !== 'postgres')('lock order on PostgreSQL', () => {
  it('the last batch finishes its broadcast while another transaction has inserted an event of it and then bumps its counts', async () => {
    const { broadcast, subscriberIds } = await sendingBroadcast(1, 1)
    // Another writer of this broadcast, half-way: its event is in (the foreign
    // key holds a key-share lock on the broadcast row), its count update comes
    // next. A beacon batch does this, and so does a second run of a batch.
    const other = new pg.Client({ connectionString: database.url! })
    await other.connect()
    try {
      await other.query('BEGIN')
      await other.query(`INSERT INTO events (id, project_id, broadcast_id, type) VALUES ($1, $2, $3, 'clicked')`, [
        newId('evt'),
        broadcast.project_id,
        broadcast.id,
      ])
      const last = database.db.transaction((tx) =>
        recordBatch(tx, broadcast, { delivered: [{ subscriberId: subscriberIds[0], externalId: null }], failed: [] }, -1),
      )
      const lastSettled = last.then(
        (finished) => ({ finished, error: null }),
        (error: unknown) => ({ finished: false, error }),
      )
      // Give the last batch time to reach its lock on the broadcast row.
      await new Promise((resolve) => setTimeout(resolve, 300))
      const bump = other.query('UPDATE broadcasts SET clicked = clicked + 1 WHERE id = $1', [broadcast.id]).then(
        () => null,
        (error: unknown) => error,
      )
      // Neither waits for the other in a circle: no "deadlock detected" (40P01) on either side.
      expect(await lastSettled).toEqual({ finished: true, error: null })
      expect(await bump).toBeNull()
      await other.query('COMMIT')
    } finally {
      await other.query('ROLLBACK').catch(() => undefined)
      await other.end()
    }
    expect(await counts(broadcast.id)).toMatchObject({ status: 'sent', audience: 1, delivered: 1, clicked: 1, pending_batches: 0 })
  })
})

describe('concurrent batches and beacons', () => {
  it('batches of one broadcast and beacon batches over two broadcasts, all at once: no deadlock, exact counts, finished once', async () => {
    const BATCHES = 12
    const PER_BATCH = 10
    const { broadcast, subscriberIds } = await sendingBroadcast(BATCHES * PER_BATCH, BATCHES)
    const { broadcast: other } = await sendingBroadcast(1, 1)
    const batches = Array.from({ length: BATCHES }, (_, i) => {
      const slice = subscriberIds.slice(i * PER_BATCH, (i + 1) * PER_BATCH)
      // Some pushes failed for good, a dead subscription among them: subscribers are updated too.
      const outcomes = {
        delivered: slice.slice(2).map((id) => ({ subscriberId: id, externalId: null })),
        failed: [
          { subscriberId: slice[0], externalId: null, reason: 'gone' as const, status: 410 },
          { subscriberId: slice[1], externalId: null, reason: 'rejected' as const, status: 400 },
        ],
      }
      return () => database.db.transaction((tx) => recordBatch(tx, broadcast, outcomes, -1))
    })
    // Beacon batches naming both broadcasts, in both orders.
    const beaconBatches = Array.from({ length: 20 }, (_, i) => {
      const pair: Beacon[] = [
        { project_id: broadcast.project_id, broadcast_id: broadcast.id, type: i % 2 ? 'clicked' : 'dismissed' },
        { project_id: other.project_id, broadcast_id: other.id, type: 'clicked' },
      ]
      return () => recordBeacons(database.db, i % 2 ? pair : pair.reverse())
    })
    const all = [...batches, ...beaconBatches].sort(() => Math.random() - 0.5)
    const results = await Promise.allSettled(all.map((run) => run()))
    expect(results.filter((r) => r.status === 'rejected')).toEqual([])
    const finished = results.filter((r) => r.status === 'fulfilled' && r.value === true)
    expect(finished).toHaveLength(1)
    expect(await counts(broadcast.id)).toMatchObject({
      status: 'sent',
      audience: BATCHES * PER_BATCH,
      delivered: BATCHES * (PER_BATCH - 2),
      failed: BATCHES * 2,
      clicked: 10,
      dismissed: 10,
      pending_batches: 0,
    })
    expect(await counts(other.id)).toMatchObject({ status: 'sending', clicked: 20 })
    // The hourly rollup (issue 25), taken by every one of these transactions, counted exactly too.
    const stats = async (projectId: string) => (await database.db.query(
      `SELECT sum(sent)::int AS sent, sum(delivered)::int AS delivered, sum(failed_gone)::int AS gone, sum(failed_rejected)::int AS rejected,
              sum(clicked)::int AS clicked, sum(dismissed)::int AS dismissed, sum(lost_expired)::int AS expired
         FROM stats_hourly WHERE project_id = $1`,
      [projectId],
    )).rows[0]
    expect(await stats(broadcast.project_id)).toEqual({ sent: BATCHES * PER_BATCH, delivered: BATCHES * (PER_BATCH - 2), gone: BATCHES, rejected: BATCHES, clicked: 10, dismissed: 10, expired: BATCHES })
    expect(await stats(other.project_id)).toMatchObject({ clicked: 20, sent: 0 })
  })
})
