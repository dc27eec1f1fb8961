// End to end: events made through the real API (fan-out to the local push
// service, the click beacon) reach a webhook receiver on localhost, signed,
// in the decisions.md §3 shape, to the right endpoints only.
import { createHmac, timingSafeEqual } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { send, sleep, subscribeBrowser, waitForBroadcast } from '../../test/support/delivery.ts'
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../../test/support/webhook-receiver.ts'

let t: TestApp
let push: PushService
let receiver: WebhookReceiver
let project: TestProject
let paths = 0

beforeAll(async () => {
  push = await startPushService()
  receiver = await startWebhookReceiver()
  t = await createTestApp(
    { HERALD_ENCRYPT_THREADS: '0', HERALD_WEBHOOK_RETRY_BASE_MS: '5', HERALD_SCHEDULER_INTERVAL_MS: '50' },
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
})

const notification = { title: 'Sale', body: 'Everything must go' }

/** Registers a webhook at a fresh path of the receiver; returns the path, id and secret. */
async function register(p: TestProject, events?: string[]): Promise<{ path: string; id: string; secret: string }> {
  const path = `/hook-${++paths}`
  const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: p.auth, payload: { url: receiver.url + path, events } })
  expect(res.statusCode).toBe(201)
  return { path, id: res.json().id, secret: res.json().secret }
}

/** The customer's check, as docs/webhooks.md shows it. */
function verifies(secret: string, hook: ReceivedWebhook): boolean {
  const key = Buffer.from(secret.split('_')[1], 'base64')
  const signed = `${hook.headers['webhook-id']}.${hook.headers['webhook-timestamp']}.${hook.body}`
  const expected = createHmac('sha256', key).update(signed).digest()
  return hook.headers['webhook-signature'].split(' ').some((candidate) => {
    const given = Buffer.from(candidate.replace(/^v1,/, ''), 'base64')
    return given.length === expected.length && timingSafeEqual(given, expected)
  })
}

async function beacon(projectId: string, body: Record<string, unknown>): Promise<void> {
  const res = await t.app.inject({ method: 'POST', url: `/v1/events?project=${projectId}`, payload: body })
  expect(res.statusCode).toBe(202)
}

describe('webhook deliveries', () => {
  it('sends one signed delivered event per push of a broadcast to 3 subscribers', async () => {
    const hook = await register(project)
    const browsers = [
      await subscribeBrowser(t, project, push, { external_id: 'alice' }),
      await subscribeBrowser(t, project, push),
      await subscribeBrowser(t, project, push, { external_id: 'bob' }),
    ]
    const broadcastId = await send(t, project, { target: { type: 'all' }, notification })
    await waitForBroadcast(t, project, broadcastId)
    const got = await receiver.waitFor(hook.path, 3)
    await sleep(200)
    expect(receiver.on(hook.path)).toHaveLength(3)
    const events = await t.database.db.query<{ id: string; subscriber_id: string; created_at: Date }>(
      'SELECT id, subscriber_id, created_at FROM events WHERE broadcast_id = $1',
      [broadcastId],
    )
    for (const request of got) {
      expect(verifies(hook.secret, request)).toBe(true)
      expect(request.headers['content-type']).toBe('application/json')
      expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30)
      const json = request.json as Record<string, unknown>
      expect(Object.keys(json)).toEqual(['id', 'type', 'project_id', 'broadcast_id', 'subscriber_id', 'external_id', 'meta', 'created_at'])
      const event = events.rows.find((e) => e.id === json.id)!
      const browser = browsers.find((b) => b.id === json.subscriber_id)!
      expect(json).toEqual({
        id: event.id,
        type: 'delivered',
        project_id: project.id,
        broadcast_id: broadcastId,
        subscriber_id: browser.id,
        external_id: browser === browsers[0] ? 'alice' : browser === browsers[2] ? 'bob' : null,
        meta: null,
        created_at: event.created_at.getTime(),
      })
      expect(request.headers['webhook-id']).toBe(event.id)
    }
    expect(new Set(got.map((r) => (r.json as { subscriber_id: string }).subscriber_id))).toEqual(new Set(browsers.map((b) => b.id)))
    // Nothing is left to deliver.
    const pending = await t.database.db.query('SELECT 1 FROM webhook_deliveries WHERE webhook_id = $1', [hook.id])
    expect(pending.rows).toEqual([])
  })

  it('sends a failed event with meta { reason, status } when a push fails', async () => {
    const hook = await register(project)
    const dead = await subscribeBrowser(t, project, push)
    push.fail(dead.endpoint, { status: 410 })
    const broadcastId = await send(t, project, { target: { type: 'all' }, notification })
    await waitForBroadcast(t, project, broadcastId)
    const [request] = await receiver.waitFor(hook.path, 1)
    expect(request.json).toMatchObject({
      type: 'failed',
      broadcast_id: broadcastId,
      subscriber_id: dead.id,
      meta: { reason: 'gone', status: 410 },
    })
    expect(verifies(hook.secret, request)).toBe(true)
  })

  it('sends clicked and dismissed with subscriber_id and external_id null, even when the beacon names a subscriber', async () => {
    const hook = await register(project)
    const browser = await subscribeBrowser(t, project, push, { external_id: 'carol' })
    const broadcastId = await send(t, project, { target: { type: 'user', external_id: 'nobody' }, notification })
    await waitForBroadcast(t, project, broadcastId)
    await beacon(project.id, { type: 'clicked', broadcast_id: broadcastId, subscriber_id: browser.id })
    await beacon(project.id, { type: 'dismissed', broadcast_id: broadcastId })
    const got = await receiver.waitFor(hook.path, 2)
    const byType = Object.fromEntries(got.map((r) => [(r.json as { type: string }).type, r]))
    for (const type of ['clicked', 'dismissed']) {
      expect(byType[type].json).toMatchObject({ type, project_id: project.id, broadcast_id: broadcastId, subscriber_id: null, external_id: null, meta: null })
      expect(verifies(hook.secret, byType[type])).toBe(true)
    }
  })

  it('respects each endpoint\'s events filter', async () => {
    const clicksOnly = await register(project, ['clicked'])
    const everything = await register(project)
    await subscribeBrowser(t, project, push)
    const broadcastId = await send(t, project, { target: { type: 'all' }, notification })
    await waitForBroadcast(t, project, broadcastId)
    await receiver.waitFor(everything.path, 1)
    await beacon(project.id, { type: 'clicked', broadcast_id: broadcastId })
    await beacon(project.id, { type: 'dismissed', broadcast_id: broadcastId })
    await receiver.waitFor(everything.path, 3)
    const [click] = await receiver.waitFor(clicksOnly.path, 1)
    await sleep(300)
    expect(receiver.on(clicksOnly.path).map((r) => (r.json as { type: string }).type)).toEqual(['clicked'])
    expect(click.headers['webhook-id']).toBe(receiver.on(everything.path).find((r) => (r.json as { type: string }).type === 'clicked')!.headers['webhook-id'])
    expect(receiver.on(everything.path).map((r) => (r.json as { type: string }).type).sort()).toEqual(['clicked', 'delivered', 'dismissed'])
  })

  it("never records nor sends another project's events", async () => {
    const mine = await register(project)
    const other = await t.project({ plan: 'plus' })
    const theirs = await register(other)
    await subscribeBrowser(t, project, push)
    const broadcastId = await send(t, project, { target: { type: 'all' }, notification })
    await waitForBroadcast(t, project, broadcastId)
    // A beacon naming my broadcast under the other project is dropped.
    await beacon(other.id, { type: 'clicked', broadcast_id: broadcastId })
    await receiver.waitFor(mine.path, 1)
    await sleep(300)
    expect(receiver.on(theirs.path)).toEqual([])
    expect(receiver.on(mine.path).map((r) => (r.json as { type: string }).type)).toEqual(['delivered'])
    const clicks = await t.database.db.query(`SELECT 1 FROM events WHERE broadcast_id = $1 AND type = 'clicked'`, [broadcastId])
    expect(clicks.rows).toEqual([])
    const broadcast = await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${broadcastId}`, headers: project.auth })
    expect(broadcast.json()).toMatchObject({ clicked: 0, delivered: 1 })
  })

  it('writes no delivery for a project without webhooks', async () => {
    await subscribeBrowser(t, project, push)
    const broadcastId = await send(t, project, { target: { type: 'all' }, notification })
    await waitForBroadcast(t, project, broadcastId)
    await beacon(project.id, { type: 'clicked', broadcast_id: broadcastId })
    const rows = await t.database.db.query(
      'SELECT 1 FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.broadcast_id = $1',
      [broadcastId],
    )
    expect(rows.rows).toEqual([])
  })
})
