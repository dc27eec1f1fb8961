// End to end: POST /v1/send through the real API, fan-out by the real worker,
// pushes decrypted and checked by a real push service on localhost.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { getBroadcast, send, sleep, subscribeBrowser, waitForBroadcast } from '../../test/support/delivery.ts'
import { newId } from '../platform/ids.ts'
import { newWebhookSecret } from '../webhooks/webhooks.service.ts'

let t: TestApp
let push: PushService
let project: TestProject

beforeAll(async () => {
  push = await startPushService()
  // Small batches so a handful of subscribers spans several batch jobs.
  t = await createTestApp({ HERALD_FANOUT_BATCH_SIZE: '3', HERALD_ENCRYPT_THREADS: '1' }, { worker: true })
})
afterAll(async () => {
  await t.close()
  await push.close()
})
beforeEach(async () => {
  push.reset()
  project = await t.project({ plan: 'plus' })
})

const notification = { title: 'Sale', body: 'Everything must go', url: '/sale' }

function endpointsReached(): string[] {
  return push.received.map((r) => `${push.url}/push/${r.subscriptionId}`).sort()
}

describe('fan-out', () => {
  it('reaches every active subscriber of an "all" broadcast once, with the payload and headers', async () => {
    const browsers = await Promise.all(Array.from({ length: 8 }, () => subscribeBrowser(t, project, push)))
    const id = await send(t, project, { target: { type: 'all' }, notification, ttl: 3600, urgency: 'high', topic: 'sale-2026' })
    const done = await waitForBroadcast(t, project, id)
    expect(done).toMatchObject({ status: 'sent', audience: 8, delivered: 8, failed: 0 })
    expect(done.started_at).toBeGreaterThan(0)
    expect(done.finished_at).toBeGreaterThanOrEqual(done.started_at!)
    expect(endpointsReached()).toEqual(browsers.map((b) => b.endpoint).sort())
    for (const received of push.received) {
      expect(received.payload).toEqual({ v: 1, project_id: project.id, broadcast_id: id, ...notification })
      expect(received.headers.ttl).toBeLessThanOrEqual(3600)
      expect(received.headers.ttl).toBeGreaterThan(3590)
      expect(received.headers.urgency).toBe('high')
      expect(received.headers.topic).toBe('sale-2026')
      expect(received.headers.authorization).toMatch(new RegExp(`^vapid t=[\\w.-]+, k=${project.vapidPublic}$`))
    }
    expect(push.rejected).toEqual([])
  })

  it('sends no Urgency header for normal urgency and no Topic when none is given', async () => {
    await subscribeBrowser(t, project, push)
    const id = await send(t, project, { target: { type: 'all' }, notification })
    await waitForBroadcast(t, project, id)
    expect(push.received[0].headers).toMatchObject({ urgency: null, topic: null, ttl: expect.any(Number) })
    expect(push.received[0].headers.ttl).toBeGreaterThan(86_390)
  })

  it('reaches only the devices of one user, and only the members of one group', async () => {
    const alice = [await subscribeBrowser(t, project, push, { external_id: 'alice' }), await subscribeBrowser(t, project, push, { external_id: 'alice' })]
    await subscribeBrowser(t, project, push, { external_id: 'bob' })
    const user = await send(t, project, { target: { type: 'user', external_id: 'alice' }, notification })
    expect(await waitForBroadcast(t, project, user)).toMatchObject({ status: 'sent', audience: 2, delivered: 2 })
    expect(endpointsReached()).toEqual(alice.map((b) => b.endpoint).sort())

    push.reset()
    const group = (await t.app.inject({ method: 'POST', url: '/v1/groups', headers: project.auth, payload: { name: 'vip' } })).json().id
    const members = [await subscribeBrowser(t, project, push, { group_ids: [group] }), alice[0]]
    await t.app.inject({ method: 'POST', url: `/v1/groups/${group}/subscribers`, headers: project.auth, payload: { subscriber_ids: [alice[0].id] } })
    const byGroup = await send(t, project, { target: { type: 'group', group_id: group }, notification })
    expect(await waitForBroadcast(t, project, byGroup)).toMatchObject({ status: 'sent', audience: 2, delivered: 2 })
    expect(endpointsReached()).toEqual(members.map((b) => b.endpoint).sort())
  })

  it('skips unsubscribed and expired subscribers and other projects', async () => {
    const active = await subscribeBrowser(t, project, push)
    const gone = await subscribeBrowser(t, project, push)
    const expired = await subscribeBrowser(t, project, push)
    await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${project.id}`, payload: { endpoint: gone.endpoint } })
    await t.database.db.query(`UPDATE subscribers SET status = 'expired' WHERE id = $1`, [expired.id])
    const other = await t.project()
    await subscribeBrowser(t, other, push)
    const id = await send(t, project, { target: { type: 'all' }, notification })
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', audience: 1, delivered: 1, failed: 0 })
    expect(endpointsReached()).toEqual([active.endpoint])
  })

  it('records a delivered event, with subscriber_id and external_id, only where a webhook endpoint takes delivered events', async () => {
    const browser = await subscribeBrowser(t, project, push, { external_id: 'carol' })
    const eventsOf = async (id: string) =>
      (await t.database.db.query('SELECT type, subscriber_id, external_id, meta FROM events WHERE broadcast_id = $1', [id])).rows
    const endpoint = async (events: string[], status = 'active') => {
      const id = newId('whk')
      await t.database.db.query('INSERT INTO webhooks (id, project_id, url, events, secret, status) VALUES ($1, $2, $3, $4, $5, $6)', [
        id, project.id, `https://hooks.example/${id}`, events, newWebhookSecret(), status,
      ])
    }
    // No endpoint: the count and the subscriber's health hold the delivery, no events row.
    const plain = await send(t, project, { target: { type: 'all' }, notification })
    expect(await waitForBroadcast(t, project, plain)).toMatchObject({ status: 'sent', delivered: 1 })
    expect(await eventsOf(plain)).toEqual([])
    const health = await t.database.db.query<{ delivered: boolean }>('SELECT last_delivered_at IS NOT NULL AS delivered FROM subscriber_health WHERE subscriber_id = $1', [browser.id])
    expect(health.rows).toEqual([{ delivered: true }])
    // Endpoints that do not take delivered events (or are disabled) change nothing.
    await endpoint(['failed', 'clicked'])
    await endpoint(['delivered'], 'disabled')
    const unwanted = await send(t, project, { target: { type: 'all' }, notification })
    await waitForBroadcast(t, project, unwanted)
    expect(await eventsOf(unwanted)).toEqual([])
    // An active endpoint that takes them: one row per push, and its delivery.
    await endpoint(['delivered'])
    const wanted = await send(t, project, { target: { type: 'all' }, notification })
    await waitForBroadcast(t, project, wanted)
    expect(await eventsOf(wanted)).toEqual([{ type: 'delivered', subscriber_id: browser.id, external_id: 'carol', meta: null }])
    const deliveries = await t.database.db.query('SELECT d.id FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.broadcast_id = $1', [wanted])
    expect(deliveries.rows).toHaveLength(1)
  })

  it('completes a broadcast with an empty audience at once', async () => {
    const id = await send(t, project, { target: { type: 'user', external_id: 'nobody' }, notification })
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', audience: 0, delivered: 0, failed: 0 })
  })

  it('carries the fetch stub when the notification does not fit, and serves the content', async () => {
    await subscribeBrowser(t, project, push)
    const long = { title: 'Long', body: '€'.repeat(2000), url: '/long' }
    const id = await send(t, project, { target: { type: 'all' }, notification: long })
    await waitForBroadcast(t, project, id)
    expect(push.received[0].payload).toEqual({ v: 1, project_id: project.id, broadcast_id: id, fetch: true })
    const res = await t.app.inject({ method: 'GET', url: `/v1/notifications/${id}?project=${project.id}` })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ v: 1, project_id: project.id, broadcast_id: id, ...long })
    const other = await t.project()
    const wrong = await t.app.inject({ method: 'GET', url: `/v1/notifications/${id}?project=${other.id}` })
    expect(wrong.statusCode).toBe(404)
    expect(wrong.json().error.code).toBe('broadcast_not_found')
  })
})

describe('scheduling', () => {
  it('fires a scheduled broadcast about when it is due', async () => {
    await subscribeBrowser(t, project, push)
    const at = Date.now() + 1500
    const id = await send(t, project, { target: { type: 'all' }, notification, scheduled_at: at })
    await sleep(500)
    expect(push.count).toBe(0)
    expect((await getBroadcast(t, project, id)).status).toBe('scheduled')
    const done = await waitForBroadcast(t, project, id)
    expect(done).toMatchObject({ status: 'sent', delivered: 1 })
    // The scheduler polls every second (HERALD_SCHEDULER_INTERVAL_MS).
    expect(push.received[0].at - at).toBeGreaterThanOrEqual(0)
    expect(push.received[0].at - at).toBeLessThan(1500)
  })

  it('never sends a canceled broadcast', async () => {
    await subscribeBrowser(t, project, push)
    const id = await send(t, project, { target: { type: 'all' }, notification, scheduled_at: Date.now() + 700 })
    const cancel = await t.app.inject({ method: 'DELETE', url: `/v1/broadcasts/${id}`, headers: project.auth })
    expect(cancel.statusCode).toBe(200)
    await sleep(1800)
    expect(push.requests).toBe(0)
    expect((await getBroadcast(t, project, id)).status).toBe('canceled')
  })

  it('fails a scheduled broadcast that no longer fits the monthly budget when it fires', async () => {
    await subscribeBrowser(t, project, push)
    await subscribeBrowser(t, project, push)
    const id = await send(t, project, { target: { type: 'all' }, notification, scheduled_at: Date.now() + 300 })
    // Support lowers the cap between send and fire.
    await t.database.db.query(`UPDATE projects SET limits = '{"monthly_pushes": 1}' WHERE id = $1`, [project.id])
    const done = await waitForBroadcast(t, project, id)
    expect(done.status).toBe('failed')
    expect(done.failure_reason).toMatch(/monthly_push_limit_reached/)
    expect(done.failure_reason).toMatch(/\b1\b/)
    expect(push.requests).toBe(0)
  })

  it('reserves the budget at fire time, in the month it fires', async () => {
    await subscribeBrowser(t, project, push)
    const id = await send(t, project, { target: { type: 'all' }, notification, scheduled_at: Date.now() + 200 })
    const before = await t.database.db.query<{ n: number }>('SELECT COALESCE(sum(pushes), 0)::int AS n FROM push_usage WHERE project_id = $1', [project.id])
    expect(before.rows[0].n).toBe(0)
    await waitForBroadcast(t, project, id)
    const after = await t.database.db.query<{ n: number }>('SELECT COALESCE(sum(pushes), 0)::int AS n FROM push_usage WHERE project_id = $1', [project.id])
    expect(after.rows[0].n).toBe(1)
  })
})
