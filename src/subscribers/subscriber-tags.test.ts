// Subscriber tags (issue 12): set at subscribe (merged on a repeat), replaced
// or merged by PATCH /v1/subscribers/:sid, set for every device of a user by
// PATCH /v1/subscribers/by-external-id/:external_id; their limits, key
// pattern and value types; other projects' subscribers are 404.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { subscribe, subscription } from './subscribers.fixtures.ts'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
})
afterAll(async () => {
  await t.close()
})

function patch(project: TestProject, url: string, payload: unknown) {
  return t.app.inject({ method: 'PATCH', url, headers: project.auth, payload: payload as Record<string, unknown> })
}

async function tagsOf(project: TestProject, id: string): Promise<Record<string, unknown>> {
  const res = await t.app.inject({ method: 'GET', url: `/v1/subscribers/${id}`, headers: project.auth })
  expect(res.statusCode, res.body).toBe(200)
  return res.json().tags
}

function manyTags(n: number, prefix = 'k'): Record<string, number> {
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, i]))
}

function expectIssue(res: { statusCode: number; body: string; json(): any }, path: string) {
  expect(res.statusCode, res.body).toBe(400)
  expect(res.json().error.code).toBe('invalid_request')
  expect(res.json().error.issues.map((issue: { path: string }) => issue.path)).toContain(path)
}

describe('tags at subscribe', () => {
  it('are stored typed and shown in the record and the list; none is {}', async () => {
    const p = await t.project()
    const tags = { plan: 'pro', age: 10, age_text: '10', vip: true, off: false, ratio: 0.25, 'a-b_C': '' }
    const id = await subscribe(t, p, { tags })
    expect(await tagsOf(p, id)).toEqual(tags)
    const bare = await subscribe(t, p)
    expect(await tagsOf(p, bare)).toEqual({})
    const list = (await t.app.inject({ method: 'GET', url: '/v1/subscribers', headers: p.auth })).json().subscribers
    expect(list.find((s: { id: string }) => s.id === id).tags).toEqual(tags)
  })

  it('a repeat subscribe merges: the keys given win, the others stay; omitted keeps them', async () => {
    const p = await t.project()
    const body = subscription({ tags: { a: 1, b: 'x' } })
    const post = (extra: Record<string, unknown>) =>
      t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: { ...body, ...extra } })
    const id = (await post({})).json().id
    expect((await post({ tags: { b: 'y', c: true } })).json().id).toBe(id)
    expect(await tagsOf(p, id)).toEqual({ a: 1, b: 'y', c: true })
    const { tags: _omitted, ...withoutTags } = body
    expect((await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: withoutTags })).statusCode).toBe(201)
    expect(await tagsOf(p, id)).toEqual({ a: 1, b: 'y', c: true })
  })

  it('a repeat that would pass 50 keys is 400 on tags and changes nothing', async () => {
    const p = await t.project()
    const body = subscription({ tags: manyTags(30, 'a') })
    const id = (await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: body })).json().id
    const res = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: { ...body, tags: manyTags(21, 'b') } })
    expectIssue(res, 'tags')
    expect(Object.keys(await tagsOf(p, id))).toHaveLength(30)
  })

  it('refuses bad keys, bad values and more than 50 keys, naming the field', async () => {
    const p = await t.project()
    const post = (tags: unknown) => t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: subscription({ tags }) })
    expect((await post(manyTags(50))).statusCode).toBe(201)
    expect((await post({ ['k'.repeat(64)]: 'x', s: 'v'.repeat(256) })).statusCode).toBe(201)
    expectIssue(await post(manyTags(51)), 'tags')
    for (const key of ['', 'k'.repeat(65), 'has space', 'dot.ted', 'ünï', 'a:b']) expectIssue(await post({ [key]: 1 }), 'tags')
    expectIssue(await post({ s: 'v'.repeat(257) }), 'tags.s')
    for (const value of [null, [1], { nested: 1 }]) expectIssue(await post({ x: value }), 'tags.x')
    // Past double range: JSON.parse makes Infinity, which must not become a silent null.
    const huge = await t.app.inject({
      method: 'POST',
      url: `/v1/subscribe?project=${p.id}`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(subscription({ tags: { placeholder: 0 } })).replace('"placeholder":0', '"x":1e400'),
    })
    expectIssue(huge, 'tags.x')
    expectIssue(await post(['a']), 'tags')
    expectIssue(await post('plan:pro'), 'tags')
  })
})

describe('PATCH /v1/subscribers/:sid', () => {
  it('replaces by default, merges with merge: true, and null removes a key', async () => {
    const p = await t.project()
    const id = await subscribe(t, p, { tags: { a: 1, b: 2 } })
    const replaced = await patch(p, `/v1/subscribers/${id}`, { tags: { c: 'x', d: null } })
    expect(replaced.statusCode, replaced.body).toBe(200)
    expect(replaced.json()).toMatchObject({ id, tags: { c: 'x' }, status: 'active' })
    const merged = await patch(p, `/v1/subscribers/${id}`, { tags: { a: true, c: null }, merge: true })
    expect(merged.json().tags).toEqual({ a: true })
    expect((await patch(p, `/v1/subscribers/${id}`, { tags: {} })).json().tags).toEqual({})
    expect(await tagsOf(p, id)).toEqual({})
  })

  it('a merge past 50 keys is 400 and leaves the tags as they were; a replace with 50 is fine', async () => {
    const p = await t.project()
    const id = await subscribe(t, p, { tags: manyTags(40, 'a') })
    expectIssue(await patch(p, `/v1/subscribers/${id}`, { tags: manyTags(11, 'b'), merge: true }), 'tags')
    expect(Object.keys(await tagsOf(p, id))).toHaveLength(40)
    // Removing as many as are added stays within the cap.
    const swap = { ...manyTags(10, 'b'), a0: null, a1: null }
    expect((await patch(p, `/v1/subscribers/${id}`, { tags: swap, merge: true })).json().tags).not.toHaveProperty('a0')
    expect(Object.keys((await patch(p, `/v1/subscribers/${id}`, { tags: manyTags(50, 'c') })).json().tags)).toHaveLength(50)
  })

  it('validates the body: tags required, merge a boolean, no unknown fields', async () => {
    const p = await t.project()
    const id = await subscribe(t, p)
    expectIssue(await patch(p, `/v1/subscribers/${id}`, {}), 'tags')
    expectIssue(await patch(p, `/v1/subscribers/${id}`, { tags: {}, merge: 'true' }), 'merge')
    expectIssue(await patch(p, `/v1/subscribers/${id}`, { tags: {}, merg: true }), '(body)')
    expectIssue(await patch(p, `/v1/subscribers/${id}`, { tags: { 'bad key': 1 } }), 'tags')
    expectIssue(await patch(p, `/v1/subscribers/${id}`, { tags: { x: '1'.repeat(257) } }), 'tags.x')
  })

  it("another project's subscriber, an unknown id and a malformed one are 404 subscriber_not_found, untouched", async () => {
    const a = await t.project()
    const b = await t.project()
    const theirs = await subscribe(t, a, { tags: { keep: 1 } })
    for (const id of [theirs, 'sub_00000000000000000000000000', 'nonsense']) {
      const res = await patch(b, `/v1/subscribers/${id}`, { tags: { stolen: true } })
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('subscriber_not_found')
    }
    expect(await tagsOf(a, theirs)).toEqual({ keep: 1 })
  })
})

describe('PATCH /v1/subscribers/by-external-id/:external_id', () => {
  it('sets the tags of every device of the user, whatever its status, and no one else', async () => {
    const p = await t.project()
    const phone = await subscribe(t, p, { external_id: 'alice', tags: { device: 'phone' } })
    const laptopBody = subscription({ external_id: 'alice', tags: { device: 'laptop' } })
    const laptop = (await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: laptopBody })).json().id
    await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${p.id}`, payload: { endpoint: laptopBody.endpoint } })
    const bob = await subscribe(t, p, { external_id: 'bob', tags: { device: 'phone' } })

    const merged = await patch(p, '/v1/subscribers/by-external-id/alice', { tags: { plan: 'pro' }, merge: true })
    expect(merged.statusCode, merged.body).toBe(200)
    expect(merged.json()).toEqual({ updated: 2 })
    expect(await tagsOf(p, phone)).toEqual({ device: 'phone', plan: 'pro' })
    expect(await tagsOf(p, laptop)).toEqual({ device: 'laptop', plan: 'pro' })
    expect(await tagsOf(p, bob)).toEqual({ device: 'phone' })

    expect((await patch(p, '/v1/subscribers/by-external-id/alice', { tags: { plan: 'free' } })).json()).toEqual({ updated: 2 })
    expect(await tagsOf(p, phone)).toEqual({ plan: 'free' })
    expect(await tagsOf(p, laptop)).toEqual({ plan: 'free' })
  })

  it('is all or none: one device past the cap refuses the lot', async () => {
    const p = await t.project()
    const full = await subscribe(t, p, { external_id: 'carol', tags: manyTags(50) })
    const empty = await subscribe(t, p, { external_id: 'carol' })
    expectIssue(await patch(p, '/v1/subscribers/by-external-id/carol', { tags: { extra: 1 }, merge: true }), 'tags')
    expect(await tagsOf(p, empty)).toEqual({})
    expect(Object.keys(await tagsOf(p, full))).toHaveLength(50)
  })

  it("an unknown user, or another project's user, is 404 subscriber_not_found; a bad external_id is 400", async () => {
    const a = await t.project()
    const b = await t.project()
    const theirs = await subscribe(t, a, { external_id: 'dave', tags: { keep: 1 } })
    for (const externalId of ['dave', 'nobody']) {
      const res = await patch(b, `/v1/subscribers/by-external-id/${externalId}`, { tags: { stolen: true } })
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('subscriber_not_found')
    }
    expect(await tagsOf(a, theirs)).toEqual({ keep: 1 })
    expectIssue(await patch(b, '/v1/subscribers/by-external-id/not%20valid', { tags: {} }), 'params.external_id')
  })
})
