// POST /v1/broadcasts/:id/stop racing a fan-out to a slow local push service
// on two workers: two worker processes on PostgreSQL (`serve --role worker`,
// as in workers.test.ts), two job workers in this process on the embedded
// database (which lives inside one process). Once the stop has answered, only
// the batches already past their last status check may still push; every
// push that left is counted once, and nothing moves afterwards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../../test/support/app.ts'
import { testDbMode } from '../../test/support/database.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { bulkSubscribe, send, sleep } from '../../test/support/delivery.ts'
import { startWorkerProcess, type WorkerProcess } from '../../test/support/worker-process.ts'
import { createWorker, type BackgroundWorker } from '../worker.ts'
import { jobsOf, pollView, pushUsage, view } from './progress.fixtures.ts'

const AUDIENCE = 1000
const BATCH = 20
const CONCURRENCY = 2
const WORKERS = 2
/** The most pushes that can be past their batch's status check at once: every batch slot of every worker. */
const IN_FLIGHT = WORKERS * CONCURRENCY * BATCH
const env = {
  HERALD_FANOUT_BATCH_SIZE: String(BATCH),
  HERALD_WORKER_CONCURRENCY: String(CONCURRENCY),
  HERALD_ENCRYPT_THREADS: '1',
  HERALD_SCHEDULER_INTERVAL_MS: '100',
  HERALD_JOB_LEASE_MS: '5000',
  // 'batch sent' lines, which tell which worker process sent which batch, are debug lines.
  HERALD_LOG_LEVEL: 'debug',
}

describe('stopping a fan-out that two workers share', () => {
  let t: TestApp
  let push: PushService
  const processes: WorkerProcess[] = []
  let second: BackgroundWorker | null = null

  beforeAll(async () => {
    // 150 ms per answer: 1000 pushes in batches of 20 on four batch slots take well over a second.
    push = await startPushService({ delayMs: 150 })
    if (testDbMode() === 'postgres') {
      t = await createTestApp(env)
      processes.push(startWorkerProcess(t.database.url!, env), startWorkerProcess(t.database.url!, env))
      await Promise.all(processes.map((p) => p.ready))
    } else {
      t = await createTestApp(env, { worker: true })
      second = createWorker(t.ctx)
      await second.start()
    }
  }, 60_000)
  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill()))
    await second?.stop()
    await t?.close()
    await push?.close()
  })

  it('no push starts after the stop beyond those in flight; every push that left is counted; it stays canceled with stable counts', async () => {
    const project = await t.project({ plan: 'max' })
    await bulkSubscribe(t.database.db, project.id, push, AUDIENCE)
    const id = await send(t, project, { target: { type: 'all' }, notification: { title: 'Stop', body: 'me' } })

    // Every view on the way adds up (pollView checks each).
    await pollView(t, project, id, () => push.count >= 100)
    const res = await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${id}/stop`, headers: project.auth })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    const requestsAtStop = push.requests
    expect((await view(t, project, id)).status).toBe('canceled')

    // The batches in flight land and are recorded with their job's end; the jobs left find the broadcast canceled and end.
    for (let waited = 0; (await jobsOf(t.database.db, id)) > 0; waited += 50) {
      if (waited > 30_000) throw new Error('jobs of the stopped broadcast are still queued')
      await sleep(50)
    }
    const { last } = await pollView(t, project, id, () => true)
    expect(last.delivered + last.failed + last.retrying).toBe(push.requests)
    expect(push.requests - requestsAtStop).toBeLessThanOrEqual(IN_FLIGHT)
    expect(last).toMatchObject({ status: 'canceled', audience: AUDIENCE, failed: 0, retrying: 0, next_attempt_at: null })
    expect(last.delivered).toBe(push.count)
    expect(last.pending).toBe(AUDIENCE - last.delivered)
    expect(last.pending).toBeGreaterThan(0)
    // Each subscriber pushed at most once, and each push that left counted once (in the subscribers' health too).
    const perSubscription = new Map<string, number>()
    for (const r of push.received) perSubscription.set(r.subscriptionId, (perSubscription.get(r.subscriptionId) ?? 0) + 1)
    expect([...perSubscription.values()].every((n) => n === 1)).toBe(true)
    const health = await t.database.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM subscriber_health WHERE project_id = $1 AND last_delivered_at IS NOT NULL',
      [project.id],
    )
    expect(health.rows[0].n).toBe(last.delivered)
    // The month counts what was pushed, not the audience.
    expect(await pushUsage(t.database.db, project.id)).toBe(last.delivered)

    // Nothing moves afterwards: several scheduler intervals later, no push and the same counts.
    const requestsSettled = push.requests
    expect(requestsSettled).toBe(last.delivered)
    await sleep(1000)
    expect(push.requests).toBe(requestsSettled)
    expect(await view(t, project, id)).toEqual(last)
    const again = await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${id}/stop`, headers: project.auth })
    expect(again.statusCode).toBe(409)
    expect(again.json().error.code).toBe('broadcast_not_stoppable')

    if (processes.length > 0) {
      // Both worker processes had sent batches of it before the stop.
      const batchesOf = (w: WorkerProcess) => w.logs.filter((l) => l.msg === 'batch sent' && l.broadcast_id === id).length
      expect(processes.map(batchesOf).every((n) => n > 0)).toBe(true)
    }
  }, 120_000)
})
