// Groups: create, list, rename, delete (api.md 4.1-4.4), the cap, names,
// boundaries, auth and cross-project isolation. Memberships: groups.members.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { subscribe } from '../subscribers/subscribers.fixtures.ts'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
})
afterAll(async () => {
  await t.close()
})

async function createGroup(project: TestProject, payload: Record<string, unknown>) {
  return t.app.inject({ method: 'POST', url: '/v1/groups', headers: project.auth, payload })
}

async function listGroups(project: TestProject) {
  const res = await t.app.inject({ method: 'GET', url: '/v1/groups', headers: project.auth })
  expect(res.statusCode).toBe(200)
  return res.json().groups as Array<{ id: string; name: string; description: string | null; member_count: number; created_at: number }>
}

async function newGroup(project: TestProject, name: string, description?: string): Promise<string> {
  const res = await createGroup(project, description === undefined ? { name } : { name, description })
  expect(res.statusCode).toBe(201)
  return res.json().id
}

function patch(project: TestProject, id: string, payload: Record<string, unknown>) {
  return t.app.inject({ method: 'PATCH', url: `/v1/groups/${id}`, headers: project.auth, payload })
}

function expectInvalid(res: { statusCode: number; json(): any }, path: string) {
  expect(res.statusCode).toBe(400)
  expect(res.json().error.code).toBe('invalid_request')
  expect(res.json().error.issues.map((issue: { path: string }) => issue.path)).toContain(path)
}

describe('GET /v1/groups', () => {
  it('answers an empty list for a project without groups', async () => {
    const p = await t.project()
    expect((await t.app.inject({ method: 'GET', url: '/v1/groups', headers: p.auth })).json()).toEqual({ groups: [] })
  })

  it('lists every group, newest first, with member_count and created_at in ms', async () => {
    const p = await t.project({ limits: { groups: 10 } })
    const before = Date.now()
    const first = await newGroup(p, 'first', 'the first one')
    const second = await newGroup(p, 'second')
    const after = Date.now()
    const a = await subscribe(t, p, { group_ids: [first] })
    await subscribe(t, p, { group_ids: [first] })
    await t.app.inject({ method: 'POST', url: `/v1/groups/${second}/subscribers`, headers: p.auth, payload: { subscriber_ids: [a] } })

    const groups = await listGroups(p)
    expect(groups).toEqual([
      { id: second, name: 'second', description: null, member_count: 1, created_at: expect.any(Number) },
      { id: first, name: 'first', description: 'the first one', member_count: 2, created_at: expect.any(Number) },
    ])
    for (const group of groups) {
      expect(group.created_at).toBeGreaterThanOrEqual(before - 1000)
      expect(group.created_at).toBeLessThanOrEqual(after + 1000)
    }
  })

  it('lists more groups than a page of other lists would hold: no pagination', async () => {
    const p = await t.project({ limits: { groups: 60 } })
    for (let i = 0; i < 55; i++) await newGroup(p, `g${i}`)
    expect(await listGroups(p)).toHaveLength(55)
  })
})

describe('POST /v1/groups', () => {
  it('creates a group: 201 { id: grp_… }', async () => {
    const p = await t.project()
    const res = await createGroup(p, { name: 'Newsletter', description: 'weekly' })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toEqual({ id: expect.stringMatching(/^grp_[0-9a-z]{26}$/) })
    expect(await listGroups(p)).toMatchObject([{ id: res.json().id, name: 'Newsletter', description: 'weekly', member_count: 0 }])
  })

  it('takes a name of 64 characters and refuses 65 or none', async () => {
    const p = await t.project()
    expect((await createGroup(p, { name: 'n'.repeat(64) })).statusCode).toBe(201)
    expectInvalid(await createGroup(p, { name: 'n'.repeat(65) }), 'name')
    expectInvalid(await createGroup(p, { name: '' }), 'name')
    expectInvalid(await createGroup(p, {}), 'name')
    expectInvalid(await createGroup(p, { name: 42 }), 'name')
    expect(await listGroups(p)).toHaveLength(1)
  })

  it('counts characters, not bytes, in the name', async () => {
    const p = await t.project()
    expect((await createGroup(p, { name: 'é'.repeat(64) })).statusCode).toBe(201)
  })

  it('takes a description of 512 characters and refuses 513', async () => {
    const p = await t.project()
    expect((await createGroup(p, { name: 'a', description: 'd'.repeat(512) })).statusCode).toBe(201)
    expectInvalid(await createGroup(p, { name: 'b', description: 'd'.repeat(513) }), 'description')
    expectInvalid(await createGroup(p, { name: 'c', description: 7 }), 'description')
    expect((await createGroup(p, { name: 'd', description: null })).statusCode).toBe(201)
    expect((await listGroups(p)).map((g) => [g.name, g.description?.length ?? null])).toEqual([['d', null], ['a', 512]])
  })

  it('answers 409 group_name_taken for a name the project already uses, but not for another project', async () => {
    const a = await t.project()
    const b = await t.project()
    await newGroup(a, 'vip')
    const res = await createGroup(a, { name: 'vip' })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toEqual({ error: { code: 'group_name_taken', message: expect.stringContaining('vip') } })
    expect(await listGroups(a)).toHaveLength(1)
    expect((await createGroup(b, { name: 'vip' })).statusCode).toBe(201)
  })

  it('treats names as case-sensitive', async () => {
    const p = await t.project()
    await newGroup(p, 'VIP')
    expect((await createGroup(p, { name: 'vip' })).statusCode).toBe(201)
  })

  it('lets exactly one of several concurrent same-name creates through', async () => {
    const p = await t.project({ limits: { groups: 20 } })
    const results = await Promise.all(Array.from({ length: 6 }, () => createGroup(p, { name: 'race' })))
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409, 409, 409, 409, 409])
    expect(await listGroups(p)).toHaveLength(1)
  })

  it('answers 403 group_limit_reached at the cap, and frees a place when a group is deleted', async () => {
    const p = await t.project({ limits: { groups: 2 } })
    const first = await newGroup(p, 'one')
    await newGroup(p, 'two')
    const res = await createGroup(p, { name: 'three' })
    expect(res.statusCode).toBe(403)
    expect(res.json().error.code).toBe('group_limit_reached')
    expect(res.json().error.message).toContain('2')
    expect(await listGroups(p)).toHaveLength(2)

    expect((await t.app.inject({ method: 'DELETE', url: `/v1/groups/${first}`, headers: p.auth })).statusCode).toBe(200)
    expect((await createGroup(p, { name: 'three' })).statusCode).toBe(201)
  })

  it("applies the Free plan's cap of 3 when the project has no override", async () => {
    const p = await t.project({ plan: 'free' })
    for (const name of ['a', 'b', 'c']) await newGroup(p, name)
    expect((await createGroup(p, { name: 'd' })).json().error.code).toBe('group_limit_reached')
  })

  it('holds the cap against concurrent creates', async () => {
    const p = await t.project({ limits: { groups: 2 } })
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => createGroup(p, { name: `g${i}` })))
    expect(results.filter((r) => r.statusCode === 201)).toHaveLength(2)
    expect(results.filter((r) => r.statusCode === 403)).toHaveLength(4)
    expect(await listGroups(p)).toHaveLength(2)
  })

  it('does not count another project’s groups against the cap', async () => {
    const a = await t.project({ limits: { groups: 1 } })
    const b = await t.project({ limits: { groups: 1 } })
    await newGroup(a, 'x')
    expect((await createGroup(b, { name: 'x' })).statusCode).toBe(201)
  })

  it('answers 400 invalid_json for a body that is not JSON', async () => {
    const p = await t.project()
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/groups',
      headers: { ...p.auth, 'content-type': 'application/json' },
      payload: '{"name":',
    })
    expect(res.statusCode).toBe(400)
    expect(res.json().error.code).toBe('invalid_json')
  })
})

describe('PATCH /v1/groups/:id', () => {
  it('renames a group', async () => {
    const p = await t.project()
    const id = await newGroup(p, 'old', 'kept')
    const res = await patch(p, id, { name: 'new' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect(await listGroups(p)).toMatchObject([{ id, name: 'new', description: 'kept' }])
  })

  it('replaces the description, and null clears it', async () => {
    const p = await t.project()
    const id = await newGroup(p, 'g')
    expect((await patch(p, id, { description: 'about' })).statusCode).toBe(200)
    expect(await listGroups(p)).toMatchObject([{ name: 'g', description: 'about' }])
    expect((await patch(p, id, { description: null })).statusCode).toBe(200)
    expect(await listGroups(p)).toMatchObject([{ name: 'g', description: null }])
  })

  it('changes both fields at once', async () => {
    const p = await t.project()
    const id = await newGroup(p, 'g', 'd')
    expect((await patch(p, id, { name: 'h', description: 'e' })).statusCode).toBe(200)
    expect(await listGroups(p)).toMatchObject([{ name: 'h', description: 'e' }])
  })

  it('changes nothing when neither field is sent', async () => {
    const p = await t.project()
    const id = await newGroup(p, 'g', 'd')
    const before = await listGroups(p)
    const res = await patch(p, id, {})
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect(await listGroups(p)).toEqual(before)
  })

  it('takes the boundaries of create: name 64/65, description 512/513, no null name', async () => {
    const p = await t.project()
    const id = await newGroup(p, 'g')
    expect((await patch(p, id, { name: 'n'.repeat(64) })).statusCode).toBe(200)
    expectInvalid(await patch(p, id, { name: 'n'.repeat(65) }), 'name')
    expectInvalid(await patch(p, id, { name: '' }), 'name')
    expectInvalid(await patch(p, id, { name: null }), 'name')
    expect((await patch(p, id, { description: 'd'.repeat(512) })).statusCode).toBe(200)
    expectInvalid(await patch(p, id, { description: 'd'.repeat(513) }), 'description')
    expect(await listGroups(p)).toMatchObject([{ name: 'n'.repeat(64), description: 'd'.repeat(512) }])
  })

  it('answers 409 group_name_taken for another group’s name, and allows a group its own name', async () => {
    const p = await t.project()
    const a = await newGroup(p, 'a')
    await newGroup(p, 'b')
    const res = await patch(p, a, { name: 'b' })
    expect(res.statusCode).toBe(409)
    expect(res.json().error.code).toBe('group_name_taken')
    expect((await patch(p, a, { name: 'a' })).statusCode).toBe(200)
    expect((await listGroups(p)).map((g) => g.name).sort()).toEqual(['a', 'b'])
  })

  it('answers 404 group_not_found for an unknown or malformed id, also with an empty body', async () => {
    const p = await t.project()
    for (const id of ['grp_00000000000000000000000000', 'nope']) {
      for (const body of [{ name: 'x' }, {}]) {
        const res = await patch(p, id, body)
        expect(res.statusCode).toBe(404)
        expect(res.json().error.code).toBe('group_not_found')
      }
    }
  })
})

describe('DELETE /v1/groups/:id', () => {
  it('deletes the group; its memberships go and the subscribers stay', async () => {
    const p = await t.project()
    const id = await newGroup(p, 'g')
    const other = await newGroup(p, 'h')
    const sub = await subscribe(t, p, { group_ids: [id, other] })
    const res = await t.app.inject({ method: 'DELETE', url: `/v1/groups/${id}`, headers: p.auth })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect(await listGroups(p)).toMatchObject([{ id: other, member_count: 1 }])
    const got = await t.app.inject({ method: 'GET', url: `/v1/subscribers/${sub}`, headers: p.auth })
    expect(got.json()).toMatchObject({ id: sub, status: 'active', group_ids: [other] })
    const left = await t.database.db.query('SELECT count(*)::int8 AS n FROM group_members WHERE group_id = $1', [id])
    expect(left.rows[0]).toEqual({ n: 0 })
  })

  it('answers 404 group_not_found for an unknown, malformed or already deleted group', async () => {
    const p = await t.project()
    const id = await newGroup(p, 'g')
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/groups/${id}`, headers: p.auth })).statusCode).toBe(200)
    for (const target of [id, 'grp_00000000000000000000000000', 'nope']) {
      const res = await t.app.inject({ method: 'DELETE', url: `/v1/groups/${target}`, headers: p.auth })
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('group_not_found')
    }
  })
})

describe('auth and isolation on the group routes', () => {
  const routes = (id: string) => [
    { method: 'GET' as const, url: '/v1/groups' },
    { method: 'POST' as const, url: '/v1/groups', payload: { name: 'x' } },
    { method: 'PATCH' as const, url: `/v1/groups/${id}`, payload: { name: 'x' } },
    { method: 'DELETE' as const, url: `/v1/groups/${id}` },
    { method: 'POST' as const, url: `/v1/groups/${id}/subscribers`, payload: { subscriber_ids: ['sub_x'] } },
    { method: 'DELETE' as const, url: `/v1/groups/${id}/subscribers/sub_x` },
  ]

  it('answers 401 invalid_api_key without a key, with a malformed one and with a wrong one', async () => {
    const p = await t.project()
    const id = await newGroup(p, 'g')
    const wrongKey = p.apiKey.slice(0, -4) + (p.apiKey.endsWith('aaaa') ? 'bbbb' : 'aaaa')
    const headerSets = [{}, { authorization: 'Basic abc' }, { authorization: 'Bearer' }, { authorization: 'Bearer not-a-key' }, { authorization: `Bearer ${wrongKey}` }]
    for (const route of routes(id)) {
      for (const headers of headerSets) {
        const res = await t.app.inject({ ...route, headers })
        expect(res.statusCode, `${route.method} ${route.url} ${JSON.stringify(headers)}`).toBe(401)
        expect(res.json().error.code).toBe('invalid_api_key')
      }
    }
    expect(await listGroups(p)).toMatchObject([{ id, name: 'g', member_count: 0 }])
  })

  it('gives project B 404 group_not_found for every route on A’s group, and A’s group is unchanged', async () => {
    const a = await t.project()
    const b = await t.project()
    const id = await newGroup(a, 'mine', 'desc')
    const sub = await subscribe(t, a, { group_ids: [id] })
    const before = await listGroups(a)
    for (const route of routes(id).slice(2)) {
      const url = route.url.replace('sub_x', sub)
      const payload = route.url.endsWith('/subscribers') ? { subscriber_ids: [sub] } : route.payload
      const res = await t.app.inject({ ...route, url, payload, headers: b.auth })
      expect(res.statusCode, `${route.method} ${url}`).toBe(404)
      expect(res.json().error.code).toBe('group_not_found')
    }
    expect((await patch(b, id, {})).statusCode).toBe(404)
    expect(await listGroups(a)).toEqual(before)
    expect(await listGroups(b)).toEqual([])
  })

  it('does not answer CORS on bearer routes', async () => {
    const p = await t.project()
    const res = await t.app.inject({ method: 'GET', url: '/v1/groups', headers: { ...p.auth, origin: 'https://shop.example' } })
    expect(res.statusCode).toBe(200)
    expect(res.headers['access-control-allow-origin']).toBeUndefined()
  })
})
