// A subscriber erased while its batch's outcomes are being written: the health
// write and the events insert skip it instead of failing the batch's
// transaction on a foreign key (which would fail the job and send its whole
// slice again), and a batch never deadlocks with the erasure of a user whose
// subscribers it holds some of. PostgreSQL only: it needs a second
// connection holding the erasure open, which the embedded database (one
// connection) cannot have.
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, testDbMode, type TestDatabase } from '../../test/support/database.ts'
import { newId } from '../platform/ids.ts'
import { createProject } from '../projects/projects.service.ts'
import { recordPushHealth } from './health.store.ts'
import { recordEvents } from '../events/events.store.ts'
import type { Queryable } from '../platform/db/database.ts'
import { recordBatch } from '../delivery/batch-outcomes.ts'
import { findSendingBroadcast } from '../broadcasts/broadcast-state.ts'

let database: TestDatabase
beforeAll(async () => {
  database = await createTestDatabase()
})
afterAll(async () => {
  await database.drop()
})

/** Resolves once a session of the test database waits for a row lock (the erasure's), or fails after 5 s. */
async function untilOneWaitsForALock(who: string): Promise<void> {
  for (let waited = 0; ; waited += 20) {
    const waiting = await database.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
    if (waiting.rows[0].n > 0) return
    if (waited > 5000) throw new Error(`${who} never waited for the erasure`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Runs `write` for two subscribers, one of which another connection erases meanwhile (committed once `write` waits for it). */
async function whileErasing(write: (q: Queryable, projectId: string, erased: string, kept: string) => Promise<unknown>) {
  const { project } = await createProject(database.db, { name: 'p' })
  const [erased, kept] = [newId('sub'), newId('sub')].sort()
  await database.db.query(
    `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth)
     SELECT id, $1, 'https://push.example/' || id, 'k', 'a' FROM unnest($2::text[]) AS s(id)`,
    [project.id, [erased, kept]],
  )
  const eraser = new pg.Client({ connectionString: database.url! })
  await eraser.connect()
  try {
    await eraser.query('BEGIN')
    await eraser.query('DELETE FROM subscribers WHERE id = $1', [erased])
    // The batch's write reaches the erased row and waits for the erasure's lock.
    const batch = database.db.transaction((tx) => write(tx, project.id, erased, kept))
    batch.catch(() => undefined) // awaited below; a throw of the wait loop must not leave it unhandled
    await untilOneWaitsForALock('the write')
    await eraser.query('COMMIT')
    await batch
  } finally {
    await eraser.end()
  }
  return { projectId: project.id, kept }
}

describe.skipIf(testDbMode() !== 'postgres')('a batch\'s outcomes and an erasure at the same time', () => {
  it('the health write skips a subscriber whose erasure commits while it waits; the others are recorded', async () => {
    const { projectId, kept } = await whileErasing((q, projectId, erased, kept) =>
      recordPushHealth(q, projectId, [
        { subscriberId: erased, delivered: true, gone: false },
        { subscriberId: kept, delivered: true, gone: false },
      ]),
    )
    const health = await database.db.query<{ subscriber_id: string; delivered: boolean }>(
      'SELECT subscriber_id, last_delivered_at IS NOT NULL AS delivered FROM subscriber_health WHERE project_id = $1',
      [projectId],
    )
    expect(health.rows).toEqual([{ subscriber_id: kept, delivered: true }])
  })

  it('so does the events insert (a failed push\'s row)', async () => {
    const broadcastId = newId('bdc')
    const { projectId, kept } = await whileErasing((q, projectId, erased, kept) =>
      recordEvents(
        q,
        [erased, kept].map((subscriberId) => ({
          id: newId('evt'), project_id: projectId, broadcast_id: broadcastId, subscriber_id: subscriberId, external_id: null, type: 'failed' as const, meta: { reason: 'gone', status: 410 },
        })),
        { ownBroadcasts: true },
      ),
    )
    const events = await database.db.query<{ subscriber_id: string }>('SELECT subscriber_id FROM events WHERE project_id = $1', [projectId])
    expect(events.rows).toEqual([{ subscriber_id: kept }])
  })

  it('a batch holding one subscriber of a user and waiting for another does not deadlock with that user\'s erasure', async () => {
    // A user with two devices in one batch: the first delivered (health only), the second failed (an events
    // row and health). The erasure deletes both, in id order, in one statement.
    const { project } = await createProject(database.db, { name: 'p' })
    const [first, second] = [newId('sub'), newId('sub')].sort()
    await database.db.query(
      `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, external_id)
       SELECT id, $1, 'https://push.example/' || id, 'k', 'a', 'user-1' FROM unnest($2::text[]) AS s(id)`,
      [project.id, [first, second]],
    )
    const broadcastId = newId('bdc')
    await database.db.query(
      `INSERT INTO broadcasts (id, project_id, status, target, title, body, url, ttl, urgency, audience, reserved, started_at, pending_batches, planning_done)
       VALUES ($1, $2, 'sending', '{"type":"all"}', 't', 'b', '/', 60, 'normal', 2, 2, now(), 1, true)`,
      [broadcastId, project.id],
    )
    const broadcast = (await findSendingBroadcast(database.db, broadcastId))!
    const eraser = new pg.Client({ connectionString: database.url! })
    await eraser.connect()
    try {
      // The erasure has reached the first device (as a DELETE in id order would) when the batch records.
      await eraser.query('BEGIN')
      await eraser.query('DELETE FROM subscribers WHERE id = $1', [first])
      const batch = database.db.transaction((tx) =>
        recordBatch(tx, broadcast, {
          delivered: [{ subscriberId: first, externalId: 'user-1' }],
          failed: [{ subscriberId: second, externalId: 'user-1', reason: 'rejected', status: 400 }],
        }, -1),
      )
      batch.catch(() => undefined)
      await untilOneWaitsForALock('the batch')
      // The rest of the erasure: with the batch holding the second device (and waiting for the first), a deadlock.
      await eraser.query('DELETE FROM subscribers WHERE id = $1', [second])
      await eraser.query('COMMIT')
      expect(await batch).toBe(true)
    } finally {
      await eraser.end()
    }
    const left = await database.db.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM events WHERE broadcast_id = $1)::int + (SELECT count(*) FROM subscriber_health WHERE project_id = $2)::int AS n`,
      [broadcastId, project.id],
    )
    expect(left.rows[0].n).toBe(0)
    const counts = await database.db.query('SELECT status, delivered, failed FROM broadcasts WHERE id = $1', [broadcastId])
    expect(counts.rows[0]).toEqual({ status: 'sent', delivered: 1, failed: 1 })
  })
})
