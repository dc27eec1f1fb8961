// Settling the month's budget when a broadcast finishes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../test/support/database.ts'
import { createProject } from '../projects/projects.service.ts'
import { finishBroadcast } from './fanout.store.ts'

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
