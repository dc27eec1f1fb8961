// A broadcast's progress as GET /v1/broadcasts/:id shows it while the real
// worker fans out to a slow local push service, retries, and is stopped with
// retries queued (decisions.md "Broadcast progress and stop").
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { bulkSubscribe, send } from '../../test/support/delivery.ts'
import { newId } from '../platform/ids.ts'
import { jobsOf, pollView, pushUsage, until, view } from './progress.fixtures.ts'

let t: TestApp
let push: PushService
let project: TestProject

beforeAll(async () => {
  // Every answer takes 30 ms and one batch runs at a time, so a fan-out of a few batches can be watched.
  push = await startPushService({ delayMs: 30 })
  t = await createTestApp(
    {
      HERALD_FANOUT_BATCH_SIZE: '5',
      HERALD_WORKER_CONCURRENCY: '1',
      HERALD_ENCRYPT_THREADS: '1',
      // First retry 0.75-2.25 s after the answer: long enough to see it queued on a busy machine.
      HERALD_PUSH_RETRY_BASE_MS: '1500',
      HERALD_SCHEDULER_INTERVAL_MS: '100',
    },
    { worker: true },
  )
})
afterAll(async () => {
  await t.close()
  await push.close()
})
beforeEach(async () => {
  push.reset()
  project = await t.project({ plan: 'plus' })
})

const notification = { title: 'Progress', body: 'test' }

/** A subscriber of another push service whose keys no push service takes: it fails as rejected before any request leaves. */
async function unusable(endpoint: string): Promise<void> {
  await t.database.db.query(`INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth) VALUES ($1, $2, $3, 'p256dh', 'auth')`, [
    newId('sub'),
    project.id,
    endpoint,
  ])
}

describe('progress of a fan-out', () => {
  it('adds up in every view while it runs, and ends with failures by reason and the push service breakdown', async () => {
    const browsers = await bulkSubscribe(t.database.db, project.id, push, 20)
    push.fail(browsers[3].endpoint, { status: 410 })
    await unusable('https://fcm.googleapis.com/fcm/send/abc')
    await unusable('https://fcm.googleapis.com/fcm/send/def')
    await unusable('https://updates.push.services.mozilla.com/wpush/v2/ghi')
    const id = await send(t, project, { target: { type: 'all' }, notification })

    const { last, seen } = await pollView(t, project, id, (b) => b.status === 'sent')
    // The fan-out was watched under way, with pushes still to go.
    expect(seen.some((b) => b.status === 'sending' && b.pending > 0 && b.delivered > 0)).toBe(true)
    expect(last).toMatchObject({
      audience: 23,
      delivered: 19,
      failed: 4,
      pending: 0,
      retrying: 0,
      failures: { gone: 1, rejected: 3, unreachable: 0, capped: 0 },
      by_push_service: {
        fcm: { delivered: 0, failed: 2, retrying: 0 },
        mozilla: { delivered: 0, failed: 1, retrying: 0 },
        apple: { delivered: 0, failed: 0, retrying: 0 },
        wns: { delivered: 0, failed: 0, retrying: 0 },
        other: { delivered: 19, failed: 1, retrying: 0 },
      },
      next_attempt_at: null,
    })
    // The latest of the four errors: the 410 of the local push service, or keys that could not be used.
    const error = last.last_error!
    if (error.reason === 'gone') expect(error).toMatchObject({ status: 410, push_service: 'other' })
    else expect(error).toMatchObject({ status: null, reason: 'invalid_subscription', push_service: expect.stringMatching(/^(fcm|mozilla)$/) })
    expect(error.at).toBeGreaterThanOrEqual(last.started_at!)
    expect(error.at).toBeLessThanOrEqual(last.finished_at!)
    expect(push.requests).toBe(20)
    expect(await pushUsage(t.database.db, project.id)).toBe(23)
  })

  it('shows pushes waiting for a retry, when it is due and the error that caused it; then delivers them', async () => {
    const browsers = await bulkSubscribe(t.database.db, project.id, push, 6)
    push.fail(browsers[0].endpoint, { status: 503, times: 1 })
    push.fail(browsers[4].endpoint, { status: 503, times: 1 })
    const sentAt = Date.now()
    const id = await send(t, project, { target: { type: 'all' }, notification })

    const { last: waiting } = await pollView(t, project, id, (b) => b.retrying === 2 && b.next_attempt_at !== null && b.pending === 0)
    expect(waiting).toMatchObject({
      status: 'sending',
      delivered: 4,
      failed: 0,
      by_push_service: { other: { delivered: 4, failed: 0, retrying: 2 } },
      last_error: { status: 503, reason: 'server_error', push_service: 'other' },
    })
    expect(waiting.next_attempt_at).toBeGreaterThan(sentAt)

    const { last: done } = await pollView(t, project, id, (b) => b.status === 'sent')
    expect(done).toMatchObject({ delivered: 6, failed: 0, retrying: 0, pending: 0, next_attempt_at: null, by_push_service: { other: { delivered: 6, failed: 0, retrying: 0 } } })
    // The last error stays on record after the retry delivered.
    expect(done.last_error).toMatchObject({ status: 503, reason: 'server_error' })
    expect(push.count).toBe(6)
  })

  it('a push still failing when its TTL is spent ends failed as unreachable', async () => {
    const browsers = await bulkSubscribe(t.database.db, project.id, push, 2)
    push.fail(browsers[1].endpoint, { status: 500 })
    // A TTL of 0: no retry fits in it.
    const id = await send(t, project, { target: { type: 'all' }, notification, ttl: 0 })
    const { last } = await pollView(t, project, id, (b) => b.status === 'sent')
    expect(last).toMatchObject({
      delivered: 1,
      failed: 1,
      retrying: 0,
      failures: { gone: 0, rejected: 0, unreachable: 1 },
      last_error: { status: 500, reason: 'server_error', push_service: 'other' },
    })
  })
})

describe('stop with retries queued', () => {
  it('the queued retry never goes: nothing waits for a retry any more (API), the push service gets nothing more, the counts stay', async () => {
    const browsers = await bulkSubscribe(t.database.db, project.id, push, 4)
    for (const b of browsers) push.fail(b.endpoint, { status: 503 })
    const id = await send(t, project, { target: { type: 'all' }, notification })
    await pollView(t, project, id, (b) => b.retrying === 4 && b.next_attempt_at !== null)
    const requestsAtStop = push.requests
    expect(requestsAtStop).toBe(4)

    const res = await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${id}/stop`, headers: project.auth })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    const stopped = await view(t, project, id)
    // After a stop nothing waits: the four pushes whose retry was queued are not sent (pending), on every push service too.
    expect(stopped).toMatchObject({ status: 'canceled', audience: 4, delivered: 0, failed: 0, retrying: 0, pending: 4, next_attempt_at: null })
    expect(Object.values(stopped.by_push_service).map((c) => c.retrying)).toEqual([0, 0, 0, 0, 0])
    expect(stopped.finished_at).toEqual(expect.any(Number))
    // The list says the same as the broadcast's own view.
    const listed = await t.app.inject({ method: 'GET', url: '/v1/broadcasts', headers: project.auth })
    expect(listed.json().broadcasts.find((b: { id: string }) => b.id === id)).toMatchObject({ retrying: 0, pending: 4 })

    // The retry job comes due (within 2.25 s), finds the broadcast canceled, and ends without a push.
    await until('the retry job to have run', async () => (await jobsOf(t.database.db, id)) === 0, 15_000)
    expect(push.requests).toBe(requestsAtStop)
    expect(await view(t, project, id)).toEqual(stopped)
    // The month keeps the four pushes attempted.
    expect(await pushUsage(t.database.db, project.id)).toBe(4)
  })
})
