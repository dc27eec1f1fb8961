// Rolling upgrades (issue 27, docs/upgrades.md): a worker claims only the job
// kinds it has handlers for and the payload versions it understands. A job
// written by a newer release is left alone by an older worker (not claimed,
// no attempt counted, not parked, no error kept) and taken by a worker that
// knows it; a newer worker takes older payloads. On both storage modes.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.ts'
import { enqueue } from './queue.ts'
import { JobWorker, type Job, type JobHandlers } from './worker.ts'

let database: TestDatabase
beforeAll(async () => {
  database = await createTestDatabase()
})
afterAll(async () => {
  await database.drop()
})
beforeEach(async () => {
  await database.db.query('DELETE FROM jobs')
})

async function until(check: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const start = Date.now()
  while (!(await check())) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

interface JobState {
  attempts: number
  locked_by: string | null
  locked_until: string | null
  last_error: string | null
}

async function jobState(id: number): Promise<JobState | undefined> {
  const rows = await database.db.query<JobState>('SELECT attempts, locked_by, locked_until, last_error FROM jobs WHERE id = $1', [id])
  return rows.rows[0]
}

const UNTOUCHED: JobState = { attempts: 0, locked_by: null, locked_until: null, last_error: null }

describe('jobs a worker does not know', () => {
  it('a kind without a handler waits, untouched, for a worker that has one', async () => {
    // A kind this release does not have, as a newer release's API would write it.
    const inserted = await database.db.query<{ id: number }>(`INSERT INTO jobs (kind, payload) VALUES ('kind_of_a_newer_release', '{"x":1}') RETURNING id`)
    const unknown = Number(inserted.rows[0].id)
    const seen: string[] = []
    const older = new JobWorker(database.db, { fire_broadcast: async (job) => void seen.push(job.payload.broadcast_id) }, { pollIntervalMs: 20 })
    await older.start()
    await enqueue(database.db, 'fire_broadcast', { broadcast_id: 'bdc_known' })
    await until(() => seen.length === 1)
    // Several polls later the unknown job is still as it was written.
    await new Promise((resolve) => setTimeout(resolve, 300))
    await older.stop()
    expect(await jobState(unknown)).toEqual(UNTOUCHED)

    const payloads: unknown[] = []
    const newer = new JobWorker(database.db, { kind_of_a_newer_release: async (job: Job) => void payloads.push(job.payload) } as unknown as JobHandlers, { pollIntervalMs: 20 })
    await newer.start()
    await until(async () => (await jobState(unknown)) === undefined)
    await newer.stop()
    expect(payloads).toEqual([{ x: 1 }])
  })

  it('a newer payload version waits for a worker that understands it; that worker takes older versions too', async () => {
    const v2 = await enqueue(database.db, 'fire_broadcast', { broadcast_id: 'bdc_v2' }, { payloadVersion: 2 })
    const seen: string[] = []
    const older = new JobWorker(database.db, { fire_broadcast: async (job) => void seen.push(job.payload.broadcast_id) }, { pollIntervalMs: 20 })
    await older.start()
    await enqueue(database.db, 'fire_broadcast', { broadcast_id: 'bdc_v1' })
    await until(() => seen.length === 1)
    await new Promise((resolve) => setTimeout(resolve, 300))
    await older.stop()
    expect(seen).toEqual(['bdc_v1'])
    expect(await jobState(v2)).toEqual(UNTOUCHED)

    const versions: Array<[string, number]> = []
    const newer = new JobWorker(
      database.db,
      { fire_broadcast: async (job) => void versions.push([job.payload.broadcast_id, job.payloadVersion]) },
      { pollIntervalMs: 20, payloadVersions: { fire_broadcast: 2 } },
    )
    await enqueue(database.db, 'fire_broadcast', { broadcast_id: 'bdc_old' })
    await newer.start()
    await until(() => versions.length === 2)
    await newer.stop()
    expect(versions.sort()).toEqual([['bdc_old', 1], ['bdc_v2', 2]])
    expect((await database.db.query('SELECT id FROM jobs')).rows).toEqual([])
  })
})
