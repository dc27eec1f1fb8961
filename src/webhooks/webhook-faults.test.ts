// How webhook delivery treats each kind of endpoint answer, end to end:
// errors and retries, 410, redirects, 429, deleted and long-failing endpoints,
// slow endpoints (they hold up neither fan-out nor other endpoints).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { send, sleep, subscribeBrowser, waitForBroadcast } from '../../test/support/delivery.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.ts'
import { newId } from '../platform/ids.ts'
import { MAX_REJECTED_ATTEMPTS } from './retry-schedule.ts'

let t: TestApp
let push: PushService
let receiver: WebhookReceiver
let project: TestProject
let broadcastId: string
let paths = 0

beforeAll(async () => {
  push = await startPushService()
  receiver = await startWebhookReceiver()
  t = await createTestApp(
    {
      HERALD_ENCRYPT_THREADS: '0',
      HERALD_WEBHOOK_RETRY_BASE_MS: '5',
      HERALD_SCHEDULER_INTERVAL_MS: '50',
      HERALD_WEBHOOK_CONCURRENCY: '6',
      HERALD_WEBHOOK_ENDPOINT_CONCURRENCY: '2',
      // Several fan-out batches, so webhooks of early batches are under way while later ones are sent.
      HERALD_FANOUT_BATCH_SIZE: '2',
    },
    { worker: true },
  )
})
afterAll(async () => {
  await t.close()
  await push.close()
  await receiver.close()
})
beforeEach(async () => {
  push.reset()
  project = await t.project({ plan: 'plus' })
  // A broadcast to nobody: beacons against it make events without fan-out.
  broadcastId = await send(t, project, { target: { type: 'user', external_id: 'nobody' }, notification })
  await waitForBroadcast(t, project, broadcastId)
})

const notification = { title: 'Hi', body: 'There' }

async function register(p: TestProject = project): Promise<{ path: string; id: string }> {
  const path = `/hook-${++paths}`
  const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: p.auth, payload: { url: receiver.url + path } })
  expect(res.statusCode).toBe(201)
  return { path, id: res.json().id }
}

async function click(p: TestProject = project, broadcast = broadcastId): Promise<void> {
  await t.app.inject({ method: 'POST', url: `/v1/events?project=${p.id}`, payload: { type: 'clicked', broadcast_id: broadcast } })
}

async function webhookState(id: string, p: TestProject = project): Promise<{ status: string; disabled_at: number | null; disabled_reason: string | null }> {
  const res = await t.app.inject({ method: 'GET', url: '/v1/webhooks', headers: p.auth })
  return res.json().webhooks.find((w: { id: string }) => w.id === id)
}

async function deliveries(webhookId: string): Promise<Array<{ status: string; attempts: number; last_status: number | null; last_error: string | null }>> {
  const result = await t.database.db.query<{ status: string; attempts: number; last_status: number | null; last_error: string | null }>(
    'SELECT status, attempts, last_status, last_error FROM webhook_deliveries WHERE webhook_id = $1',
    [webhookId],
  )
  return result.rows
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const start = Date.now()
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() - start > timeoutMs) throw new Error(`condition not reached: ${JSON.stringify(value)}`)
    await sleep(20)
  }
}

describe('endpoint answers', () => {
  it('retries after 500 with the same webhook-id and body, then stops once it gets a 2xx', async () => {
    const hook = await register()
    receiver.fail(hook.path, { status: 500 }, 2)
    await click()
    const got = await receiver.waitFor(hook.path, 3)
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1)
    expect(new Set(got.map((r) => r.body)).size).toBe(1)
    expect(await until(() => deliveries(hook.id), (rows) => rows.length === 0)).toEqual([])
    await sleep(200)
    expect(receiver.on(hook.path)).toHaveLength(3)
    expect(await webhookState(hook.id)).toMatchObject({ status: 'active', disabled_at: null })
  })

  it('410 disables the endpoint, shown by GET /v1/webhooks, and nothing more is sent to it', async () => {
    const hook = await register()
    receiver.fail(hook.path, { status: 410 })
    await click()
    await receiver.waitFor(hook.path, 1)
    const state = await until(() => webhookState(hook.id), (w) => w.status === 'disabled')
    expect(state.disabled_at).toBeGreaterThan(Date.now() - 60_000)
    expect(state.disabled_reason).toBe('the endpoint answered 410 Gone')
    await click()
    await click()
    await sleep(300)
    expect(receiver.on(hook.path)).toHaveLength(1)
    expect(await deliveries(hook.id)).toEqual([])
  })

  it('does not follow a redirect: the target gets nothing, and the delivery fails (a few tries, then dropped)', async () => {
    const hook = await register()
    const target = `/redirect-target-${paths}`
    receiver.fail(hook.path, { status: 302, location: receiver.url + target })
    await click()
    const rows = await until(() => deliveries(hook.id), (r) => r[0]?.status === 'failed')
    expect(rows).toEqual([{ status: 'failed', attempts: MAX_REJECTED_ATTEMPTS, last_status: 302, last_error: null }])
    expect(receiver.on(hook.path)).toHaveLength(MAX_REJECTED_ATTEMPTS)
    expect(receiver.on(target)).toEqual([])
    expect((await webhookState(hook.id)).status).toBe('active')
  })

  it('429 is retried after its Retry-After', async () => {
    const hook = await register()
    receiver.fail(hook.path, { status: 429, retryAfter: '1' }, 1)
    await click()
    const [first, second] = await receiver.waitFor(hook.path, 2)
    expect(second.at - first.at).toBeGreaterThanOrEqual(900)
    expect(second.headers['webhook-id']).toBe(first.headers['webhook-id'])
  })

  it('429 pauses the whole endpoint: a later event waits for the Retry-After too', async () => {
    const hook = await register()
    receiver.fail(hook.path, { status: 429, retryAfter: '1' }, 1)
    await click()
    const [first] = await receiver.waitFor(hook.path, 1)
    await sleep(100)
    await click()
    const got = await receiver.waitFor(hook.path, 3)
    for (const later of got.slice(1)) expect(later.at - first.at).toBeGreaterThanOrEqual(900)
  })

  it("sends nothing more for a deleted webhook: its pending deliveries go with it", async () => {
    const hook = await register()
    receiver.fail(hook.path, { status: 503 })
    await click()
    await receiver.waitFor(hook.path, 2)
    const res = await t.app.inject({ method: 'DELETE', url: `/v1/webhooks/${hook.id}`, headers: project.auth })
    expect(res.statusCode).toBe(200)
    expect(await deliveries(hook.id)).toEqual([])
    const sent = receiver.on(hook.path).length
    await sleep(500)
    expect(receiver.on(hook.path).length).toBeLessThanOrEqual(sent + 1)
  })

  it('disables an endpoint that has failed continuously for 5 days, saying so; its pending delivery waits', async () => {
    const hook = await register()
    receiver.fail(hook.path, { status: 500 })
    await t.database.db.query(`UPDATE webhooks SET failing_since = now() - interval '5 days 1 minute' WHERE id = $1`, [hook.id])
    await click()
    const state = await until(() => webhookState(hook.id), (w) => w.status === 'disabled')
    expect(state.disabled_at).toBeGreaterThan(Date.now() - 60_000)
    expect(state.disabled_reason).toMatch(/^every attempt failed for 5 days \(no success since \d{4}-\d\d-\d\dT/)
    // Kept for a re-enable (PATCH { enabled: true }), not sent while disabled.
    expect(await deliveries(hook.id)).toEqual([{ status: 'pending', attempts: 1, last_status: 500, last_error: null }])
    await click()
    await sleep(300)
    expect(receiver.on(hook.path)).toHaveLength(1)
  })

  it('a success ends the failing run', async () => {
    const hook = await register()
    receiver.fail(hook.path, { status: 500 }, 1)
    await click()
    await receiver.waitFor(hook.path, 2)
    const row = await until(
      () => t.database.db.query<{ failing_since: Date | null }>('SELECT failing_since FROM webhooks WHERE id = $1', [hook.id]),
      (r) => r.rows[0].failing_since === null,
    )
    expect(row.rows[0].failing_since).toBeNull()
  })
})

describe('crash safety', () => {
  it('sends again a delivery whose worker died holding it, once the lease has passed', async () => {
    const hook = await register()
    const eventId = newId('evt')
    // What a worker leaves behind when killed mid-request: claimed (attempt 1), leased for 400 ms more.
    await t.database.db.transaction(async (tx) => {
      await tx.query(`INSERT INTO events (id, project_id, broadcast_id, type) VALUES ($1, $2, $3, 'clicked')`, [eventId, project.id, broadcastId])
      await tx.query(
        `INSERT INTO webhook_deliveries (webhook_id, event_id, attempts, locked_by, next_attempt_at)
         VALUES ($1, $2, 1, 'dead-worker', now() + interval '400 milliseconds')`,
        [hook.id, eventId],
      )
    })
    const leased = Date.now()
    const [got] = await receiver.waitFor(hook.path, 1)
    expect(got.at - leased).toBeGreaterThanOrEqual(300)
    expect(got.headers['webhook-id']).toBe(eventId)
    expect(await until(() => deliveries(hook.id), (rows) => rows.length === 0)).toEqual([])
  })
})

describe('slow endpoints', () => {
  it('hold up neither fan-out nor another endpoint, and get at most their share of connections', async () => {
    const slow = await register()
    receiver.delay(slow.path, 2000)
    const other = await t.project({ plan: 'plus' })
    const fast = await register(other)
    const otherBroadcast = await send(t, other, { target: { type: 'user', external_id: 'nobody' }, notification })
    await waitForBroadcast(t, other, otherBroadcast)

    await Promise.all(Array.from({ length: 6 }, () => subscribeBrowser(t, project, push)))
    const id = await send(t, project, { target: { type: 'all' }, notification })
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 6 })
    // Fan-out finished before the slow endpoint answered anything.
    await receiver.waitFor(slow.path, 1)
    expect(receiver.answered(slow.path)).toBe(0)

    // Another project's endpoint is served while the slow one still has a backlog.
    await click(other, otherBroadcast)
    await receiver.waitFor(fast.path, 1)
    expect(receiver.answered(slow.path)).toBeLessThan(6)
    // The slow endpoint still gets every event, never more than 2 at once.
    await receiver.waitFor(slow.path, 6, 15_000)
    expect(receiver.maxInFlight(slow.path)).toBeLessThanOrEqual(2)
  })
})
