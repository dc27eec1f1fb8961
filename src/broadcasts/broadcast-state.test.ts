// Settling the month's budget when a broadcast finishes or is stopped, and a
// stop racing the last batch.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../test/support/database.ts'
import { createProject } from '../projects/projects.service.ts'
import { addOutcomes, emptyDelta, finish as finishBroadcast, stop } from './broadcast-state.ts'

let database: TestDatabase
beforeAll(async () => {
  database = await createTestDatabase()
})
afterAll(async () => {
  await database.drop()
})

async function sendingBroadcast(reserved: number, delivered: number, failed: number): Promise<{ projectId: string; id: string }> {
  const { project } = await createProject(database.db, { name: 'p' })
  const id = `bdc_${Math.random().toString(36).slice(2)}`
  await database.db.query(
    `INSERT INTO broadcasts (id, project_id, status, target, title, body, url, ttl, urgency, audience, reserved, delivered, failed, started_at)
     VALUES ($1, $2, 'sending', '{"type":"all"}', 't', 'b', '/', 60, 'normal', $3, $3, $4, $5, now())`,
    [id, project.id, reserved, delivered, failed],
  )
  await database.db.query(`INSERT INTO push_usage (project_id, month, pushes) VALUES ($1, date_trunc('month', now() AT TIME ZONE 'UTC')::date, $2)`, [project.id, reserved])
  return { projectId: project.id, id }
}

async function usage(projectId: string): Promise<number> {
  return (await database.db.query<{ n: number }>('SELECT sum(pushes)::int AS n FROM push_usage WHERE project_id = $1', [projectId])).rows[0].n
}

describe('finishBroadcast', () => {
  it('gives back the reservation of subscribers who left before their push', async () => {
    const { projectId, id } = await sendingBroadcast(10, 6, 1)
    await finishBroadcast(database.db, id)
    expect(await usage(projectId)).toBe(7)
    const row = (await database.db.query('SELECT status, audience, reserved, finished_at FROM broadcasts WHERE id = $1', [id])).rows[0]
    expect(row).toMatchObject({ status: 'sent', audience: 7, reserved: 7 })
  })

  it('counts subscribers who joined during the fan-out and were pushed', async () => {
    const { projectId, id } = await sendingBroadcast(5, 8, 0)
    await finishBroadcast(database.db, id)
    expect(await usage(projectId)).toBe(8)
  })

  it('does nothing to a broadcast that is not sending', async () => {
    const { projectId, id } = await sendingBroadcast(5, 5, 0)
    await database.db.query(`UPDATE broadcasts SET status = 'sent' WHERE id = $1`, [id])
    await finishBroadcast(database.db, id)
    expect(await usage(projectId)).toBe(5)
  })
})

async function row(id: string) {
  const result = await database.db.query(
    'SELECT status, audience, reserved, delivered, failed, retrying, fcm_delivered, finished_at FROM broadcasts WHERE id = $1',
    [id],
  )
  return result.rows[0]
}

/** One batch's delta: n delivered, all by FCM. */
function delivered(n: number) {
  const delta = emptyDelta()
  delta.delivered = n
  delta.byPushService.fcm = { delivered: n, failed: 0, retrying: 0 }
  return delta
}

describe('stop', () => {
  it('settles the month on the pushes attempted, retries waiting included, and keeps the counts', async () => {
    const { projectId, id } = await sendingBroadcast(10, 3, 1)
    await database.db.query('UPDATE broadcasts SET retrying = 2 WHERE id = $1', [id])
    expect(await database.db.transaction((tx) => stop(tx, projectId, id))).toBe('sending')
    expect(await row(id)).toMatchObject({ status: 'canceled', audience: 10, reserved: 6, delivered: 3, failed: 1, retrying: 2, finished_at: expect.any(Date) })
    expect(await usage(projectId)).toBe(6)
  })

  it("another project's broadcast is not found; one already over is left alone", async () => {
    const { projectId, id } = await sendingBroadcast(5, 5, 0)
    const other = await sendingBroadcast(1, 0, 0)
    expect(await database.db.transaction((tx) => stop(tx, other.projectId, id))).toBeNull()
    await finishBroadcast(database.db, id)
    expect(await database.db.transaction((tx) => stop(tx, projectId, id))).toBe('sent')
    expect(await row(id)).toMatchObject({ status: 'sent' })
    expect(await usage(projectId)).toBe(5)
  })

  it('a batch in flight at the stop is still counted, and the month takes its pushes; the broadcast stays canceled', async () => {
    const { projectId, id } = await sendingBroadcast(10, 2, 0)
    await database.db.query('UPDATE broadcasts SET pending_batches = 1, planning_done = true WHERE id = $1', [id])
    await database.db.transaction((tx) => stop(tx, projectId, id))
    expect(await usage(projectId)).toBe(2)
    // The last batch lands after the stop: it would have finished the broadcast.
    expect(await database.db.transaction((tx) => addOutcomes(tx, id, delivered(3), -1))).toBe(false)
    expect(await row(id)).toMatchObject({ status: 'canceled', audience: 10, reserved: 5, delivered: 5, fcm_delivered: 3 })
    expect(await usage(projectId)).toBe(5)
  })

  it('racing the last batch, either the stop or the finish wins, never both, and the month matches the pushes', async () => {
    for (let i = 0; i < 8; i++) {
      const { projectId, id } = await sendingBroadcast(10, 6, 0)
      await database.db.query('UPDATE broadcasts SET pending_batches = 1, planning_done = true WHERE id = $1', [id])
      const [finished, was] = await Promise.all([
        database.db.transaction((tx) => addOutcomes(tx, id, delivered(4), -1)),
        database.db.transaction((tx) => stop(tx, projectId, id)),
      ])
      const after = await row(id)
      expect(after.delivered).toBe(10)
      expect(await usage(projectId)).toBe(10)
      if (was === 'sent') {
        expect(finished).toBe(true)
        expect(after).toMatchObject({ status: 'sent', audience: 10, reserved: 10 })
      } else {
        expect(was).toBe('sending')
        expect(finished).toBe(false)
        expect(after).toMatchObject({ status: 'canceled', audience: 10, reserved: 10 })
      }
    }
  })
})
