// Group memberships (api.md 4.5, 4.6): adding, counting, removing, limits and
// cross-project isolation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { newId } from '../platform/ids.ts'
import { subscribe } from '../subscribers/subscribers.fixtures.ts'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
})
afterAll(async () => {
  await t.close()
})

async function newGroup(project: TestProject, name = 'g'): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: project.auth, payload: { name } })
  expect(res.statusCode).toBe(201)
  return res.json().id
}

function add(project: TestProject, groupId: string, subscriberIds: unknown) {
  return t.app.inject({
    method: 'POST',
    url: `/v1/groups/${groupId}/subscribers`,
    headers: project.auth,
    payload: { subscriber_ids: subscriberIds },
  })
}

function remove(project: TestProject, groupId: string, subscriberId: string) {
  return t.app.inject({ method: 'DELETE', url: `/v1/groups/${groupId}/subscribers/${subscriberId}`, headers: project.auth })
}

async function members(groupId: string): Promise<string[]> {
  const result = await t.database.db.query<{ subscriber_id: string }>(
    'SELECT subscriber_id FROM group_members WHERE group_id = $1 ORDER BY subscriber_id',
    [groupId],
  )
  return result.rows.map((row) => row.subscriber_id)
}

async function memberCount(project: TestProject, groupId: string): Promise<number> {
  const res = await t.app.inject({ method: 'GET', url: '/v1/groups', headers: project.auth })
  return res.json().groups.find((g: { id: string }) => g.id === groupId).member_count
}

/** Inserts n subscribers of the project straight into the table (faster than n subscribe calls). */
async function insertSubscribers(projectId: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => newId('sub'))
  await t.database.db.query(
    `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth)
     SELECT id, $1, 'https://fcm.googleapis.com/fcm/send/' || id, 'p', 'a' FROM unnest($2::text[]) AS id`,
    [projectId, ids],
  )
  return ids
}

function expectInvalid(res: { statusCode: number; json(): any }, path: string) {
  expect(res.statusCode).toBe(400)
  expect(res.json().error.code).toBe('invalid_request')
  expect(res.json().error.issues.map((issue: { path: string }) => issue.path)).toContain(path)
}

describe('POST /v1/groups/:id/subscribers', () => {
  it('adds subscribers and answers the number of memberships inserted', async () => {
    const p = await t.project()
    const group = await newGroup(p)
    const s1 = await subscribe(t, p)
    const s2 = await subscribe(t, p)
    const res = await add(p, group, [s1, s2])
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ added: 2 })
    expect(await members(group)).toEqual([s1, s2].sort())
    expect(await memberCount(p, group)).toBe(2)
  })

  it('is idempotent: existing members are not counted again', async () => {
    const p = await t.project()
    const group = await newGroup(p)
    const s1 = await subscribe(t, p)
    const s2 = await subscribe(t, p)
    expect((await add(p, group, [s1])).json()).toEqual({ added: 1 })
    expect((await add(p, group, [s1])).json()).toEqual({ added: 0 })
    expect((await add(p, group, [s1, s2])).json()).toEqual({ added: 1 })
    expect((await add(p, group, [s2, s2, s2])).json()).toEqual({ added: 0 })
    expect(await members(group)).toEqual([s1, s2].sort())
  })

  it('counts an id given twice in one call once', async () => {
    const p = await t.project()
    const group = await newGroup(p)
    const s1 = await subscribe(t, p)
    expect((await add(p, group, [s1, s1])).json()).toEqual({ added: 1 })
  })

  it('silently drops unknown ids, ids that are not subscriber ids, and ids of other projects', async () => {
    const a = await t.project()
    const b = await t.project()
    const group = await newGroup(a)
    const mine = await subscribe(t, a)
    const theirs = await subscribe(t, b)
    const res = await add(a, group, [theirs, 'sub_00000000000000000000000000', 'grp_x', 'hello', '', mine])
    expect(res.json()).toEqual({ added: 1 })
    expect(await members(group)).toEqual([mine])
  })

  it("adds 0 when B's group is given A's subscriber ids, and A's subscriber stays out of it", async () => {
    const a = await t.project()
    const b = await t.project()
    const bGroup = await newGroup(b)
    const aSubs = [await subscribe(t, a), await subscribe(t, a)]
    expect((await add(b, bGroup, aSubs)).json()).toEqual({ added: 0 })
    expect(await members(bGroup)).toEqual([])
    const got = await t.app.inject({ method: 'GET', url: `/v1/subscribers/${aSubs[0]}`, headers: a.auth })
    expect(got.json().group_ids).toEqual([])
  })

  it('adds members whatever their status (unsubscribed ones included)', async () => {
    const p = await t.project()
    const group = await newGroup(p)
    const sub = await subscribe(t, p)
    await t.database.db.query(`UPDATE subscribers SET status = 'unsubscribed' WHERE id = $1`, [sub])
    expect((await add(p, group, [sub])).json()).toEqual({ added: 1 })
  })

  it('takes 500 ids and refuses 501 or none', async () => {
    const p = await t.project()
    const group = await newGroup(p)
    const ids = await insertSubscribers(p.id, 500)
    const res = await add(p, group, ids)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ added: 500 })
    expect(await memberCount(p, group)).toBe(500)

    const other = await newGroup(p, 'other')
    expectInvalid(await add(p, other, [...ids, 'sub_00000000000000000000000000']), 'subscriber_ids')
    expectInvalid(await add(p, other, []), 'subscriber_ids')
    expect(await members(other)).toEqual([])
  })

  it('refuses a body of the wrong shape', async () => {
    const p = await t.project()
    const group = await newGroup(p)
    expectInvalid(await add(p, group, 'sub_x'), 'subscriber_ids')
    expectInvalid(await add(p, group, [1, 2]), 'subscriber_ids.0')
    const res = await t.app.inject({ method: 'POST', url: `/v1/groups/${group}/subscribers`, headers: p.auth, payload: {} })
    expectInvalid(res, 'subscriber_ids')
  })

  it('answers 404 group_not_found for an unknown, malformed, deleted or foreign group', async () => {
    const a = await t.project()
    const b = await t.project()
    const sub = await subscribe(t, a)
    const deleted = await newGroup(a, 'deleted')
    await t.app.inject({ method: 'DELETE', url: `/v1/groups/${deleted}`, headers: a.auth })
    const foreign = await newGroup(b)
    for (const group of ['grp_00000000000000000000000000', 'nope', deleted, foreign]) {
      const res = await add(a, group, [sub])
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('group_not_found')
    }
    expect(await members(foreign)).toEqual([])
  })
})

describe('DELETE /v1/groups/:id/subscribers/:sid', () => {
  it('removes one membership; the subscriber stays active and in its other groups', async () => {
    const p = await t.project()
    const g1 = await newGroup(p, 'one')
    const g2 = await newGroup(p, 'two')
    const sub = await subscribe(t, p, { group_ids: [g1, g2] })
    const other = await subscribe(t, p, { group_ids: [g1] })
    const res = await remove(p, g1, sub)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect(await members(g1)).toEqual([other])
    expect(await members(g2)).toEqual([sub])
    const got = await t.app.inject({ method: 'GET', url: `/v1/subscribers/${sub}`, headers: p.auth })
    expect(got.json()).toMatchObject({ status: 'active', group_ids: [g2] })
  })

  it('answers 200 when the subscriber is not a member, or is unknown', async () => {
    const p = await t.project()
    const group = await newGroup(p)
    const sub = await subscribe(t, p)
    expect((await remove(p, group, sub)).json()).toEqual({ ok: true })
    expect((await remove(p, group, 'sub_00000000000000000000000000')).statusCode).toBe(200)
    expect((await remove(p, group, 'whatever')).statusCode).toBe(200)
  })

  it('answers 404 group_not_found for an unknown or foreign group, and leaves the foreign membership alone', async () => {
    const a = await t.project()
    const b = await t.project()
    const group = await newGroup(a)
    const sub = await subscribe(t, a, { group_ids: [group] })
    for (const target of ['grp_00000000000000000000000000', 'nope']) {
      const res = await remove(a, target, sub)
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('group_not_found')
    }
    const res = await remove(b, group, sub)
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toBe('group_not_found')
    expect(await members(group)).toEqual([sub])
  })

  it("does not let B's group drop A's subscriber from anything", async () => {
    const a = await t.project()
    const b = await t.project()
    const aGroup = await newGroup(a)
    const bGroup = await newGroup(b)
    const sub = await subscribe(t, a, { group_ids: [aGroup] })
    expect((await remove(b, bGroup, sub)).statusCode).toBe(200)
    expect(await members(aGroup)).toEqual([sub])
  })
})
