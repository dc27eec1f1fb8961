// Action buttons end to end (issue 12): notification.actions validated at
// send, stored and returned with the broadcast, carried in the push the local
// push service decrypts, clicks on them beaconed with their action, counted in
// clicked_by_action, and delivered to webhooks with meta { action }.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { send, subscribeBrowser, waitForBroadcast } from '../../test/support/delivery.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.ts'

let t: TestApp
let push: PushService
let receiver: WebhookReceiver
let project: TestProject

beforeAll(async () => {
  push = await startPushService()
  receiver = await startWebhookReceiver()
  t = await createTestApp({ HERALD_ENCRYPT_THREADS: '0', HERALD_WEBHOOK_RETRY_BASE_MS: '5' }, { worker: true })
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

const actions = [
  { action: 'buy', title: 'Buy now', url: 'https://shop.example.com/buy' },
  { action: 'later_2', title: 'Later' },
]
const notification = { title: 'Sale', body: 'Half off', url: '/sale', actions }

async function sendRaw(body: unknown) {
  return t.app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: body as Record<string, unknown> })
}

async function expectInvalid(actionsValue: unknown, path: string) {
  const res = await sendRaw({ target: { type: 'all' }, notification: { title: 't', body: 'b', actions: actionsValue } })
  expect(res.statusCode, res.body).toBe(400)
  expect(res.json().error.code).toBe('invalid_request')
  expect(res.json().error.issues.map((i: { path: string }) => i.path)).toContain(path)
}

async function view(id: string) {
  return (await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: project.auth })).json()
}

async function beacon(body: Record<string, unknown>) {
  const res = await t.app.inject({ method: 'POST', url: `/v1/events?project=${project.id}`, payload: body })
  expect(res.statusCode).toBe(202)
}

describe('notification.actions', () => {
  it('accepts 0, 1 or 2 actions at their limits; refuses the rest with issues naming the field', async () => {
    const limits = [{ action: 'a'.repeat(32), title: 't'.repeat(64), url: '/x' }, { action: 'A-Z_09', title: 'é' }]
    const ok = await sendRaw({ target: { type: 'all' }, notification: { title: 't', body: 'b', actions: limits } })
    expect(ok.statusCode, ok.body).toBe(202)
    expect((await view(ok.json().broadcast_id)).notification.actions).toEqual(limits)
    const none = await sendRaw({ target: { type: 'all' }, notification: { title: 't', body: 'b', actions: [] } })
    expect((await view(none.json().broadcast_id)).notification).not.toHaveProperty('actions')

    await expectInvalid([...limits, { action: 'c', title: 'c' }], 'notification.actions')
    await expectInvalid('buy', 'notification.actions')
    await expectInvalid([{ action: 'a'.repeat(33), title: 't' }], 'notification.actions.0.action')
    await expectInvalid([{ action: '', title: 't' }], 'notification.actions.0.action')
    await expectInvalid([{ action: 'no space', title: 't' }], 'notification.actions.0.action')
    await expectInvalid([{ action: 'ok', title: '' }], 'notification.actions.0.title')
    await expectInvalid([{ action: 'ok', title: 't'.repeat(65) }], 'notification.actions.0.title')
    await expectInvalid([{ title: 't' }], 'notification.actions.0.action')
    await expectInvalid([{ action: 'ok', title: 't', icon: 'x' }], 'notification.actions.0')
    await expectInvalid([{ action: 'same', title: 'a' }, { action: 'same', title: 'b' }], 'notification.actions.1.action')
    for (const bad of ['javascript:alert(1)', '//evil.example/x', 'sale', 'https://a b', `https://x.example/${'a'.repeat(2048)}`]) {
      await expectInvalid([{ action: 'ok', title: 't', url: bad }], 'notification.actions.0.url')
    }
    // A dry run refuses the same bodies.
    const dry = await sendRaw({ target: { type: 'all' }, notification: { title: 't', body: 'b', actions: [actions[0], actions[0]] }, dry_run: true })
    expect(dry.statusCode).toBe(400)
  })

  it('are carried in the push, and a click on one is counted under its action and sent to webhooks with meta.action', async () => {
    const hook = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: project.auth, payload: { url: `${receiver.url}/actions`, events: ['clicked'] } })
    expect(hook.statusCode).toBe(201)
    await subscribeBrowser(t, project, push)
    const id = await send(t, project, { target: { type: 'all' }, notification })
    await waitForBroadcast(t, project, id)
    expect(push.received[0].payload).toMatchObject({ v: 1, broadcast_id: id, title: 'Sale', url: '/sale', actions })
    expect(await view(id)).toMatchObject({ clicked: 0, clicked_by_action: { buy: 0, later_2: 0 } })

    await beacon({ type: 'clicked', broadcast_id: id, action: 'buy' })
    await beacon({ type: 'clicked', broadcast_id: id, action: 'buy' })
    await beacon({ type: 'clicked', broadcast_id: id }) // the notification itself
    await beacon({ type: 'clicked', broadcast_id: id, action: 'not-one-of-them' }) // counted, but not as an action
    await beacon({ type: 'dismissed', broadcast_id: id, action: 'later_2' }) // a dismissal names no action
    const counted = await view(id)
    expect(counted).toMatchObject({ clicked: 4, dismissed: 1, clicked_by_action: { buy: 2, later_2: 0 } })

    const events = await t.database.db.query(`SELECT type, meta FROM events WHERE broadcast_id = $1 AND type <> 'delivered' ORDER BY id`, [id])
    expect(events.rows).toEqual([
      { type: 'clicked', meta: { action: 'buy' } },
      { type: 'clicked', meta: { action: 'buy' } },
      { type: 'clicked', meta: null },
      { type: 'clicked', meta: null },
      { type: 'dismissed', meta: null },
    ])
    const delivered = await receiver.waitFor('/actions', 4, 10_000)
    const metas = delivered.map((w) => (w.json as { type: string; meta: unknown }).meta)
    expect(metas.filter((m) => m !== null)).toEqual([{ action: 'buy' }, { action: 'buy' }])
    expect(delivered.every((w) => (w.json as { type: string }).type === 'clicked')).toBe(true)
  })

  it("counts only the project's own broadcast: another project's beacon for it is dropped", async () => {
    const id = await send(t, project, { target: { type: 'all' }, notification })
    const other = await t.project()
    await t.app.inject({ method: 'POST', url: `/v1/events?project=${other.id}`, payload: { type: 'clicked', broadcast_id: id, action: 'buy' } })
    await beacon({ type: 'clicked', broadcast_id: id, action: 'later_2' })
    expect(await view(id)).toMatchObject({ clicked: 1, clicked_by_action: { buy: 0, later_2: 1 } })
  })

  it('a broadcast without actions carries none and shows clicked_by_action {}', async () => {
    await subscribeBrowser(t, project, push)
    const id = await send(t, project, { target: { type: 'all' }, notification: { title: 'Plain', body: 'b' } })
    await waitForBroadcast(t, project, id)
    expect(push.received[0].payload).not.toHaveProperty('actions')
    await beacon({ type: 'clicked', broadcast_id: id, action: 'buy' })
    expect(await view(id)).toMatchObject({ clicked: 1, clicked_by_action: {} })
    expect((await view(id)).notification).not.toHaveProperty('actions')
    const list = (await t.app.inject({ method: 'GET', url: '/v1/broadcasts', headers: project.auth })).json()
    expect(list.broadcasts[0]).toMatchObject({ id, clicked_by_action: {} })
  })

  it('GET /v1/notifications/:id (the fetch: true content) carries the actions too', async () => {
    const id = await send(t, project, { target: { type: 'all' }, notification })
    await waitForBroadcast(t, project, id)
    const res = await t.app.inject({ method: 'GET', url: `/v1/notifications/${id}?project=${project.id}` })
    expect(res.json()).toMatchObject({ broadcast_id: id, actions })
  })
})
