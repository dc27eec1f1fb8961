// "Send a test to me" (issue 25): a member's own browser as a test device,
// kept out of every audience, count, list and export; a test reaches that
// member's devices only, through the real fan-out to a real push service on
// localhost (which decrypts it), as a broadcast from the dashboard. Who could
// misuse it: another member (their devices are never reachable), a viewer or
// an API key (refused), another project (its sends never reach them).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService, type TestSubscription } from '../../test/support/push-service.ts'
import { send, subscribeBrowser, waitForBroadcast } from '../../test/support/delivery.ts'
import { addMember, signIn, type SignedIn } from '../../test/support/members.ts'
import { TEST_MESSAGE } from './test-devices.service.ts'

let t: TestApp
let push: PushService
let project: TestProject
let editor: SignedIn
let owner: SignedIn
let editorId: string

beforeAll(async () => {
  push = await startPushService()
  t = await createTestApp({}, { worker: true })
  project = await t.project({ plan: 'plus' })
  editorId = await addMember(t, project.id, 'editor@example.com', 'editor')
  await addMember(t, project.id, 'owner@example.com', 'owner')
  await addMember(t, project.id, 'viewer@example.com', 'viewer')
  editor = await signIn(t, 'editor@example.com', undefined, { project: project.id })
  owner = await signIn(t, 'owner@example.com', undefined, { project: project.id })
}, 300_000)
afterAll(async () => {
  await t?.close()
  await push?.close()
})

const call = (method: 'GET' | 'POST' | 'DELETE', url: string, headers: Record<string, string>, payload?: unknown) =>
  t.app.inject({ method, url, headers, payload: payload as object })

/** This browser's subscription, made with the project's VAPID key, added as a test device. */
async function addDevice(who: SignedIn, label = 'Chrome on Linux'): Promise<{ id: string; browser: TestSubscription }> {
  const browser = push.createSubscription({ applicationServerKey: project.vapidPublic })
  const res = await call('POST', '/v1/test-devices', who.headers, { ...browser, label })
  expect(res.statusCode, res.body).toBe(201)
  return { id: res.json().id, browser }
}

describe('test devices', () => {
  it('are never subscribers: no audience, count, list or export has them; a test reaches them alone, as a dashboard broadcast', async () => {
    const real = await subscribeBrowser(t, project, push)
    const { id, browser } = await addDevice(editor)
    expect((await call('GET', '/v1/test-devices', editor.headers)).json()).toEqual({
      test_devices: [{ id, label: 'Chrome on Linux', push_service: 'other', created_at: expect.any(Number), last_delivered_at: null, consecutive_failures: 0 }],
    })
    expect((await call('GET', '/v1/subscribers', project.auth)).json().subscribers.map((s: { id: string }) => s.id)).toEqual([real.id])
    expect((await call('GET', `/v1/subscribers/${id}`, project.auth)).statusCode).toBe(404)
    expect((await call('GET', '/v1/subscribers/counts', project.auth)).json()).toEqual({ active: 1, unsubscribed: 0, expired: 0 })
    expect((await call('GET', '/v1/subscribers/export', project.auth)).body).not.toContain(browser.endpoint)
    expect((await call('GET', '/v1/me', project.auth)).json().project.usage.subscribers).toBe(1)
    const group = (await call('POST', '/v1/groups', project.auth, { name: 'Testers' })).json().id
    expect((await call('POST', `/v1/groups/${group}/subscribers`, project.auth, { subscriber_ids: [id, real.id] })).json()).toEqual({ added: 1 })

    const all = await send(t, project, { target: { type: 'all' }, notification: { title: 'Sale', body: 'Now' } })
    expect(await waitForBroadcast(t, project, all)).toMatchObject({ status: 'sent', audience: 1, delivered: 1 })
    const segment = await send(t, project, { target: { type: 'segment', filter: { not: { tag: 'x', exists: true } } }, notification: { title: 'Seg', body: 'Now' } })
    expect(await waitForBroadcast(t, project, segment)).toMatchObject({ audience: 1 })
    expect(push.receivedFor(browser.endpoint)).toEqual([])

    const usedBefore = (await call('GET', '/v1/me', project.auth)).json().project.usage.pushes_this_month
    const draft = { title: 'Draft title', body: 'Draft body', url: '/welcome' }
    const res = await call('POST', '/v1/test-devices/send', editor.headers, { notification: draft })
    expect(res.statusCode, res.body).toBe(201)
    expect(res.json()).toEqual({ broadcast_id: expect.stringMatching(/^bdc_/), audience: 1 })
    const testId = res.json().broadcast_id
    expect(await waitForBroadcast(t, project, testId)).toMatchObject({ status: 'sent', audience: 1, delivered: 1, failed: 0 })
    const received = push.receivedFor(browser.endpoint)
    expect(received.map((r) => r.payload)).toEqual([{ v: 1, project_id: project.id, broadcast_id: testId, ...draft }])
    expect(push.receivedFor(real.endpoint).map((r) => (r.payload as { broadcast_id: string }).broadcast_id)).not.toContain(testId)

    // A broadcast like any other: its view, the month's budget, the audit log.
    const view = (await call('GET', `/v1/broadcasts/${testId}`, project.auth)).json()
    expect(view).toMatchObject({ source: 'dashboard', target: { type: 'test_devices', user_id: editorId }, audience: 1, delivered: 1 })
    expect((await call('GET', '/v1/me', project.auth)).json().project.usage.pushes_this_month).toBe(usedBefore + 1)
    const audit = (await call('GET', `/v1/audit-log?target_id=${testId}`, project.auth)).json().entries
    expect(audit).toMatchObject([{ action: 'broadcast.send', actor: { type: 'user', id: editorId }, details: { target: 'test_devices', audience: 1, source: 'dashboard' } }])
    expect((await call('GET', '/v1/broadcasts/export?format=ndjson', project.auth)).body).toContain(testId)

    // Without a draft: the fixed test message.
    const fixed = (await call('POST', '/v1/test-devices/send', editor.headers, {})).json().broadcast_id
    await waitForBroadcast(t, project, fixed)
    expect(push.receivedFor(browser.endpoint).map((r) => r.payload).at(-1)).toMatchObject(TEST_MESSAGE)
  })

  it("another member never reaches, sees or removes someone's test devices", async () => {
    const { id, browser } = await addDevice(editor, 'Firefox')
    const before = push.receivedFor(browser.endpoint).length
    expect((await call('GET', '/v1/test-devices', owner.headers)).json()).toEqual({ test_devices: [] })
    const refused = await call('POST', '/v1/test-devices/send', owner.headers, {})
    expect(refused.statusCode).toBe(409)
    expect(refused.json().error.code).toBe('no_test_devices')
    expect((await call('DELETE', `/v1/test-devices/${id}`, owner.headers)).json()).toEqual({ deleted: 0 })
    expect((await call('GET', '/v1/test-devices', editor.headers)).json().test_devices.map((d: { id: string }) => d.id)).toContain(id)

    // The owner's own device: their test reaches it, not the editor's.
    const mine = await addDevice(owner, 'Owner laptop')
    const sent = (await call('POST', '/v1/test-devices/send', owner.headers, {})).json()
    expect(sent.audience).toBe(1)
    await waitForBroadcast(t, project, sent.broadcast_id)
    expect(push.receivedFor(mine.browser.endpoint)).toHaveLength(1)
    expect(push.receivedFor(browser.endpoint)).toHaveLength(before)
  })

  it('viewers and API keys are refused; another project never reaches them', async () => {
    const viewer = await signIn(t, 'viewer@example.com', undefined, { project: project.id })
    for (const [method, url] of [['GET', '/v1/test-devices'], ['POST', '/v1/test-devices/send'], ['POST', '/v1/test-devices']] as const) {
      const asViewer = await call(method, url, viewer.headers, method === 'POST' ? {} : undefined)
      expect(asViewer.statusCode).toBe(403)
      expect(asViewer.json().error.code).toBe('insufficient_role')
      const asKey = await call(method, url, project.auth, method === 'POST' ? {} : undefined)
      expect(asKey.statusCode).toBe(403)
      expect(asKey.json().error.code).toBe('insufficient_scope')
    }

    // The editor in another project: their devices of the first are not there.
    const other = await t.project({ plan: 'plus' })
    await addMember(t, other.id, 'editor@example.com', 'editor')
    const inOther = { ...editor.headers, 'x-herald-project': other.id }
    expect((await call('GET', '/v1/test-devices', inOther)).json()).toEqual({ test_devices: [] })
    expect((await call('POST', '/v1/test-devices/send', inOther, {})).json().error.code).toBe('no_test_devices')
    const firstProjects = (await call('GET', '/v1/test-devices', editor.headers)).json().test_devices
    expect((await call('DELETE', `/v1/test-devices/${firstProjects[0].id}`, inOther)).json()).toEqual({ deleted: 0 })
    // An "all" broadcast of the other project reaches no test device.
    const all = await send(t, other, { target: { type: 'all' }, notification: { title: 'Other', body: 'Project' } })
    expect(await waitForBroadcast(t, other, all)).toMatchObject({ audience: 0 })
  })

  it('stays a test device when a subscribe or an import names its endpoint', async () => {
    const { id, browser } = await addDevice(owner, 'Named again')
    const countsBefore = (await call('GET', '/v1/subscribers/counts', project.auth)).json()
    const again = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: { endpoint: browser.endpoint, keys: browser.keys } })
    expect(again.statusCode, again.body).toBe(201)
    const line = JSON.stringify({ endpoint: browser.endpoint, keys: browser.keys, status: 'active' })
    const imported = await t.app.inject({ method: 'POST', url: '/v1/subscribers/import', headers: { ...project.auth, 'content-type': 'application/x-ndjson' }, payload: `${line}\n` })
    expect(imported.statusCode, imported.body).toBe(200)
    expect((await t.ctx.db.query<{ status: string }>('SELECT status FROM subscribers WHERE id = $1', [id])).rows).toEqual([{ status: 'test' }])
    expect((await call('GET', '/v1/subscribers/counts', project.auth)).json()).toEqual(countsBefore)
    expect((await call('GET', `/v1/subscribers/${id}`, project.auth)).statusCode).toBe(404)
  })

  it("a real subscriber's endpoint is refused as a test device and stays as it was; removing a device, or the member, deletes its subscription", async () => {
    const real = await subscribeBrowser(t, project, push)
    const taken = await call('POST', '/v1/test-devices', editor.headers, { endpoint: real.endpoint, keys: real.keys })
    expect(taken.statusCode).toBe(400)
    expect(taken.json().error.code).toBe('invalid_request')
    expect((await call('GET', `/v1/subscribers/${real.id}`, project.auth)).json()).toMatchObject({ status: 'active' })

    const { id } = await addDevice(editor, 'To remove')
    expect((await call('DELETE', `/v1/test-devices/${id}`, editor.headers)).json()).toEqual({ deleted: 1 })
    expect((await t.ctx.db.query('SELECT 1 FROM subscribers WHERE id = $1', [id])).rows).toEqual([])

    const left = await addDevice(editor, 'Leaves with the member')
    const removed = await call('DELETE', `/v1/members/${editorId}`, owner.headers)
    expect(removed.statusCode, removed.body).toBe(200)
    expect((await t.ctx.db.query("SELECT id FROM subscribers WHERE project_id = $1 AND status = 'test' AND id = $2", [project.id, left.id])).rows).toEqual([])
    expect((await t.ctx.db.query('SELECT 1 FROM member_test_devices WHERE user_id = $1 AND project_id = $2', [editorId, project.id])).rows).toEqual([])
  })
})
