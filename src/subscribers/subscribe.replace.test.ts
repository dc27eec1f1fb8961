// POST /v1/subscribe with `source` and `replaces` (issue 23): the SDK's
// migrate mode and the service worker's pushsubscriptionchange. What the new
// subscriber takes over, the proof `replaces` needs, and what a caller who
// knows someone's endpoint but not their auth secret can do: nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { subscription } from './subscribers.fixtures.ts'

let t: TestApp
let p: TestProject
let groupA: string
let groupB: string

beforeAll(async () => {
  t = await createTestApp()
  p = await t.project()
  const group = async (name: string) => (await t.app.inject({ method: 'POST', url: '/v1/groups', headers: p.auth, payload: { name } })).json().id as string
  groupA = await group('news')
  groupB = await group('sale')
})
afterAll(async () => {
  await t.close()
})

type Sub = { endpoint: string; keys: { p256dh: string; auth: string } }

function subscribeAs(project: TestProject, payload: Record<string, unknown>) {
  return t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload })
}

async function view(project: TestProject, id: string) {
  return (await t.app.inject({ method: 'GET', url: `/v1/subscribers/${id}`, headers: project.auth })).json()
}

/** A subscriber with an external id, two tags (one set by the server) and a group. */
async function original(project: TestProject = p, groupId: string = groupA): Promise<{ sub: Sub; id: string }> {
  const sub = subscription() as Sub
  const res = await subscribeAs(project, { ...sub, external_id: 'user_1', group_ids: [groupId], tags: { plan: 'pro' } })
  expect(res.statusCode).toBe(201)
  const id = res.json().id
  const tagged = await t.app.inject({ method: 'PATCH', url: `/v1/subscribers/${id}`, headers: project.auth, payload: { tags: { score: 7 }, merge: true } })
  expect(tagged.statusCode).toBe(200)
  return { sub, id }
}

describe('POST /v1/subscribe: source', () => {
  it('records migrated on a new subscriber, lists it under ?source=migrated, and keeps a known endpoint\'s source', async () => {
    const sub = subscription()
    const res = await subscribeAs(p, { ...sub, source: 'migrated' })
    expect(res.statusCode).toBe(201)
    expect((await view(p, res.json().id)).source).toBe('migrated')
    const listed = await t.app.inject({ method: 'GET', url: '/v1/subscribers?source=migrated', headers: p.auth })
    expect(listed.json().subscribers.map((s: { id: string }) => s.id)).toContain(res.json().id)
    // A repeat subscribe (without source) does not change how it arrived.
    expect((await subscribeAs(p, sub)).json().id).toBe(res.json().id)
    expect((await view(p, res.json().id)).source).toBe('migrated')
    const plain = await subscribeAs(p, subscription())
    expect((await view(p, plain.json().id)).source).toBe('subscribe')
  })

  it('refuses import and anything else with 400 naming source, storing nothing', async () => {
    for (const source of ['import', 'MIGRATED', 1, null]) {
      const sub = subscription()
      const res = await subscribeAs(p, { ...sub, source })
      expect(res.statusCode).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
      expect(res.json().error.issues.map((i: { path: string }) => i.path)).toContain('source')
      const found = await t.database.db.query('SELECT 1 FROM subscribers WHERE endpoint = $1', [sub.endpoint])
      expect(found.rows).toEqual([])
    }
  })
})

describe('POST /v1/subscribe: replaces', () => {
  it('with the old auth secret: the new subscriber takes its external_id, tags and groups, and the old one expires', async () => {
    const old = await original()
    const next = subscription() as Sub
    const res = await subscribeAs(p, { ...next, group_ids: [groupB], tags: { plan: 'max' }, replaces: { endpoint: old.sub.endpoint, auth: old.sub.keys.auth } })
    expect(res.statusCode).toBe(201)
    expect(res.json().id).not.toBe(old.id)
    expect(await view(p, res.json().id)).toMatchObject({
      endpoint: next.endpoint, status: 'active', external_id: 'user_1',
      // The page's tag wins; the server's stays.
      tags: { plan: 'max', score: 7 },
      group_ids: [groupA, groupB].sort(),
    })
    expect(await view(p, old.id)).toMatchObject({ status: 'expired', external_id: 'user_1', tags: { plan: 'pro', score: 7 } })
    // A send to the user now reaches the new browser only.
    const devices = await t.app.inject({ method: 'GET', url: '/v1/subscribers?external_id=user_1&status=active', headers: p.auth })
    expect(devices.json().subscribers.filter((s: { endpoint: string }) => s.endpoint === old.sub.endpoint)).toEqual([])
  })

  it('an external_id given (or null) wins over the old one; padding on the secret does not matter', async () => {
    const old = await original()
    const res = await subscribeAs(p, { ...subscription(), external_id: null, replaces: { endpoint: old.sub.endpoint, auth: `${old.sub.keys.auth}==` } })
    expect(await view(p, res.json().id)).toMatchObject({ external_id: null, tags: { plan: 'pro', score: 7 }, group_ids: [groupA] })
    expect((await view(p, old.id)).status).toBe('expired')
  })

  it('attack: knowing the endpoint without its auth secret takes nothing and unsubscribes no one', async () => {
    const victim = await original()
    const attacker = subscription() as Sub
    // The attacker's own auth secret, a guess, and another subscriber's secret.
    for (const auth of [attacker.keys.auth, 'AAAAAAAAAAAAAAAAAAAAAA', (subscription() as Sub).keys.auth]) {
      const res = await subscribeAs(p, { ...attacker, replaces: { endpoint: victim.sub.endpoint, auth } })
      expect(res.statusCode).toBe(201)
      expect(await view(p, res.json().id)).toMatchObject({ external_id: null, tags: {}, group_ids: [] })
    }
    expect(await view(p, victim.id)).toMatchObject({ status: 'active', external_id: 'user_1', tags: { plan: 'pro', score: 7 }, group_ids: [groupA] })
  })

  it('attack: another project\'s endpoint and secret take nothing from it, and the answer is the same as for an unknown endpoint', async () => {
    const other = await t.project()
    const otherGroup = (await t.app.inject({ method: 'POST', url: '/v1/groups', headers: other.auth, payload: { name: 'theirs' } })).json().id
    const victim = await original(other, otherGroup)
    const a = await subscribeAs(p, { ...subscription(), replaces: { endpoint: victim.sub.endpoint, auth: victim.sub.keys.auth } })
    const b = await subscribeAs(p, { ...subscription(), replaces: { endpoint: 'https://fcm.googleapis.com/fcm/send/unknown', auth: victim.sub.keys.auth } })
    expect([a.statusCode, b.statusCode]).toEqual([201, 201])
    expect(Object.keys(a.json())).toEqual(Object.keys(b.json()))
    expect(await view(p, a.json().id)).toMatchObject({ external_id: null, tags: {}, group_ids: [] })
    expect(await view(other, victim.id)).toMatchObject({ status: 'active', external_id: 'user_1', group_ids: [otherGroup] })
  })

  it('replacing itself is a plain repeat; a bad replaces is 400 naming the field and stores nothing', async () => {
    const old = await original()
    const res = await subscribeAs(p, { ...old.sub, replaces: { endpoint: old.sub.endpoint, auth: old.sub.keys.auth } })
    expect(res.json().id).toBe(old.id)
    expect((await view(p, old.id)).status).toBe('active')

    const cases: Array<[unknown, string]> = [
      [{ endpoint: old.sub.endpoint }, 'replaces.auth'],
      [{ endpoint: old.sub.endpoint, auth: 'not base64url!' }, 'replaces.auth'],
      [{ auth: old.sub.keys.auth }, 'replaces.endpoint'],
      [{ endpoint: old.sub.endpoint, auth: old.sub.keys.auth, extra: 1 }, 'replaces'],
      ['yes', 'replaces'],
    ]
    for (const [replaces, path] of cases) {
      const sub = subscription()
      const bad = await subscribeAs(p, { ...sub, replaces })
      expect(bad.statusCode).toBe(400)
      expect(bad.json().error.issues.map((i: { path: string }) => i.path).join(' ')).toContain(path)
      expect((await t.database.db.query('SELECT 1 FROM subscribers WHERE endpoint = $1', [sub.endpoint])).rows).toEqual([])
    }
    expect(await view(p, old.id)).toMatchObject({ status: 'active', external_id: 'user_1' })
  })

  it('at the plan\'s cap a replacement still passes (the old one stops counting), a plain new subscribe does not', async () => {
    const capped = await t.project({ limits: { subscribers: 1 } })
    const old = subscription() as Sub
    expect((await subscribeAs(capped, old)).statusCode).toBe(201)
    expect((await subscribeAs(capped, subscription())).json().error.code).toBe('subscriber_limit_reached')
    const res = await subscribeAs(capped, { ...subscription(), replaces: { endpoint: old.endpoint, auth: old.keys.auth } })
    expect(res.statusCode).toBe(201)
    const counts = await t.app.inject({ method: 'GET', url: '/v1/subscribers/counts', headers: capped.auth })
    expect(counts.json()).toMatchObject({ active: 1, expired: 1 })
  })
})
