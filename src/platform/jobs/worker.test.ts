import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.ts'
import { enqueue } from './queue.ts'
import { JobWorker, RetryLater, type JobHandlers } from './worker.ts'

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

async function until(check: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const start = Date.now()
  while (!(await check())) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

async function jobCount(): Promise<number> {
  return (await database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs')).rows[0].n
}

describe('JobWorker', () => {
  it('runs an enqueued job once and deletes it', async () => {
    const seen: string[] = []
    const worker = new JobWorker(database.db, {
      fanout_broadcast: async (job) => {
        seen.push(job.payload.broadcast_id)
      },
    }, { pollIntervalMs: 5000 })
    await worker.start()
    await database.db.transaction((tx) => enqueue(tx, 'fanout_broadcast', { broadcast_id: 'bdc_1' }))
    // Woken by NOTIFY, well before the 5 s poll.
    await until(async () => seen.length === 1 && (await jobCount()) === 0, 3000)
    await worker.stop()
    expect(seen).toEqual(['bdc_1'])
  })

  it('does not run a job before its run_at', async () => {
    const seen: number[] = []
    const worker = new JobWorker(database.db, { fire_broadcast: async () => void seen.push(Date.now()) }, { pollIntervalMs: 50 })
    const runAt = new Date(Date.now() + 400)
    await enqueue(database.db, 'fire_broadcast', { broadcast_id: 'bdc_2' }, { runAt })
    await worker.start()
    await until(() => seen.length === 1)
    await worker.stop()
    expect(seen[0]).toBeGreaterThanOrEqual(runAt.getTime() - 5)
  })

  it('retries a failing job with backoff and keeps the error', async () => {
    let calls = 0
    const worker = new JobWorker(database.db, {
      fanout_broadcast: async () => {
        calls++
        throw new Error('push service down')
      },
    }, { pollIntervalMs: 50 })
    await enqueue(database.db, 'fanout_broadcast', { broadcast_id: 'bdc_3' })
    await worker.start()
    await until(() => calls === 1)
    await worker.stop()
    const row = (await database.db.query<{ attempts: number; last_error: string; run_at: Date; locked_by: string | null }>('SELECT * FROM jobs')).rows[0]
    expect(row.attempts).toBe(1)
    expect(row.last_error).toBe('push service down')
    expect(row.locked_by).toBeNull()
    expect(row.run_at.getTime()).toBeGreaterThan(Date.now())
  })

  it('honours RetryLater without spending an attempt', async () => {
    let calls = 0
    const worker = new JobWorker(database.db, {
      fanout_broadcast: async () => {
        calls++
        if (calls === 1) throw new RetryLater(100)
      },
    }, { pollIntervalMs: 20 })
    await enqueue(database.db, 'fanout_broadcast', { broadcast_id: 'bdc_4' })
    await worker.start()
    await until(async () => calls === 2 && (await jobCount()) === 0)
    await worker.stop()
  })

  it('parks a job after its last attempt and reports it once', async () => {
    const gaveUp: unknown[] = []
    const worker = new JobWorker(database.db, { fanout_broadcast: async () => { throw new Error('bad') } }, {
      pollIntervalMs: 20,
      onGiveUp: async (job, err) => void gaveUp.push([job.kind, job.payload, (err as Error).message]),
    })
    await enqueue(database.db, 'fanout_broadcast', { broadcast_id: 'bdc_5' }, { maxAttempts: 1 })
    await worker.start()
    await until(async () => (await database.db.query("SELECT 1 FROM jobs WHERE locked_until = 'infinity'")).rows.length === 1)
    await until(() => gaveUp.length === 1)
    await worker.stop()
    expect(gaveUp).toEqual([['fanout_broadcast', { broadcast_id: 'bdc_5' }, 'bad']])
  })

  it('reclaims a job whose worker stopped renewing its lease', async () => {
    // A job claimed by a worker that then died: locked, lease already lapsed.
    await database.db.query(
      `INSERT INTO jobs (kind, payload, locked_by, locked_until, attempts) VALUES ('fanout_broadcast', '{"broadcast_id":"bdc_6"}', 'dead-worker', now() - interval '1 second', 1)`,
    )
    const seen: number[] = []
    const worker = new JobWorker(database.db, { fanout_broadcast: async (job) => void seen.push(job.attempts) }, { pollIntervalMs: 20 })
    await worker.start()
    await until(() => seen.length === 1)
    await worker.stop()
    expect(seen).toEqual([2])
  })

  it('never gives one job to two workers at once', async () => {
    const runs = new Map<string, number>()
    const handlers: JobHandlers = {
      fanout_broadcast: async (job) => {
        runs.set(job.payload.broadcast_id, (runs.get(job.payload.broadcast_id) ?? 0) + 1)
        await new Promise((resolve) => setTimeout(resolve, 5))
      },
    }
    const workers = [1, 2, 3].map(() => new JobWorker(database.db, handlers, { pollIntervalMs: 10, concurrency: 3 }))
    for (let i = 0; i < 60; i++) await enqueue(database.db, 'fanout_broadcast', { broadcast_id: `bdc_${i}` })
    await Promise.all(workers.map((w) => w.start()))
    await until(async () => (await jobCount()) === 0, 10_000)
    await Promise.all(workers.map((w) => w.stop()))
    expect(runs.size).toBe(60)
    expect([...runs.values()].every((n) => n === 1)).toBe(true)
  })
})
