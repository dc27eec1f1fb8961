// Worker processes on one PostgreSQL: a worker killed with SIGKILL mid
// fan-out loses nothing, and two workers share a broadcast without sending
// any batch twice. PostgreSQL only: the embedded database is one process's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { testDbMode } from '../../test/support/database.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { bulkSubscribe, send, waitForBroadcast } from '../../test/support/delivery.ts'
import { startWorkerProcess, type WorkerProcess } from '../../test/support/worker-process.ts'

const BATCH = 100
const CONCURRENCY = 2
const workerEnv = {
  HERALD_FANOUT_BATCH_SIZE: String(BATCH),
  HERALD_WORKER_CONCURRENCY: String(CONCURRENCY),
  HERALD_JOB_LEASE_MS: '1500',
  HERALD_SCHEDULER_INTERVAL_MS: '200',
  HERALD_ENCRYPT_THREADS: '1',
  // 'batch sent' lines, which tell which process sent which batch, are debug lines.
  HERALD_LOG_LEVEL: 'debug',
}

describe.runIf(testDbMode() === 'postgres')('worker processes on PostgreSQL', () => {
  let t: TestApp
  let push: PushService
  let project: TestProject
  const workers: WorkerProcess[] = []

  beforeAll(async () => {
    // Each push takes 20 ms to be answered, so a fan-out lasts long enough to interrupt.
    push = await startPushService({ delayMs: 20 })
    t = await createTestApp()
  })
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill('SIGKILL')))
    await t.close()
    await push.close()
  })

  function perSubscription(): Map<string, number> {
    const counts = new Map<string, number>()
    for (const r of push.received) counts.set(r.subscriptionId, (counts.get(r.subscriptionId) ?? 0) + 1)
    return counts
  }

  it('completes a broadcast after its worker is killed with SIGKILL mid fan-out, counting each subscriber once', async () => {
    push.reset()
    project = await t.project({ plan: 'max' })
    const browsers = await bulkSubscribe(t.database.db, project.id, push, 3000)
    const first = startWorkerProcess(t.database.url!, workerEnv)
    workers.push(first)
    await first.ready
    const id = await send(t, project, { target: { type: 'all' }, notification: { title: 'Crash', body: 'test' } })
    await push.waitForCount(600, 30_000)
    await first.kill('SIGKILL')
    const pushedBeforeKill = push.count
    expect(pushedBeforeKill).toBeLessThan(3000)

    const second = startWorkerProcess(t.database.url!, workerEnv)
    workers.push(second)
    const done = await waitForBroadcast(t, project, id, undefined, 60_000)
    expect(done).toMatchObject({ status: 'sent', audience: 3000, delivered: 3000, failed: 0 })

    const counts = perSubscription()
    expect(counts.size).toBe(3000)
    expect(browsers.every((b) => counts.has(new URL(b.endpoint).pathname.slice('/push/'.length)))).toBe(true)
    // Only the batches in flight at the kill may have been pushed twice.
    const duplicates = [...counts.values()].filter((n) => n > 1).length
    expect(duplicates).toBeLessThanOrEqual(BATCH * CONCURRENCY)
    // Recorded once per subscriber: the counts above, and each subscriber's health.
    const health = await t.database.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM subscriber_health WHERE project_id = $1 AND last_delivered_at IS NOT NULL',
      [project.id],
    )
    expect(health.rows[0].n).toBe(3000)
    const leftover = await t.database.db.query(`SELECT 1 FROM jobs WHERE payload ->> 'broadcast_id' = $1`, [id])
    expect(leftover.rows).toHaveLength(0)
    await second.kill()
  }, 120_000)

  it('shares one broadcast between two workers without sending any batch twice', async () => {
    push.reset()
    project = await t.project({ plan: 'max' })
    await bulkSubscribe(t.database.db, project.id, push, 3000)
    const pair = [startWorkerProcess(t.database.url!, workerEnv), startWorkerProcess(t.database.url!, workerEnv)]
    workers.push(...pair)
    await Promise.all(pair.map((w) => w.ready))
    const id = await send(t, project, { target: { type: 'all' }, notification: { title: 'Shared', body: 'test' } })
    const done = await waitForBroadcast(t, project, id, undefined, 60_000)
    expect(done).toMatchObject({ status: 'sent', delivered: 3000, failed: 0 })

    const counts = perSubscription()
    expect(counts.size).toBe(3000)
    expect([...counts.values()].every((n) => n === 1)).toBe(true)
    // Both processes sent batches of this broadcast.
    // Logs reach the pipe a little after the batch commits.
    const batchesOf = (w: WorkerProcess) => w.logs.filter((l) => l.msg === 'batch sent' && l.broadcast_id === id).length
    for (let waited = 0; batchesOf(pair[0]) + batchesOf(pair[1]) < 3000 / BATCH && waited < 5000; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const batches = pair.map(batchesOf)
    expect(batches[0]).toBeGreaterThan(0)
    expect(batches[1]).toBeGreaterThan(0)
    expect(batches[0] + batches[1]).toBe(3000 / BATCH)
    await Promise.all(pair.map((w) => w.kill()))
  }, 120_000)
})
