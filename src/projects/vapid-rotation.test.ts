// VAPID key rotation (issue 23): a project holds several key pairs, each
// subscription is signed with the pair it was made with (the local push
// service verifies every token against the key the subscription was created
// with), retirement is refused while a key is in use unless the operator
// forces it, and a push service's key-mismatch answer is recorded as its own
// failure reason. Owners only, one project never reaches another's keys.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { send, waitForBroadcast } from '../../test/support/delivery.ts'
import { addMember, signIn, type SignedIn } from '../../test/support/members.ts'
import { startPushService, type PushService, type TestSubscription } from '../../test/support/push-service.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.ts'
import { generateVapidKeys } from './vapid-keys.ts'
import { isVapidKeyMismatch } from '../delivery/send-batch.ts'
import { runProjectCommand } from './cli.ts'

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
let t: TestApp
let push: PushService
/** Answers a key mismatch as Apple does: 400 {"reason":"VapidPkHashMismatch"}. */
let apple: PushService
let receiver: WebhookReceiver

beforeAll(async () => {
  ;[push, apple, receiver] = await Promise.all([startPushService(), startPushService({ keyMismatch: 'apple' }), startWebhookReceiver()])
  t = await createTestApp({}, { worker: true })
})
afterAll(async () => {
  await t?.close()
  await Promise.all([push?.close(), apple?.close(), receiver?.close()])
})

const keysOf = async (projectId: string) => (await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${projectId}/vapid-keys`, headers: admin })).json().vapid_keys
const rotate = (projectId: string, payload?: Record<string, string>) =>
  t.app.inject({ method: 'POST', url: `/admin/v1/projects/${projectId}/vapid-keys/rotate`, headers: admin, ...(payload ? { payload } : {}) })
const retire = (projectId: string, keyId: string, force = false) =>
  t.app.inject({ method: 'DELETE', url: `/admin/v1/projects/${projectId}/vapid-keys/${keyId}${force ? '?force=true' : ''}`, headers: admin })

async function subscribe(project: TestProject, subscription: TestSubscription, extra: Record<string, unknown> = {}) {
  const res = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: { ...subscription, ...extra } })
  expect(res.statusCode, res.body).toBe(201)
  const view = await t.app.inject({ method: 'GET', url: `/v1/subscribers/${res.json().id}`, headers: project.auth })
  return view.json() as { id: string; status: string; vapid_key_id: string }
}

describe('rotation keeps every subscriber, each signed with its own key', () => {
  let project: TestProject
  let first: { id: string; public_key: string }
  let second: { id: string; public_key: string }
  let old: TestSubscription
  let oldId: string
  let fresh: TestSubscription

  beforeAll(async () => {
    project = await t.project()
  })

  it('lists the original key as current, with its active subscribers', async () => {
    old = push.createSubscription({ applicationServerKey: project.vapidPublic })
    const view = await subscribe(project, old)
    oldId = view.id
    const keys = await keysOf(project.id)
    expect(keys).toEqual([{ id: view.vapid_key_id, public_key: project.vapidPublic, current: true, created_at: expect.any(Number), retired_at: null, active_subscribers: 1 }])
    first = keys[0]
  })

  it('rotate makes a new key current: new subscriptions take it, the old one stays on its key', async () => {
    const res = await rotate(project.id)
    expect(res.statusCode).toBe(201)
    second = res.json().vapid_key
    expect(second).toMatchObject({ current: true, active_subscribers: 0, retired_at: null })
    expect(second.public_key).not.toBe(first.public_key)
    expect(res.json().vapid_keys.map((k: { id: string; current: boolean; active_subscribers: number }) => [k.id, k.current, k.active_subscribers]))
      .toEqual([[first.id, false, 1], [second.id, true, 0]])
    // The SDK's key endpoint and the project's view serve the new key.
    expect((await t.app.inject({ method: 'GET', url: `/v1/vapid-public-key?project=${project.id}` })).json()).toEqual({ vapid_public: second.public_key })
    expect((await t.app.inject({ method: 'GET', url: '/v1/me', headers: project.auth })).json().project.vapid_public).toBe(second.public_key)

    fresh = push.createSubscription({ applicationServerKey: second.public_key })
    expect((await subscribe(project, fresh)).vapid_key_id).toBe(second.id)
    expect((await t.app.inject({ method: 'GET', url: `/v1/subscribers/${oldId}`, headers: project.auth })).json().vapid_key_id).toBe(first.id)
  })

  it('a broadcast reaches both: the push service verifies each token against the key its subscription was made with', async () => {
    push.reset()
    const id = await send(t, project, { target: { type: 'all' }, notification: { title: 'Both', body: 'keys' } })
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 2, failed: 0 })
    expect(push.rejected).toEqual([])
    expect(push.receivedFor(old.endpoint)[0].headers.authorization).toContain(`k=${first.public_key}`)
    expect(push.receivedFor(fresh.endpoint)[0].headers.authorization).toContain(`k=${second.public_key}`)
  })

  it('a subscriber on the old key that subscribes again with the new one moves to it; an unknown key is 400 and changes nothing', async () => {
    const moving = push.createSubscription({ applicationServerKey: first.public_key })
    expect((await subscribe(project, moving, { vapid_public: first.public_key })).vapid_key_id).toBe(first.id)
    // A repeat that names no key (an API call, an SDK from before rotation) keeps the stored one: the endpoint's key cannot change.
    expect((await subscribe(project, moving)).vapid_key_id).toBe(first.id)
    const bad = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: { ...moving, vapid_public: generateVapidKeys().publicKey } })
    expect(bad.statusCode).toBe(400)
    expect(bad.json().error.issues.map((i: { path: string }) => i.path)).toEqual(['vapid_public'])
    const moved = await subscribe(project, moving, { vapid_public: second.public_key })
    expect(moved.vapid_key_id).toBe(second.id)
    // Unsubscribed, so the counts below are the two subscribers above.
    await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${project.id}`, payload: { endpoint: moving.endpoint } })
  })

  it('an imported line belongs to the current key, or to the key its vapid_public names; an unknown key skips the line', async () => {
    const plain = push.createSubscription()
    const named = push.createSubscription({ applicationServerKey: first.public_key })
    const unknown = push.createSubscription()
    const body = [{ ...plain }, { ...named, vapid_public: first.public_key }, { ...unknown, vapid_public: generateVapidKeys().publicKey }].map((l) => JSON.stringify(l)).join('\n')
    const res = await t.app.inject({ method: 'POST', url: '/v1/subscribers/import', headers: { ...project.auth, 'content-type': 'application/x-ndjson' }, payload: `${body}\n` })
    expect(res.json()).toMatchObject({ imported: 2, skipped: 1, errors: [{ line: 3, field: 'vapid_public', reason: expect.stringContaining('not one of this project') }] })
    const keyOf = async (endpoint: string) => (await t.ctx.db.query<{ vapid_key_id: string }>('SELECT vapid_key_id FROM subscribers WHERE endpoint = $1', [endpoint])).rows[0]?.vapid_key_id
    expect(await keyOf(plain.endpoint)).toBe(second.id)
    expect(await keyOf(named.endpoint)).toBe(first.id)
    expect(await keyOf(unknown.endpoint)).toBeUndefined()
    // The same file again changes nothing: each keeps its key.
    const again = await t.app.inject({ method: 'POST', url: '/v1/subscribers/import', headers: { ...project.auth, 'content-type': 'application/x-ndjson' }, payload: `${body}\n` })
    expect(again.json()).toMatchObject({ imported: 0, updated: 0, skipped: 1 })
    expect([await keyOf(plain.endpoint), await keyOf(named.endpoint)]).toEqual([second.id, first.id])
    await t.ctx.db.query("UPDATE subscribers SET status = 'unsubscribed' WHERE endpoint = ANY($1::text[])", [[plain.endpoint, named.endpoint]])
  })

  it('retiring a key in use is refused with the count; the current key cannot be retired; nothing changes', async () => {
    const inUse = await retire(project.id, first.id)
    expect(inUse.statusCode).toBe(409)
    expect(inUse.json().error).toMatchObject({ code: 'vapid_key_has_subscribers', active_subscribers: 1 })
    const current = await retire(project.id, second.id, true)
    expect(current.statusCode).toBe(409)
    expect(current.json().error.code).toBe('vapid_key_current')
    expect((await keysOf(project.id)).map((k: { retired_at: number | null }) => k.retired_at)).toEqual([null, null])
    expect((await retire(project.id, 'vk_nope')).json().error.code).toBe('vapid_key_not_found')
  })

  it('forced retirement expires the subscriptions on that key, answers their count, and is audited', async () => {
    const res = await retire(project.id, first.id, true)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ expired_subscribers: 1, vapid_key: { id: first.id, current: false, retired_at: expect.any(Number) } })
    expect((await t.app.inject({ method: 'GET', url: `/v1/subscribers/${oldId}`, headers: project.auth })).json().status).toBe('expired')
    // Again: the same answer, nothing more expired.
    expect((await retire(project.id, first.id, true)).json()).toMatchObject({ expired_subscribers: 0 })
    const audit = await t.ctx.db.query<{ action: string; target_id: string; details: Record<string, unknown> }>(
      "SELECT action, target_id, details FROM audit_log WHERE project_id = $1 AND action LIKE 'vapid_key.%' ORDER BY id", [project.id],
    )
    expect(audit.rows).toEqual([
      { action: 'vapid_key.rotate', target_id: second.id, details: { vapid_public: second.public_key, previous_key_id: first.id, imported: false } },
      { action: 'vapid_key.retire', target_id: first.id, details: { vapid_public: first.public_key, forced: true, expired_subscribers: 1 } },
    ])
    expect(JSON.stringify(audit.rows)).not.toMatch(/private/)

    push.reset()
    const id = await send(t, project, { target: { type: 'all' }, notification: { title: 'After', body: 'retirement' } })
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', audience: 1, delivered: 1 })
    expect(push.receivedFor(fresh.endpoint)).toHaveLength(1)
    expect(push.rejected).toEqual([])
  })

  it('a key with no active subscriber is retired without force; an imported pair can be rotated in', async () => {
    const imported = generateVapidKeys()
    const res = await rotate(project.id, { vapid_private: imported.privateKey, vapid_public: imported.publicKey })
    expect(res.statusCode).toBe(201)
    expect(res.json().vapid_key.public_key).toBe(imported.publicKey)
    // The subscriber on the second key leaves; then it retires without force.
    await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${project.id}`, payload: { endpoint: fresh.endpoint } })
    expect((await retire(project.id, second.id)).json()).toMatchObject({ expired_subscribers: 0, vapid_key: { id: second.id } })
    const bad = await rotate(project.id, { vapid_private: imported.privateKey, vapid_public: generateVapidKeys().publicKey })
    expect(bad.statusCode).toBe(400)
    expect(bad.json().error.issues.map((i: { path: string }) => i.path)).toEqual(['vapid_public'])
    expect(await keysOf(project.id)).toHaveLength(3)
  })
})

describe('a push service answering a key mismatch', () => {
  it('classifies each push service\'s answer: Apple 400 VapidPkHashMismatch, FCM 403, Mozilla 401; not others', () => {
    expect(isVapidKeyMismatch('apple', { kind: 'rejected', status: 400, reason: 'VapidPkHashMismatch' })).toBe(true)
    expect(isVapidKeyMismatch('apple', { kind: 'rejected', status: 400, reason: 'BadDeviceToken' })).toBe(false)
    expect(isVapidKeyMismatch('apple', { kind: 'rejected', status: 403 })).toBe(false) // BadJwtToken
    expect(isVapidKeyMismatch('fcm', { kind: 'rejected', status: 403 })).toBe(true)
    expect(isVapidKeyMismatch('mozilla', { kind: 'rejected', status: 401 })).toBe(true)
    expect(isVapidKeyMismatch('other', { kind: 'rejected', status: 403 })).toBe(false)
    expect(isVapidKeyMismatch('fcm', { kind: 'rejected', status: 400 })).toBe(false)
  })

  it('is counted as vapid_key_mismatch, in the broadcast, its event and its webhook', async () => {
    const project = await t.project()
    const hook = `/mismatch-${project.id}`
    expect((await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: project.auth, payload: { url: receiver.url + hook, events: ['failed'] } })).statusCode).toBe(201)
    // Made with another provider's key: every push Herald signs with its own is refused as Apple refuses it.
    const foreign = apple.createSubscription({ applicationServerKey: generateVapidKeys().publicKey })
    const sub = await subscribe(project, foreign)
    const id = await send(t, project, { target: { type: 'all' }, notification: { title: 'Wrong', body: 'key' } })
    await waitForBroadcast(t, project, id)
    const broadcast = (await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: project.auth })).json()
    expect(broadcast).toMatchObject({ delivered: 0, failed: 1, failures: { gone: 0, rejected: 0, unreachable: 0, vapid_key_mismatch: 1 } })
    expect(broadcast.last_error).toMatchObject({ status: 400, reason: 'vapid_key_mismatch' })
    const event = await t.ctx.db.query<{ meta: unknown }>("SELECT meta FROM events WHERE broadcast_id = $1 AND type = 'failed'", [id])
    expect(event.rows).toEqual([{ meta: { reason: 'vapid_key_mismatch', status: 400 } }])
    for (let waited = 0; receiver.on(hook).length === 0; waited += 25) {
      if (waited > 10_000) throw new Error('no webhook')
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    expect(receiver.on(hook)[0].json).toMatchObject({ type: 'failed', subscriber_id: sub.id, meta: { reason: 'vapid_key_mismatch', status: 400 } })
    // Recorded, not expired: the key, not the subscription, may be what is wrong (an import with the wrong pair).
    expect((await t.app.inject({ method: 'GET', url: `/v1/subscribers/${sub.id}`, headers: project.auth })).json().status).toBe('active')
  })
})

describe('who may list, rotate and retire', () => {
  let a: TestProject
  let b: TestProject
  let owner: SignedIn
  let ownerB: SignedIn
  let adminSession: SignedIn

  beforeAll(async () => {
    ;[a, b] = await Promise.all([t.project(), t.project()])
    await addMember(t, a.id, 'owner-a@example.com', 'owner')
    await addMember(t, a.id, 'admin-a@example.com', 'admin')
    await addMember(t, b.id, 'owner-b@example.com', 'owner')
    ;[owner, adminSession, ownerB] = await Promise.all([
      signIn(t, 'owner-a@example.com', undefined, { project: a.id }),
      signIn(t, 'admin-a@example.com', undefined, { project: a.id }),
      signIn(t, 'owner-b@example.com', undefined, { project: b.id }),
    ])
  })

  it('an owner lists, rotates and retires an unused key, but cannot force one in use', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/v1/vapid-keys', headers: owner.cookie })).json().vapid_keys).toHaveLength(1)
    const original = (await keysOf(a.id))[0]
    await subscribe(a, push.createSubscription({ applicationServerKey: a.vapidPublic }))
    const rotated = await t.app.inject({ method: 'POST', url: '/v1/vapid-keys/rotate', headers: owner.headers })
    expect(rotated.statusCode).toBe(201)
    const refused = await t.app.inject({ method: 'DELETE', url: `/v1/vapid-keys/${original.id}?force=true`, headers: owner.headers })
    expect(refused.statusCode).toBe(409)
    expect(refused.json().error).toMatchObject({ code: 'vapid_key_has_subscribers', active_subscribers: 1 })
    const spare = (await rotate(a.id)).json().vapid_key
    await rotate(a.id)
    const retired = await t.app.inject({ method: 'DELETE', url: `/v1/vapid-keys/${spare.id}`, headers: owner.headers })
    expect(retired.statusCode).toBe(200)
    expect(retired.json().expired_subscribers).toBe(0)
    const audit = await t.ctx.db.query<{ actor_type: string; action: string }>("SELECT actor_type, action FROM audit_log WHERE project_id = $1 AND action LIKE 'vapid_key.%' ORDER BY id", [a.id])
    expect(audit.rows.map((r) => `${r.actor_type} ${r.action}`)).toEqual(['user vapid_key.rotate', 'operator vapid_key.rotate', 'operator vapid_key.rotate', 'user vapid_key.retire'])
  })

  it('an admin, an API key of scope full and a signed-out caller are refused, and nothing changes', async () => {
    const before = await keysOf(a.id)
    for (const [method, url] of [['GET', '/v1/vapid-keys'], ['POST', '/v1/vapid-keys/rotate'], ['DELETE', `/v1/vapid-keys/${before[0].id}`]] as const) {
      const asAdmin = await t.app.inject({ method, url, headers: adminSession.headers })
      expect(asAdmin.statusCode, `${method} ${url}`).toBe(403)
      expect(asAdmin.json().error.code).toBe('insufficient_role')
      const asKey = await t.app.inject({ method, url, headers: a.auth })
      expect(asKey.statusCode).toBe(403)
      expect(asKey.json().error.code).toBe('insufficient_scope')
      expect((await t.app.inject({ method, url })).statusCode).toBe(401)
      expect((await t.app.inject({ method, url: `/admin/v1/projects/${a.id}${url.slice(3)}`, headers: a.auth })).statusCode).toBe(401)
    }
    expect(await keysOf(a.id)).toEqual(before)
  })

  it("project B's owner never reaches A's keys: 404 on A's key id, and B's list holds only B's", async () => {
    const aKeys = await keysOf(a.id)
    const unused = aKeys.find((k: { current: boolean; retired_at: number | null; active_subscribers: number }) => !k.current && k.retired_at === null && k.active_subscribers === 0)
    expect(unused).toBeDefined()
    const res = await t.app.inject({ method: 'DELETE', url: `/v1/vapid-keys/${unused.id}`, headers: ownerB.headers })
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toBe('vapid_key_not_found')
    const operatorWrongProject = await retire(b.id, unused.id, true)
    expect(operatorWrongProject.json().error.code).toBe('vapid_key_not_found')
    const list = (await t.app.inject({ method: 'GET', url: '/v1/vapid-keys', headers: ownerB.cookie })).json().vapid_keys
    expect(list.map((k: { id: string }) => k.id)).toEqual([(await keysOf(b.id))[0].id])
    expect(JSON.stringify(list)).not.toContain(a.id.slice(4))
    expect(await keysOf(a.id)).toEqual(aKeys)
    expect((await rotate('prj_00000000000000000000000000')).json().error.code).toBe('project_not_found')
  })
})

describe('herald projects vapid-keys | rotate-vapid-keys | retire-vapid-key (in process: the same code the binary runs)', () => {
  /** Runs one CLI command; its exit code and the JSON it printed. */
  async function herald(...args: string[]): Promise<{ code: number | null; out: any; err: string }> {
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined)
    const error = vi.spyOn(console, 'error').mockImplementation(() => undefined)
    try {
      const code = await runProjectCommand(t.ctx.db, t.ctx.config, args[0], args.slice(1))
      const printed = log.mock.calls.map((c) => String(c[0])).join('\n')
      return { code, out: printed ? JSON.parse(printed) : null, err: error.mock.calls.map((c) => String(c[0])).join('\n') }
    } finally {
      log.mockRestore()
      error.mockRestore()
    }
  }

  it('lists, rotates (fresh or imported), and retires with --force, printing the count', async () => {
    const project = await t.project()
    await subscribe(project, push.createSubscription({ applicationServerKey: project.vapidPublic }))
    const listed = await herald('projects', 'vapid-keys', project.id)
    expect(listed.code).toBe(0)
    const original = listed.out.vapid_keys[0]
    expect(original).toMatchObject({ current: true, active_subscribers: 1 })
    const imported = generateVapidKeys()
    const rotated = await herald('projects', 'rotate-vapid-keys', project.id, `--vapid-private=${imported.privateKey}`, `--vapid-public=${imported.publicKey}`)
    expect(rotated.out.vapid_key).toMatchObject({ public_key: imported.publicKey, current: true })
    const half = await herald('projects', 'rotate-vapid-keys', project.id, `--vapid-public=${imported.publicKey}`)
    expect(half.code).toBe(2)
    const refused = await herald('projects', 'retire-vapid-key', project.id, original.id)
    expect(refused.code).toBe(1)
    expect(JSON.parse(refused.err).error).toMatchObject({ code: 'vapid_key_has_subscribers', active_subscribers: 1 })
    const forced = await herald('projects', 'retire-vapid-key', project.id, original.id, '--force')
    expect(forced).toMatchObject({ code: 0, out: { expired_subscribers: 1, vapid_key: { id: original.id } } })
    const audit = await t.ctx.db.query<{ actor_type: string; action: string }>("SELECT actor_type, action FROM audit_log WHERE project_id = $1 AND action LIKE 'vapid_key.%' ORDER BY id", [project.id])
    expect(audit.rows).toEqual([{ actor_type: 'operator', action: 'vapid_key.rotate' }, { actor_type: 'operator', action: 'vapid_key.retire' }])
  })
})
