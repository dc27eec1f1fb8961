// The /v1/subscribers resource (decisions.md §3): list with filters and
// cursor pagination, get, and erasure (hard delete cascading to memberships
// and events), with auth and cross-project isolation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { newId } from '../platform/ids.ts'
import { subscribe, subscription } from './subscribers.fixtures.ts'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
})
afterAll(async () => {
  await t.close()
})

function get(project: TestProject, url: string) {
  return t.app.inject({ method: 'GET', url, headers: project.auth })
}

function del(project: TestProject, url: string, payload?: Record<string, unknown>) {
  return t.app.inject({ method: 'DELETE', url, headers: project.auth, ...(payload ? { payload } : {}) })
}

async function listAll(project: TestProject, query = ''): Promise<Array<Record<string, any>>> {
  const res = await get(project, `/v1/subscribers${query}`)
  expect(res.statusCode).toBe(200)
  return res.json().subscribers
}

async function newGroup(project: TestProject, name: string): Promise<string> {
  return (await t.app.inject({ method: 'POST', url: '/v1/groups', headers: project.auth, payload: { name } })).json().id
}

async function exists(id: string): Promise<boolean> {
  return (await t.database.db.query('SELECT 1 FROM subscribers WHERE id = $1', [id])).rows.length > 0
}

function expectInvalid(res: { statusCode: number; json(): any }, path: string) {
  expect(res.statusCode).toBe(400)
  expect(res.json().error.code).toBe('invalid_request')
  expect(res.json().error.issues.map((issue: { path: string }) => issue.path)).toContain(path)
}

function expectNotFound(res: { statusCode: number; json(): any }) {
  expect(res.statusCode).toBe(404)
  expect(res.json().error.code).toBe('subscriber_not_found')
}

describe('GET /v1/subscribers/:sid', () => {
  it('answers { id, endpoint, external_id, status, push_service, group_ids, tags, created_at, last_seen_at }', async () => {
    const p = await t.project()
    const g1 = await newGroup(p, 'one')
    const g2 = await newGroup(p, 'two')
    const body = subscription({ external_id: 'u1', group_ids: [g2, g1] })
    const before = Date.now()
    const id = (await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: body })).json().id
    const res = await get(p, `/v1/subscribers/${id}`)
    expect(res.statusCode).toBe(200)
    const got = res.json()
    expect(got).toEqual({
      id,
      endpoint: body.endpoint,
      external_id: 'u1',
      status: 'active',
      push_service: 'fcm',
      group_ids: [g1, g2].sort(),
      tags: {},
      locale: null,
      created_at: expect.any(Number),
      last_seen_at: expect.any(Number),
      source: 'subscribe',
      last_delivered_at: null,
      last_clicked_at: null,
      consecutive_failures: 0,
      health: 'active',
      timezone: null,
      // The project's original VAPID pair (issue 23): vk_ and the project id's 26 characters.
      vapid_key_id: `vk_${p.id.slice(4)}`,
    })
    expect(got.created_at).toBeGreaterThanOrEqual(before - 1000)
    expect(got.created_at).toBeLessThanOrEqual(Date.now() + 1000)
    expect(got.last_seen_at).toBeGreaterThanOrEqual(got.created_at)
    // Never the keys: they are the subscriber's secret with the push service.
    expect(res.body).not.toContain((body.keys as { auth: string }).auth)
  })

  it('names the push service by the endpoint host, whole or by dot-suffix, never by substring', async () => {
    const p = await t.project()
    const cases: Array<[string, string]> = [
      ['https://fcm.googleapis.com/fcm/send/abc', 'fcm'],
      ['https://android.googleapis.com/gcm/send/abc', 'fcm'],
      ['https://updates.push.services.mozilla.com/wpush/v2/abc', 'mozilla'],
      ['https://web.push.apple.com/QJ3x', 'apple'],
      ['https://WNS2-PAR02P.notify.windows.com/w/?token=abc', 'wns'],
      ['https://push.example.com/fcm.googleapis.com/abc', 'other'],
      ['https://fcm.googleapis.com.evil.example/abc', 'other'],
      ['https://notpush.apple.com/abc', 'other'],
    ]
    for (const [endpoint, expected] of cases) {
      await t.database.db.query(
        `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth) VALUES ($1, $2, $3, 'p', 'a')`,
        [newId('sub'), p.id, endpoint],
      )
    }
    const got = Object.fromEntries((await listAll(p, '?limit=100')).map((s) => [s.endpoint, s.push_service]))
    expect(got).toEqual(Object.fromEntries(cases))
  })

  it('shows external_id null, no groups, and the status after unsubscribe', async () => {
    const p = await t.project()
    const body = subscription()
    const id = (await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: body })).json().id
    await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${p.id}`, payload: { endpoint: body.endpoint } })
    expect((await get(p, `/v1/subscribers/${id}`)).json()).toMatchObject({ external_id: null, group_ids: [], status: 'unsubscribed' })
  })

  it('answers 404 subscriber_not_found for an unknown or malformed id', async () => {
    const p = await t.project()
    expectNotFound(await get(p, '/v1/subscribers/sub_00000000000000000000000000'))
    expectNotFound(await get(p, '/v1/subscribers/nope'))
  })
})

describe('GET /v1/subscribers', () => {
  it('lists newest first in the same shape as get, with next_cursor null on the last page', async () => {
    const p = await t.project()
    const ids = [await subscribe(t, p), await subscribe(t, p), await subscribe(t, p)]
    const res = await get(p, '/v1/subscribers')
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body.next_cursor).toBeNull()
    expect(body.subscribers.map((s: { id: string }) => s.id)).toEqual([...ids].reverse())
    const one = (await get(p, `/v1/subscribers/${ids[0]}`)).json()
    expect(body.subscribers[2]).toEqual(one)
  })

  it('answers an empty list for a project without subscribers', async () => {
    const p = await t.project()
    expect((await get(p, '/v1/subscribers')).json()).toEqual({ subscribers: [], next_cursor: null })
  })

  it('pages with ?limit= and ?cursor= without gaps or repeats', async () => {
    const p = await t.project()
    const ids: string[] = []
    for (let i = 0; i < 5; i++) ids.push(await subscribe(t, p))
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const res = await get(p, `/v1/subscribers?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      expect(res.statusCode).toBe(200)
      const page: { subscribers: Array<{ id: string }>; next_cursor: string | null } = res.json()
      expect(page.subscribers.length).toBeLessThanOrEqual(2)
      seen.push(...page.subscribers.map((s) => s.id))
      cursor = page.next_cursor
      pages++
    } while (cursor)
    expect(pages).toBe(3)
    expect(seen).toEqual([...ids].reverse())
  })

  it('answers next_cursor null when the last page is exactly full', async () => {
    const p = await t.project()
    await subscribe(t, p)
    await subscribe(t, p)
    const first = (await get(p, '/v1/subscribers?limit=1')).json()
    expect(first.next_cursor).toBe(first.subscribers[0].id)
    const second = (await get(p, `/v1/subscribers?limit=1&cursor=${first.next_cursor}`)).json()
    expect(second.subscribers).toHaveLength(1)
    expect(second.next_cursor).toBeNull()
  })

  it('answers 50 by default and takes limit 1-100', async () => {
    const p = await t.project()
    const ids = Array.from({ length: 101 }, () => newId('sub'))
    await t.database.db.query(
      `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth)
       SELECT id, $1, 'https://fcm.googleapis.com/fcm/send/' || id, 'p', 'a' FROM unnest($2::text[]) AS id`,
      [p.id, ids],
    )
    const byDefault = (await get(p, '/v1/subscribers')).json()
    expect(byDefault.subscribers).toHaveLength(50)
    expect(byDefault.next_cursor).toBe(byDefault.subscribers[49].id)
    expect((await get(p, '/v1/subscribers?limit=100')).json().subscribers).toHaveLength(100)
    expect((await get(p, '/v1/subscribers?limit=1')).json().subscribers).toHaveLength(1)
    expectInvalid(await get(p, '/v1/subscribers?limit=0'), 'querystring.limit')
    expectInvalid(await get(p, '/v1/subscribers?limit=101'), 'querystring.limit')
    expectInvalid(await get(p, '/v1/subscribers?limit=abc'), 'querystring.limit')
  })

  it('refuses a cursor that is not a subscriber id', async () => {
    const p = await t.project()
    expectInvalid(await get(p, '/v1/subscribers?cursor=garbage'), 'querystring.cursor')
    expectInvalid(await get(p, '/v1/subscribers?cursor=grp_00000000000000000000000000'), 'querystring.cursor')
  })

  it('filters by status, external_id and group_id, alone and together', async () => {
    const p = await t.project()
    const g = await newGroup(p, 'g')
    const aliceIn = await subscribe(t, p, { external_id: 'alice', group_ids: [g] })
    const aliceOut = await subscribe(t, p, { external_id: 'alice' })
    const bobIn = await subscribe(t, p, { external_id: 'bob', group_ids: [g] })
    const goneBody = subscription({ external_id: 'alice', group_ids: [g] })
    const gone = (await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: goneBody })).json().id
    await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${p.id}`, payload: { endpoint: goneBody.endpoint } })
    await t.database.db.query(`UPDATE subscribers SET status = 'expired' WHERE id = $1`, [bobIn])

    const ids = async (query: string) => (await listAll(p, query)).map((s) => s.id)
    expect(await ids('?status=active')).toEqual([aliceOut, aliceIn])
    expect(await ids('?status=unsubscribed')).toEqual([gone])
    expect(await ids('?status=expired')).toEqual([bobIn])
    expect(await ids('?external_id=alice')).toEqual([gone, aliceOut, aliceIn])
    expect(await ids('?external_id=nobody')).toEqual([])
    expect(await ids(`?group_id=${g}`)).toEqual([gone, bobIn, aliceIn])
    expect(await ids(`?group_id=${g}&status=active&external_id=alice`)).toEqual([aliceIn])
    expect(await ids('?group_id=grp_00000000000000000000000000')).toEqual([])
  })

  it('refuses a bad status or external_id filter', async () => {
    const p = await t.project()
    expectInvalid(await get(p, '/v1/subscribers?status=deleted'), 'querystring.status')
    expectInvalid(await get(p, '/v1/subscribers?external_id=a%20b'), 'querystring.external_id')
    expectInvalid(await get(p, `/v1/subscribers?external_id=${'a'.repeat(257)}`), 'querystring.external_id')
    expect((await get(p, `/v1/subscribers?external_id=${'a'.repeat(256)}`)).statusCode).toBe(200)
  })
})

describe('DELETE /v1/subscribers/:sid (erasure)', () => {
  it('hard-deletes the row, its memberships and its events; counts on the broadcast stay', async () => {
    const p = await t.project()
    const g = await newGroup(p, 'g')
    const id = await subscribe(t, p, { group_ids: [g] })
    const keep = await subscribe(t, p, { group_ids: [g] })
    const broadcastId = newId('bdc')
    await t.database.db.query(
      `INSERT INTO broadcasts (id, project_id, status, target, title, body, url, ttl, urgency, audience, delivered)
       VALUES ($1, $2, 'sent', '{"type":"all"}', 't', 'b', '/', 86400, 'normal', 2, 2)`,
      [broadcastId, p.id],
    )
    for (const sub of [id, keep]) {
      await t.database.db.query(
        `INSERT INTO events (id, project_id, broadcast_id, subscriber_id, type) VALUES ($1, $2, $3, $4, 'delivered')`,
        [newId('evt'), p.id, broadcastId, sub],
      )
    }

    const res = await del(p, `/v1/subscribers/${id}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ deleted: 1 })
    expect(await exists(id)).toBe(false)
    expectNotFound(await get(p, `/v1/subscribers/${id}`))
    const events = await t.database.db.query<{ subscriber_id: string }>('SELECT subscriber_id FROM events WHERE broadcast_id = $1', [broadcastId])
    expect(events.rows).toEqual([{ subscriber_id: keep }])
    const members = await t.database.db.query<{ subscriber_id: string }>('SELECT subscriber_id FROM group_members WHERE group_id = $1', [g])
    expect(members.rows).toEqual([{ subscriber_id: keep }])
    const broadcast = await t.database.db.query('SELECT audience, delivered FROM broadcasts WHERE id = $1', [broadcastId])
    expect(broadcast.rows[0]).toEqual({ audience: 2, delivered: 2 })
  })

  it('answers 404 subscriber_not_found for an unknown, malformed or already erased id', async () => {
    const p = await t.project()
    const id = await subscribe(t, p)
    await del(p, `/v1/subscribers/${id}`)
    for (const target of [id, 'sub_00000000000000000000000000', 'nope']) expectNotFound(await del(p, `/v1/subscribers/${target}`))
  })

  it('lets a browser subscribe again after erasure, as a new subscriber', async () => {
    const p = await t.project()
    const body = subscription()
    const first = (await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: body })).json().id
    await del(p, `/v1/subscribers/${first}`)
    const second = (await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: body })).json().id
    expect(second).not.toBe(first)
  })
})

describe('DELETE /v1/subscribers/by-endpoint', () => {
  it('erases the subscriber with that endpoint: { deleted: 1 }, then { deleted: 0 }', async () => {
    const p = await t.project()
    const body = subscription()
    const id = (await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: body })).json().id
    const other = await subscribe(t, p)
    const res = await del(p, '/v1/subscribers/by-endpoint', { endpoint: body.endpoint })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ deleted: 1 })
    expect(await exists(id)).toBe(false)
    expect(await exists(other)).toBe(true)
    expect((await del(p, '/v1/subscribers/by-endpoint', { endpoint: body.endpoint })).json()).toEqual({ deleted: 0 })
  })

  it('requires an endpoint of at most 2048 characters', async () => {
    const p = await t.project()
    expectInvalid(await del(p, '/v1/subscribers/by-endpoint', {}), 'endpoint')
    expectInvalid(await del(p, '/v1/subscribers/by-endpoint', { endpoint: 'x'.repeat(2049) }), 'endpoint')
    expect((await del(p, '/v1/subscribers/by-endpoint', { endpoint: 'x'.repeat(2048) })).json()).toEqual({ deleted: 0 })
  })
})

describe('DELETE /v1/subscribers/by-external-id/:external_id', () => {
  it("erases all of one user's devices and nobody else's: { deleted: n }", async () => {
    const p = await t.project()
    const devices = [await subscribe(t, p, { external_id: 'carol' }), await subscribe(t, p, { external_id: 'carol' })]
    const dave = await subscribe(t, p, { external_id: 'dave' })
    const anon = await subscribe(t, p)
    const res = await del(p, '/v1/subscribers/by-external-id/carol')
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ deleted: 2 })
    for (const id of devices) expect(await exists(id)).toBe(false)
    expect(await exists(dave)).toBe(true)
    expect(await exists(anon)).toBe(true)
    expect((await del(p, '/v1/subscribers/by-external-id/carol')).json()).toEqual({ deleted: 0 })
  })

  it('refuses an external_id over 256 characters or with other characters', async () => {
    const p = await t.project()
    expectInvalid(await del(p, `/v1/subscribers/by-external-id/${'a'.repeat(257)}`), 'params.external_id')
    expectInvalid(await del(p, '/v1/subscribers/by-external-id/a.b'), 'params.external_id')
    expect((await del(p, `/v1/subscribers/by-external-id/${'a'.repeat(256)}`)).json()).toEqual({ deleted: 0 })
  })
})

describe('auth and isolation on the subscriber routes', () => {
  const routes = (id: string) => [
    { method: 'GET' as const, url: '/v1/subscribers' },
    { method: 'GET' as const, url: `/v1/subscribers/${id}` },
    { method: 'DELETE' as const, url: `/v1/subscribers/${id}` },
    { method: 'DELETE' as const, url: '/v1/subscribers/by-endpoint', payload: { endpoint: 'https://x' } },
    { method: 'DELETE' as const, url: '/v1/subscribers/by-external-id/erin' },
  ]

  it('answers 401 invalid_api_key without a key, with a malformed one and with a wrong one', async () => {
    const p = await t.project()
    const id = await subscribe(t, p, { external_id: 'erin' })
    const wrongKey = p.apiKey.slice(0, -4) + (p.apiKey.endsWith('aaaa') ? 'bbbb' : 'aaaa')
    const headerSets = [{}, { authorization: 'Basic abc' }, { authorization: 'Bearer not-a-key' }, { authorization: `Bearer ${wrongKey}` }]
    for (const route of routes(id)) {
      for (const headers of headerSets) {
        const res = await t.app.inject({ ...route, headers })
        expect(res.statusCode, `${route.method} ${route.url} ${JSON.stringify(headers)}`).toBe(401)
        expect(res.json().error.code).toBe('invalid_api_key')
      }
    }
    expect(await exists(id)).toBe(true)
  })

  it("never shows or erases A's subscribers with B's key", async () => {
    const a = await t.project()
    const b = await t.project()
    const g = await newGroup(a, 'g')
    const body = subscription({ external_id: 'frank', group_ids: [g] })
    const id = (await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${a.id}`, payload: body })).json().id
    const before = (await get(a, `/v1/subscribers/${id}`)).json()

    expect((await get(b, '/v1/subscribers')).json()).toEqual({ subscribers: [], next_cursor: null })
    expect((await get(b, '/v1/subscribers?external_id=frank')).json().subscribers).toEqual([])
    expect((await get(b, `/v1/subscribers?group_id=${g}`)).json().subscribers).toEqual([])
    expectNotFound(await get(b, `/v1/subscribers/${id}`))
    expectNotFound(await del(b, `/v1/subscribers/${id}`))
    expect((await del(b, '/v1/subscribers/by-endpoint', { endpoint: body.endpoint })).json()).toEqual({ deleted: 0 })
    expect((await del(b, '/v1/subscribers/by-external-id/frank')).json()).toEqual({ deleted: 0 })

    expect((await get(a, `/v1/subscribers/${id}`)).json()).toEqual(before)
    expect((await listAll(a)).map((s) => s.id)).toEqual([id])
  })

  it('does not answer CORS on the bearer subscriber routes', async () => {
    const p = await t.project()
    const res = await t.app.inject({ method: 'GET', url: '/v1/subscribers', headers: { ...p.auth, origin: 'https://shop.example' } })
    expect(res.statusCode).toBe(200)
    expect(res.headers['access-control-allow-origin']).toBeUndefined()
  })
})
