// The life of a subscription (api.md 4.8, 4.9, §3; decisions.md §3):
// idempotent subscribe, reactivation keeping the id, group_ids, the
// subscriber cap, and soft unsubscribe. Auth, validation, the push endpoint
// rule and CORS: subscribe.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { newId } from '../platform/ids.ts'
import { fcmEndpoint, pushKeys, subscribe, subscription } from './subscribers.fixtures.ts'
import type { SubscriberRow } from './subscribers.store.ts'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
})
afterAll(async () => {
  await t.close()
})

function post(url: string, payload: unknown, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'POST', url, payload: payload as Record<string, unknown>, headers })
}

const subscribeAs = (p: TestProject, payload: unknown) => post(`/v1/subscribe?project=${p.id}`, payload)
const unsubscribeAs = (p: TestProject, endpoint: unknown) => post(`/v1/unsubscribe?project=${p.id}`, { endpoint })

/** A subscribers row as the store reads it. */
type Row = SubscriberRow

async function rows(projectId: string): Promise<Row[]> {
  const result = await t.database.db.query<Row>('SELECT * FROM subscribers WHERE project_id = $1 ORDER BY id', [projectId])
  return result.rows
}

async function row(id: string): Promise<Row> {
  const result = await t.database.db.query<Row>('SELECT * FROM subscribers WHERE id = $1', [id])
  return result.rows[0]
}

async function groupIdsOf(subscriberId: string): Promise<string[]> {
  const result = await t.database.db.query<{ group_id: string }>(
    'SELECT group_id FROM group_members WHERE subscriber_id = $1 ORDER BY group_id',
    [subscriberId],
  )
  return result.rows.map((r) => r.group_id)
}

async function newGroup(project: TestProject, name: string): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: project.auth, payload: { name } })
  return res.json().id
}

function expectInvalid(res: { statusCode: number; json(): any }, path: string) {
  expect(res.statusCode).toBe(400)
  expect(res.json().error.code).toBe('invalid_request')
  expect(res.json().error.issues.map((issue: { path: string }) => issue.path)).toContain(path)
}

/** An FCM endpoint padded to exactly `length` characters. */
function endpointOfLength(length: number): string {
  const base = 'https://fcm.googleapis.com/fcm/send/'
  return base + 'x'.repeat(length - base.length)
}

describe('POST /v1/subscribe for a stored subscription', () => {
  describe('idempotency on (project, endpoint)', () => {
    it('answers the same id, refreshes last_seen_at and replaces the keys', async () => {
      const p = await t.project()
      const endpoint = fcmEndpoint()
      const first = await subscribeAs(p, { endpoint, keys: pushKeys() })
      const firstRow = await row(first.json().id)
      await new Promise((resolve) => setTimeout(resolve, 20))
      const keys = pushKeys()
      const second = await subscribeAs(p, { endpoint, keys })
      expect(second.statusCode).toBe(201)
      expect(second.json()).toEqual(first.json())
      const rowsNow = await rows(p.id)
      expect(rowsNow).toHaveLength(1)
      expect(rowsNow[0]).toMatchObject({ p256dh: keys.p256dh, auth: keys.auth, status: 'active' })
      expect(rowsNow[0].last_seen_at.getTime()).toBeGreaterThan(firstRow.last_seen_at.getTime())
      expect(rowsNow[0].created_at).toEqual(firstRow.created_at)
    })

    it('sets external_id when given, keeps it when omitted, clears it with null', async () => {
      const p = await t.project()
      const endpoint = fcmEndpoint()
      const id = (await subscribeAs(p, { endpoint, keys: pushKeys() })).json().id
      expect((await row(id)).external_id).toBeNull()
      await subscribeAs(p, { endpoint, keys: pushKeys(), external_id: 'alice' })
      expect((await row(id)).external_id).toBe('alice')
      await subscribeAs(p, { endpoint, keys: pushKeys() })
      expect((await row(id)).external_id).toBe('alice')
      await subscribeAs(p, { endpoint, keys: pushKeys(), external_id: 'bob' })
      expect((await row(id)).external_id).toBe('bob')
      await subscribeAs(p, { endpoint, keys: pushKeys(), external_id: null })
      expect((await row(id)).external_id).toBeNull()
    })

    it('makes one row of concurrent identical subscribes', async () => {
      const p = await t.project()
      const body = subscription()
      const results = await Promise.all(Array.from({ length: 8 }, () => subscribeAs(p, body)))
      expect(results.map((r) => r.statusCode)).toEqual(Array(8).fill(201))
      expect(new Set(results.map((r) => r.json().id)).size).toBe(1)
      expect(await rows(p.id)).toHaveLength(1)
    })

    it('keeps the same endpoint apart in two projects', async () => {
      const a = await t.project()
      const b = await t.project()
      const body = subscription()
      const inA = (await subscribeAs(a, body)).json().id
      const inB = (await subscribeAs(b, body)).json().id
      expect(inA).not.toBe(inB)
      await unsubscribeAs(b, body.endpoint)
      expect((await row(inA)).status).toBe('active')
      expect((await row(inB)).status).toBe('unsubscribed')
    })

    it('makes an unsubscribed subscriber active again with the same id, keeping its events', async () => {
      const p = await t.project()
      const body = subscription()
      const id = (await subscribeAs(p, body)).json().id
      const broadcastId = newId('bdc')
      await t.database.db.query(
        `INSERT INTO broadcasts (id, project_id, status, target, title, body, url, ttl, urgency)
         VALUES ($1, $2, 'sent', '{"type":"all"}', 't', 'b', '/', 86400, 'normal')`,
        [broadcastId, p.id],
      )
      await t.database.db.query(
        `INSERT INTO events (id, project_id, broadcast_id, subscriber_id, type) VALUES ($1, $2, $3, $4, 'delivered')`,
        [newId('evt'), p.id, broadcastId, id],
      )
      expect((await unsubscribeAs(p, body.endpoint)).statusCode).toBe(200)
      expect((await row(id)).status).toBe('unsubscribed')

      const again = await subscribeAs(p, { ...body, keys: pushKeys() })
      expect(again.statusCode).toBe(201)
      expect(again.json()).toEqual({ id })
      expect((await row(id)).status).toBe('active')
      const events = await t.database.db.query('SELECT id FROM events WHERE subscriber_id = $1', [id])
      expect(events.rows).toHaveLength(1)
    })

    it('makes an expired subscriber active again with the same id', async () => {
      const p = await t.project()
      const body = subscription()
      const id = (await subscribeAs(p, body)).json().id
      await t.database.db.query(`UPDATE subscribers SET status = 'expired' WHERE id = $1`, [id])
      expect((await subscribeAs(p, body)).json()).toEqual({ id })
      expect((await row(id)).status).toBe('active')
    })
  })

  describe('group_ids', () => {
    it("joins the project's groups and silently drops typos, deleted groups and other projects' groups", async () => {
      const a = await t.project()
      const b = await t.project()
      const g1 = await newGroup(a, 'one')
      const g2 = await newGroup(a, 'two')
      const gone = await newGroup(a, 'gone')
      await t.app.inject({ method: 'DELETE', url: `/v1/groups/${gone}`, headers: a.auth })
      const foreign = await newGroup(b, 'theirs')
      const res = await subscribeAs(a, subscription({ group_ids: [g1, g2, g1, gone, foreign, 'grp_typo', 'nonsense', ''] }))
      expect(res.statusCode).toBe(201)
      expect(await groupIdsOf(res.json().id)).toEqual([g1, g2].sort())
      const foreignMembers = await t.database.db.query('SELECT 1 FROM group_members WHERE group_id = $1', [foreign])
      expect(foreignMembers.rows).toEqual([])
    })

    it('creates the subscriber when no group id is valid', async () => {
      const p = await t.project()
      const res = await subscribeAs(p, subscription({ group_ids: ['grp_00000000000000000000000000'] }))
      expect(res.statusCode).toBe(201)
      expect(await groupIdsOf(res.json().id)).toEqual([])
    })

    it('adds memberships on a repeat and keeps the earlier ones', async () => {
      const p = await t.project()
      const g1 = await newGroup(p, 'one')
      const g2 = await newGroup(p, 'two')
      const body = subscription()
      const id = (await subscribeAs(p, { ...body, group_ids: [g1] })).json().id
      expect((await subscribeAs(p, { ...body, group_ids: [g1, g2] })).json()).toEqual({ id })
      expect((await subscribeAs(p, body)).json()).toEqual({ id })
      expect(await groupIdsOf(id)).toEqual([g1, g2].sort())
    })
  })

  describe('subscriber cap', () => {
    it('answers 403 subscriber_limit_reached with the cap in the message and as limit', async () => {
      const p = await t.project({ limits: { subscribers: 2 } })
      await subscribe(t, p)
      await subscribe(t, p)
      const res = await subscribeAs(p, subscription())
      expect(res.statusCode).toBe(403)
      expect(res.json()).toEqual({
        error: { code: 'subscriber_limit_reached', message: expect.stringMatching(/\b2\b/), limit: 2 },
      })
      expect(await rows(p.id)).toHaveLength(2)
    })

    it('never refuses a repeat from an endpoint that is already active', async () => {
      const p = await t.project({ limits: { subscribers: 2 } })
      const body = subscription()
      const id = (await subscribeAs(p, body)).json().id
      await subscribe(t, p)
      const again = await subscribeAs(p, { ...body, keys: pushKeys() })
      expect(again.statusCode).toBe(201)
      expect(again.json()).toEqual({ id })
    })

    it('counts active subscribers only: an unsubscribe frees a place', async () => {
      const p = await t.project({ limits: { subscribers: 2 } })
      const first = subscription()
      await subscribeAs(p, first)
      await subscribe(t, p)
      await unsubscribeAs(p, first.endpoint)
      expect((await subscribeAs(p, subscription())).statusCode).toBe(201)
      // The unsubscribed one coming back would make a third active subscriber.
      const back = await subscribeAs(p, first)
      expect(back.statusCode).toBe(403)
      expect(back.json().error.code).toBe('subscriber_limit_reached')
      expect((await rows(p.id)).filter((r) => r.status === 'active')).toHaveLength(2)
    })

    it("applies the cap per project: another project's subscribers do not count", async () => {
      const a = await t.project({ limits: { subscribers: 1 } })
      const b = await t.project({ limits: { subscribers: 1 } })
      await subscribe(t, a)
      expect((await subscribeAs(b, subscription())).statusCode).toBe(201)
    })

    it('holds against concurrent subscribes of new endpoints', async () => {
      const p = await t.project({ limits: { subscribers: 3 } })
      const results = await Promise.all(Array.from({ length: 8 }, () => subscribeAs(p, subscription())))
      expect(results.filter((r) => r.statusCode === 201)).toHaveLength(3)
      expect(results.filter((r) => r.statusCode === 403)).toHaveLength(5)
      expect(await rows(p.id)).toHaveLength(3)
    })
  })
})

describe('POST /v1/unsubscribe', () => {
  it('sets the status to unsubscribed and keeps the row: 200 { ok: true }', async () => {
    const p = await t.project()
    const g = await newGroup(p, 'g')
    const body = subscription({ group_ids: [g] })
    const id = (await subscribeAs(p, body)).json().id
    const res = await unsubscribeAs(p, body.endpoint)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect(await row(id)).toMatchObject({ id, status: 'unsubscribed', endpoint: body.endpoint })
    expect(await groupIdsOf(id)).toEqual([g])
  })

  it('answers 200 for an endpoint not on file and for one already unsubscribed', async () => {
    const p = await t.project()
    expect((await unsubscribeAs(p, fcmEndpoint())).json()).toEqual({ ok: true })
    const body = subscription()
    await subscribeAs(p, body)
    await unsubscribeAs(p, body.endpoint)
    const again = await unsubscribeAs(p, body.endpoint)
    expect(again.statusCode).toBe(200)
    expect(again.json()).toEqual({ ok: true })
  })

  it('leaves an expired subscriber expired', async () => {
    const p = await t.project()
    const body = subscription()
    const id = (await subscribeAs(p, body)).json().id
    await t.database.db.query(`UPDATE subscribers SET status = 'expired' WHERE id = $1`, [id])
    expect((await unsubscribeAs(p, body.endpoint)).statusCode).toBe(200)
    expect((await row(id)).status).toBe('expired')
  })

  it("does not touch another project's subscriber with that endpoint", async () => {
    const a = await t.project()
    const b = await t.project()
    const body = subscription()
    const id = (await subscribeAs(a, body)).json().id
    expect((await unsubscribeAs(b, body.endpoint)).statusCode).toBe(200)
    expect((await row(id)).status).toBe('active')
  })

  it('takes the project from the X-Service-Project header', async () => {
    const p = await t.project()
    const body = subscription()
    const id = (await subscribeAs(p, body)).json().id
    const res = await post('/v1/unsubscribe', { endpoint: body.endpoint }, { 'x-service-project': p.id })
    expect(res.statusCode).toBe(200)
    expect((await row(id)).status).toBe('unsubscribed')
  })

  it('answers 400 missing_project and 404 project_not_found', async () => {
    const body = { endpoint: fcmEndpoint() }
    for (const [url, headers] of [['/v1/unsubscribe', {}], ['/v1/unsubscribe?project=', {}]] as const) {
      const res = await post(url, body, headers)
      expect(res.statusCode).toBe(400)
      expect(res.json().error.code).toBe('missing_project')
    }
    for (const [url, headers] of [
      ['/v1/unsubscribe?project=prj_00000000000000000000000000', {}],
      ['/v1/unsubscribe', { 'x-service-project': 'prj_00000000000000000000000000' }],
    ] as const) {
      const res = await post(url, body, headers)
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('project_not_found')
    }
  })

  it('requires an endpoint of at most 2048 characters', async () => {
    const p = await t.project()
    expect((await unsubscribeAs(p, endpointOfLength(2048))).statusCode).toBe(200)
    expectInvalid(await unsubscribeAs(p, endpointOfLength(2049)), 'endpoint')
    expectInvalid(await unsubscribeAs(p, undefined), 'endpoint')
    expectInvalid(await unsubscribeAs(p, 42), 'endpoint')
  })
})

