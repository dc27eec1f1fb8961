// Throttled sends (issue 12): throttle_per_minute on POST /v1/send spreads a
// broadcast's pushes at that rate across two workers, retries included, and
// a scheduled broadcast keeps it when it fires; the dry run and the broadcast
// view show it. Measured by the times the local push service recorded the
// pushes at. Rates of 600 and 120 a minute (10 and 2 pushes a second) keep it
// to a few seconds: a batch is a second's worth of pushes.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { testDbMode } from '../../test/support/database.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { getBroadcast, send, subscribeBrowser, waitForBroadcast, type Browser } from '../../test/support/delivery.ts'
import { startWorkerProcess, type WorkerProcess } from '../../test/support/worker-process.ts'
import { JobWorker } from '../platform/jobs/worker.ts'
import { createDeliveryJobs, type DeliveryJobs } from './delivery-jobs.ts'

const env = { HERALD_SCHEDULER_INTERVAL_MS: '100', HERALD_ENCRYPT_THREADS: '1', HERALD_PUSH_RETRY_BASE_MS: '200' }
/**
 * How much later one push may arrive after its slot began than another after
 * its own: claim, reads, encryption and HTTP on a busy 2-core machine, and the
 * first batch of a broadcast also signs its VAPID token and opens a connection.
 * Pushes never leave before their slot (expectNeverAhead checks that with no
 * tolerance); late ones can only bunch up with the next slot's by this much.
 */
const TOLERANCE_MS = 350

let t: TestApp
let push: PushService
let project: TestProject
/** Embedded: a second job worker in this process (the first is the app's); PostgreSQL: two worker processes. */
let second: { worker: JobWorker; delivery: DeliveryJobs } | null = null
const processes: WorkerProcess[] = []

beforeAll(async () => {
  push = await startPushService()
  if (testDbMode() === 'postgres') {
    t = await createTestApp(env)
    processes.push(startWorkerProcess(t.database.url!, env), startWorkerProcess(t.database.url!, env))
    await Promise.all(processes.map((w) => w.ready))
  } else {
    t = await createTestApp(env, { worker: true })
    const delivery = createDeliveryJobs(t.ctx)
    delivery.warm()
    const worker = new JobWorker(t.ctx.db, delivery.handlers, { concurrency: 2, pollIntervalMs: 100, workerId: 'second' })
    await worker.start()
    second = { worker, delivery }
  }
}, 60_000)
afterAll(async () => {
  await Promise.all(processes.map((w) => w.kill()))
  await second?.worker.stop()
  await second?.delivery.close()
  await t.close()
  await push.close()
})
beforeEach(async () => {
  push.reset()
  project = await t.project({ plan: 'plus' })
})

const notification = { title: 'Flash sale', body: 'Slowly, please' }

async function audience(n: number): Promise<Browser[]> {
  return Promise.all(Array.from({ length: n }, () => subscribeBrowser(t, project, push)))
}

/** Every push attempt the push service saw (accepted or told to fail), in order of arrival. */
function attemptTimes(): number[] {
  return [...push.received, ...push.rejected].map((r) => r.at).sort((a, b) => a - b)
}

/**
 * Never ahead of the rate: by any time, the attempts since the fan-out
 * started are at most what the rate allows, plus the one batch whose slot
 * has just begun. Checked against started_at, which comes a little before the
 * first slot, so this holds without any tolerance for late pushes.
 */
function expectNeverAhead(times: number[], startedAt: number, perMinute: number, batch: number): void {
  const slotMs = 60_000 / perMinute
  // The database's clock and this process's: the same machine; 5 ms for rounding.
  times.forEach((at, k) => expect(at, `attempt ${k}`).toBeGreaterThanOrEqual(startedAt + (k + 1 - batch) * slotMs - 5))
}

/**
 * The rate held in every window: between any two attempts i < j, the time is at least what
 * the pushes in between take at the rate, less one batch (a slot's pushes
 * leave together at its start) and the tolerance.
 */
function expectRateHeld(times: number[], perMinute: number, batch: number): void {
  const slotMs = 60_000 / perMinute
  for (let i = 0; i < times.length; i++) {
    for (let j = i + batch; j < times.length; j++) {
      const least = (j - i + 1 - batch) * slotMs - TOLERANCE_MS
      expect(times[j] - times[i], `attempts ${i} and ${j}`).toBeGreaterThanOrEqual(least)
    }
  }
}

describe('throttle_per_minute', () => {
  it('is an integer from 60 to 600000', async () => {
    for (const bad of [59, 600_001, 60.5, '60', null]) {
      const res = await t.app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: { target: { type: 'all' }, notification, throttle_per_minute: bad } })
      expect(res.statusCode, String(bad)).toBe(400)
      expect(res.json().error.issues.map((i: { path: string }) => i.path)).toContain('throttle_per_minute')
    }
  })

  it('dry run: echoed, with the expected duration; counts as before', async () => {
    await audience(3)
    const res = await t.app.inject({
      method: 'POST', url: '/v1/send', headers: project.auth, payload: { target: { type: 'all' }, notification, throttle_per_minute: 120, dry_run: true },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ dry_run: true, audience: 3, throttle_per_minute: 120, expected_duration_ms: 1500 })
    const plain = await t.app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: { target: { type: 'all' }, notification, dry_run: true } })
    expect(plain.json()).not.toHaveProperty('throttle_per_minute')
    expect(plain.json()).not.toHaveProperty('expected_duration_ms')
  })

  it('an unthrottled broadcast shows throttle_per_minute and expected_finish_at null', async () => {
    const id = await send(t, project, { target: { type: 'all' }, notification })
    expect(await getBroadcast(t, project, id)).toMatchObject({ throttle_per_minute: null, expected_finish_at: null })
  })

  it('spreads the pushes at the rate over two workers, and shows the expected finish', async () => {
    const browsers = await audience(30)
    const before = Date.now()
    const id = await send(t, project, { target: { type: 'all' }, notification, throttle_per_minute: 600 })
    const sending = await waitForBroadcast(t, project, id, (s) => s.status === 'sending')
    expect(sending).toMatchObject({ throttle_per_minute: 600 })
    // 30 pushes at 10 a second: about 3 s from the start.
    const expected = (sending as unknown as { expected_finish_at: number }).expected_finish_at
    expect(expected).toBeGreaterThanOrEqual(before + 2_000)
    expect(expected).toBeLessThanOrEqual(Date.now() + 3_000)
    const done = await waitForBroadcast(t, project, id)
    expect(done).toMatchObject({ status: 'sent', delivered: 30, failed: 0, throttle_per_minute: 600, expected_finish_at: null })
    expect(new Set(push.received.map((r) => r.subscriptionId)).size).toBe(browsers.length)

    const times = attemptTimes()
    expect(times).toHaveLength(30)
    expectNeverAhead(times, done.started_at!, 600, 10)
    expectRateHeld(times, 600, 10)
    // No retries here, so each second's batch starts a whole slot after the one before.
    for (let i = 0; i + 10 < times.length; i++) expect(times[i + 10] - times[i], `attempts ${i} and ${i + 10}`).toBeGreaterThanOrEqual(1000 - TOLERANCE_MS)
  }, 30_000)

  it('counts retries against the rate: a retry takes a slot, and the batches after it wait', async () => {
    const browsers = await audience(20)
    // Five of the first second's pushes are answered 500 once, then accepted.
    const ids = browsers.map((b) => b.id).sort()
    for (const b of browsers.filter((b) => ids.slice(0, 5).includes(b.id))) push.fail(b.endpoint, { status: 500, times: 1 })
    const id = await send(t, project, { target: { type: 'all' }, notification, throttle_per_minute: 600 })
    const done = await waitForBroadcast(t, project, id)
    expect(done).toMatchObject({ status: 'sent', delivered: 20, failed: 0 })
    const times = attemptTimes()
    expect(times).toHaveLength(25)
    expectNeverAhead(times, done.started_at!, 600, 10)
    expectRateHeld(times, 600, 10)
    // 25 attempts in back-to-back slots of 100 ms each: the last left at least 1.5 s after the first.
    expect(times[24] - times[0]).toBeGreaterThanOrEqual(1500 - TOLERANCE_MS)
  }, 30_000)

  it('a scheduled broadcast keeps its throttle when it fires', async () => {
    await audience(6)
    const at = Date.now() + 600
    const id = await send(t, project, { target: { type: 'all' }, notification, throttle_per_minute: 120, scheduled_at: at })
    // 6 pushes at 2 a second take 3 s from the scheduled time.
    expect(await getBroadcast(t, project, id)).toMatchObject({ status: 'scheduled', throttle_per_minute: 120, expected_finish_at: at + 3000 })
    const done = await waitForBroadcast(t, project, id)
    expect(done).toMatchObject({ status: 'sent', delivered: 6 })
    const times = attemptTimes()
    expect(times[0]).toBeGreaterThanOrEqual(at)
    expectNeverAhead(times, done.started_at!, 120, 2)
    expectRateHeld(times, 120, 2)
    for (let i = 0; i + 2 < times.length; i++) expect(times[i + 2] - times[i]).toBeGreaterThanOrEqual(1000 - TOLERANCE_MS)
  }, 30_000)
})
