// How fan-out treats each kind of push service answer: dead subscriptions,
// refusals, slow-downs, errors and silence, end to end.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { send, sleep, subscribeBrowser, waitForBroadcast } from '../../test/support/delivery.ts'

let t: TestApp
let push: PushService
let other: PushService
let project: TestProject

beforeAll(async () => {
  push = await startPushService()
  other = await startPushService()
  t = await createTestApp(
    { HERALD_PUSH_RETRY_BASE_MS: '100', HERALD_PUSH_TIMEOUT_MS: '300', HERALD_ENCRYPT_THREADS: '0' },
    { worker: true },
  )
})
afterAll(async () => {
  await t.close()
  await push.close()
  await other.close()
})
beforeEach(async () => {
  push.reset()
  other.reset()
  project = await t.project({ plan: 'plus' })
})

const notification = { title: 'Hi', body: 'There' }

async function failedEvents(broadcastId: string): Promise<Array<{ subscriber_id: string; meta: { reason: string; status: number | null } }>> {
  const result = await t.database.db.query<{ subscriber_id: string; meta: { reason: string; status: number | null } }>(
    `SELECT subscriber_id, meta FROM events WHERE broadcast_id = $1 AND type = 'failed' ORDER BY subscriber_id`,
    [broadcastId],
  )
  return result.rows
}

async function statusOf(subscriberId: string): Promise<string> {
  const res = await t.app.inject({ method: 'GET', url: `/v1/subscribers/${subscriberId}`, headers: project.auth })
  return res.json().status
}

describe('push service answers', () => {
  it.each([404, 410] as const)('%i marks the subscription expired and counts it failed (gone), without retry', async (status) => {
    const dead = await subscribeBrowser(t, project, push)
    const alive = await subscribeBrowser(t, project, push)
    push.fail(dead.endpoint, { status })
    const id = await send(t, project, { target: { type: 'all' }, notification })
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 1, failed: 1 })
    expect(await statusOf(dead.id)).toBe('expired')
    expect(await statusOf(alive.id)).toBe('active')
    expect(await failedEvents(id)).toEqual([{ subscriber_id: dead.id, meta: { reason: 'gone', status } }])
    expect(push.requests).toBe(2)
  })

  it.each([400, 401, 403, 413] as const)('%i counts the push failed (rejected) and does not retry', async (status) => {
    const refused = await subscribeBrowser(t, project, push)
    push.fail(refused.endpoint, { status })
    const id = await send(t, project, { target: { type: 'all' }, notification })
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 0, failed: 1 })
    await sleep(400)
    expect(push.requests).toBe(1)
    expect(await statusOf(refused.id)).toBe('active')
    expect(await failedEvents(id)).toEqual([{ subscriber_id: refused.id, meta: { reason: 'rejected', status } }])
  })

  it('retries a 5xx with backoff and delivers once the push service recovers', async () => {
    const flaky = await subscribeBrowser(t, project, push)
    push.fail(flaky.endpoint, { status: 500, times: 2 })
    const id = await send(t, project, { target: { type: 'all' }, notification })
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 1, failed: 0 })
    expect(push.requests).toBe(3)
    expect(push.received).toHaveLength(1)
  })

  it('gives up on a 5xx when the TTL runs out, counting it failed (unreachable)', async () => {
    const down = await subscribeBrowser(t, project, push)
    push.fail(down.endpoint, { status: 503 })
    const id = await send(t, project, { target: { type: 'all' }, notification, ttl: 1 })
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 0, failed: 1 })
    expect(push.requests).toBeGreaterThanOrEqual(2)
    expect(await failedEvents(id)).toEqual([{ subscriber_id: down.id, meta: { reason: 'unreachable', status: 503 } }])
    expect(await statusOf(down.id)).toBe('active')
  })

  it('treats a push service that never answers as unreachable after the timeout', async () => {
    const silent = await subscribeBrowser(t, project, push)
    push.fail(silent.endpoint, { hang: true })
    const id = await send(t, project, { target: { type: 'all' }, notification, ttl: 1 })
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 0, failed: 1 })
    expect(await failedEvents(id)).toEqual([{ subscriber_id: silent.id, meta: { reason: 'unreachable', status: null } }])
  })

  it('honours 429 Retry-After and slows that push service down for every broadcast', async () => {
    const first = await subscribeBrowser(t, project, push, { external_id: 'first' })
    const second = await subscribeBrowser(t, project, push, { external_id: 'second' })
    push.fail(first.endpoint, { status: 429, retryAfter: 1, times: 1 })
    const sentAt = Date.now()
    const a = await send(t, project, { target: { type: 'user', external_id: 'first' }, notification })
    await push.waitForCount(0)
    await sleep(150)
    // Another broadcast to the same push service during its pause waits too.
    const b = await send(t, project, { target: { type: 'user', external_id: 'second' }, notification })
    expect(await waitForBroadcast(t, project, a)).toMatchObject({ status: 'sent', delivered: 1 })
    expect(await waitForBroadcast(t, project, b)).toMatchObject({ status: 'sent', delivered: 1 })
    const firstAt = push.receivedFor(first.endpoint)[0].at
    const secondAt = push.receivedFor(second.endpoint)[0].at
    expect(firstAt - sentAt).toBeGreaterThanOrEqual(1000)
    expect(secondAt - sentAt).toBeGreaterThanOrEqual(1000)
  })

  it('does not let a failing push service stall broadcasts to the others', async () => {
    const healthy = await Promise.all([1, 2, 3].map(() => subscribeBrowser(t, project, push, { external_id: 'healthy' })))
    const broken = await subscribeBrowser(t, project, other, { external_id: 'broken' })
    other.fail(broken.endpoint, { status: 500 })
    const mixed = await send(t, project, { target: { type: 'all' }, notification, ttl: 2 })
    await push.waitForCount(3, 3000)
    const onlyHealthy = await send(t, project, { target: { type: 'user', external_id: 'healthy' }, notification })
    const quick = await waitForBroadcast(t, project, onlyHealthy, undefined, 3000)
    expect(quick).toMatchObject({ status: 'sent', delivered: 3 })
    // The mixed broadcast is still retrying its one broken push meanwhile.
    const finished = await waitForBroadcast(t, project, mixed)
    expect(finished).toMatchObject({ status: 'sent', delivered: 3, failed: 1 })
    expect(quick.finished_at!).toBeLessThan(finished.finished_at!)
    expect(healthy).toHaveLength(3)
  })
})
