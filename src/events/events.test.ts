import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { newId } from '../platform/ids.ts'
import { insertSentBroadcast } from '../broadcasts/broadcasts.fixtures.ts'

let t: TestApp
let a: TestProject
let b: TestProject
beforeAll(async () => {
  t = await createTestApp()
  a = await t.project({ name: 'A' })
  b = await t.project({ name: 'B' })
})
afterAll(async () => {
  await t.close()
})

const insertBroadcast = (projectId: string): Promise<string> => insertSentBroadcast(t.database.db, projectId)

async function insertSubscriber(projectId: string): Promise<string> {
  const id = newId('sub')
  await t.database.db.query(
    `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, external_id) VALUES ($1, $2, $3, 'k', 'a', 'user_1')`,
    [id, projectId, `https://fcm.googleapis.com/fcm/send/${id}`],
  )
  return id
}

async function counts(broadcastId: string): Promise<{ clicked: number; dismissed: number }> {
  const result = await t.database.db.query<{ clicked: number; dismissed: number }>(
    'SELECT clicked, dismissed FROM broadcasts WHERE id = $1',
    [broadcastId],
  )
  return result.rows[0]
}

/** Everything events can change, across all projects: must stay put when a request is dropped. */
async function snapshot(): Promise<{ events: number; clicked: number; dismissed: number }> {
  const result = await t.database.db.query<{ events: number; clicked: number; dismissed: number }>(
    `SELECT (SELECT count(*)::int FROM events) AS events,
            (SELECT COALESCE(sum(clicked), 0)::int FROM broadcasts) AS clicked,
            (SELECT COALESCE(sum(dismissed), 0)::int FROM broadcasts) AS dismissed`,
  )
  return result.rows[0]
}

interface Beacon {
  url?: string
  payload?: string
  headers?: Record<string, string>
}

function post({ url, payload, headers }: Beacon) {
  return t.app.inject({ method: 'POST', url: url ?? '/v1/events', payload, headers: { 'content-type': 'application/json', ...headers } })
}

function expectAccepted(res: Awaited<ReturnType<typeof post>>): void {
  expect(res.statusCode).toBe(202)
  expect(res.json()).toEqual({ ok: true })
}

describe('POST /v1/events records', () => {
  it('a click: 202, clicked + 1, one event row without subscriber identity', async () => {
    const bdc = await insertBroadcast(a.id)
    const before = await snapshot()
    const res = await post({ url: `/v1/events?project=${a.id}`, payload: JSON.stringify({ type: 'clicked', broadcast_id: bdc }) })
    expectAccepted(res)
    expect(await counts(bdc)).toEqual({ clicked: 1, dismissed: 0 })
    const rows = await t.database.db.query('SELECT id, project_id, broadcast_id, subscriber_id, external_id, type, meta FROM events WHERE broadcast_id = $1', [bdc])
    expect(rows.rows).toEqual([
      { id: expect.stringMatching(/^evt_/), project_id: a.id, broadcast_id: bdc, subscriber_id: null, external_id: null, type: 'clicked', meta: null },
    ])
    expect(await snapshot()).toEqual({ events: before.events + 1, clicked: before.clicked + 1, dismissed: before.dismissed })
  })

  it('a dismiss: dismissed + 1', async () => {
    const bdc = await insertBroadcast(a.id)
    expectAccepted(await post({ url: `/v1/events?project=${a.id}`, payload: JSON.stringify({ type: 'dismissed', broadcast_id: bdc }) }))
    expectAccepted(await post({ url: `/v1/events?project=${a.id}`, payload: JSON.stringify({ type: 'dismissed', broadcast_id: bdc }) }))
    expectAccepted(await post({ url: `/v1/events?project=${a.id}`, payload: JSON.stringify({ type: 'clicked', broadcast_id: bdc }) }))
    expect(await counts(bdc)).toEqual({ clicked: 1, dismissed: 2 })
    const types = await t.database.db.query<{ type: string }>('SELECT type FROM events WHERE broadcast_id = $1 ORDER BY id', [bdc])
    expect(types.rows.map((r) => r.type)).toEqual(['dismissed', 'dismissed', 'clicked'])
  })

  it('stores subscriber_id and external_id as null even when the beacon names a real subscriber', async () => {
    const bdc = await insertBroadcast(a.id)
    const sub = await insertSubscriber(a.id)
    expectAccepted(await post({ url: `/v1/events?project=${a.id}`, payload: JSON.stringify({ type: 'clicked', broadcast_id: bdc, subscriber_id: sub }) }))
    const rows = await t.database.db.query('SELECT subscriber_id, external_id FROM events WHERE broadcast_id = $1', [bdc])
    expect(rows.rows).toEqual([{ subscriber_id: null, external_id: null }])
    expect(await counts(bdc)).toEqual({ clicked: 1, dismissed: 0 })
  })

  it('a text/plain body (navigator.sendBeacon), with or without a charset', async () => {
    const bdc = await insertBroadcast(a.id)
    const payload = JSON.stringify({ type: 'clicked', broadcast_id: bdc })
    expectAccepted(await post({ url: `/v1/events?project=${a.id}`, payload, headers: { 'content-type': 'text/plain' } }))
    expectAccepted(await post({ url: `/v1/events?project=${a.id}`, payload, headers: { 'content-type': 'text/plain;charset=UTF-8' } }))
    expect(await counts(bdc)).toEqual({ clicked: 2, dismissed: 0 })
  })

  it('ignores extra fields and a null subscriber_id', async () => {
    const bdc = await insertBroadcast(a.id)
    const payload = JSON.stringify({ type: 'clicked', broadcast_id: bdc, subscriber_id: null, action: 'open' })
    expectAccepted(await post({ url: `/v1/events?project=${a.id}`, payload }))
    expect(await counts(bdc)).toEqual({ clicked: 1, dismissed: 0 })
  })
})

describe('POST /v1/events drops silently, answering 202', () => {
  let bdcA: string
  let bdcB: string
  let limited: TestProject
  let bdcLimited: string
  beforeAll(async () => {
    bdcA = await insertBroadcast(a.id)
    bdcB = await insertBroadcast(b.id)
    // 0 requests a minute: every request is over the limit, with no race against the window's end.
    limited = await t.project({ name: 'Limited', limits: { requests_per_minute: 0 } })
    bdcLimited = await insertBroadcast(limited.id)
  })

  const click = (broadcastId: string) => JSON.stringify({ type: 'clicked', broadcast_id: broadcastId })

  const cases: Array<[string, () => Beacon]> = [
    ['a missing project parameter', () => ({ payload: click(bdcA) })],
    ['an empty project parameter', () => ({ url: '/v1/events?project=', payload: click(bdcA) })],
    ['an unknown project', () => ({ url: '/v1/events?project=prj_doesnotexist', payload: click(bdcA) })],
    ['a very long project parameter', () => ({ url: `/v1/events?project=${'p'.repeat(500)}`, payload: click(bdcA) })],
    ['the project in the header only (query required)', () => ({ payload: click(bdcA), headers: { 'x-service-project': a.id } })],
    ['a broadcast of another project', () => ({ url: `/v1/events?project=${a.id}`, payload: click(bdcB) })],
    ['an unknown broadcast', () => ({ url: `/v1/events?project=${a.id}`, payload: click(newId('bdc')) })],
    ['a missing broadcast_id', () => ({ url: `/v1/events?project=${a.id}`, payload: JSON.stringify({ type: 'clicked' }) })],
    ['a broadcast_id that is not a bdc_ id', () => ({ url: `/v1/events?project=${a.id}`, payload: JSON.stringify({ type: 'clicked', broadcast_id: 42 }) })],
    ['a type of delivered', () => ({ url: `/v1/events?project=${a.id}`, payload: JSON.stringify({ type: 'delivered', broadcast_id: bdcA }) })],
    ['an unknown type', () => ({ url: `/v1/events?project=${a.id}`, payload: JSON.stringify({ type: 'opened', broadcast_id: bdcA }) })],
    ['a missing type', () => ({ url: `/v1/events?project=${a.id}`, payload: JSON.stringify({ broadcast_id: bdcA }) })],
    ['bad JSON', () => ({ url: `/v1/events?project=${a.id}`, payload: '{"type": "clicked",' })],
    ['bad JSON as text/plain', () => ({ url: `/v1/events?project=${a.id}`, payload: 'clicked', headers: { 'content-type': 'text/plain' } })],
    ['an array body', () => ({ url: `/v1/events?project=${a.id}`, payload: `[${click(bdcA)}]` })],
    ['an empty body', () => ({ url: `/v1/events?project=${a.id}`, payload: '' })],
    ['a form content type', () => ({ url: `/v1/events?project=${a.id}`, payload: `type=clicked&broadcast_id=${bdcA}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } })],
    ['no content type', () => ({ url: `/v1/events?project=${a.id}`, payload: click(bdcA), headers: { 'content-type': '' } })],
    ['a body over 4 KB', () => ({ url: `/v1/events?project=${a.id}`, payload: JSON.stringify({ type: 'clicked', broadcast_id: bdcA, pad: 'x'.repeat(4096) }) })],
    ['a subscriber_id that is not a string', () => ({ url: `/v1/events?project=${a.id}`, payload: JSON.stringify({ type: 'clicked', broadcast_id: bdcA, subscriber_id: 7 }) })],
    ['a project over its rate limit', () => ({ url: `/v1/events?project=${limited.id}`, payload: click(bdcLimited) })],
  ]

  for (const [name, beacon] of cases) {
    it(name, async () => {
      const before = await snapshot()
      const res = await post(beacon())
      expectAccepted(res)
      expect(await snapshot()).toEqual(before)
    })
  }

  it('and the dropped broadcasts were never counted', async () => {
    expect(await counts(bdcA)).toEqual({ clicked: 0, dismissed: 0 })
    expect(await counts(bdcB)).toEqual({ clicked: 0, dismissed: 0 })
    expect(await counts(bdcLimited)).toEqual({ clicked: 0, dismissed: 0 })
  })

  it('bad JSON does not cost the client its connection (Fastify closes it after a parser error)', async () => {
    for (const [payload, type] of [['{"type": "clicked",', 'application/json'], ['clicked', 'text/plain'], ['', 'application/json']]) {
      const res = await post({ url: `/v1/events?project=${a.id}`, payload, headers: { 'content-type': type } })
      expectAccepted(res)
      expect(res.headers.connection).not.toBe('close')
    }
  })

  it('a body just under 4 KB is still read', async () => {
    const payload = JSON.stringify({ type: 'clicked', broadcast_id: bdcA, pad: 'x'.repeat(3900) })
    expect(payload.length).toBeLessThanOrEqual(4096)
    expectAccepted(await post({ url: `/v1/events?project=${a.id}`, payload }))
    expect(await counts(bdcA)).toEqual({ clicked: 1, dismissed: 0 })
  })
})

describe('POST /v1/events from a browser', () => {
  it('answers CORS for any origin, preflight included', async () => {
    const bdc = await insertBroadcast(a.id)
    const res = await post({
      url: `/v1/events?project=${a.id}`,
      payload: JSON.stringify({ type: 'clicked', broadcast_id: bdc }),
      headers: { origin: 'https://shop.example.com' },
    })
    expectAccepted(res)
    expect(res.headers['access-control-allow-origin']).toBe('https://shop.example.com')
    const preflight = await t.app.inject({
      method: 'OPTIONS',
      url: `/v1/events?project=${a.id}`,
      headers: { origin: 'https://shop.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    })
    expect(preflight.statusCode).toBe(204)
    expect(preflight.headers['access-control-allow-origin']).toBe('https://shop.example.com')
    expect(String(preflight.headers['access-control-allow-methods'])).toContain('POST')
    expect(String(preflight.headers['access-control-allow-headers']).toLowerCase()).toContain('content-type')
  })

  it('keeps the text/plain parser to this route: another route does not read text/plain as JSON', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/groups',
      headers: { ...a.auth, 'content-type': 'text/plain' },
      payload: JSON.stringify({ name: 'from text/plain' }),
    })
    expect(res.statusCode).not.toBe(201)
    expect(res.statusCode).toBeGreaterThanOrEqual(400)
    const groups = await t.database.db.query('SELECT id FROM groups WHERE project_id = $1', [a.id])
    expect(groups.rows).toEqual([])
  })
})

// Migration 0016: the events' project and broadcast keys gave way to a trigger; the subscriber's key stays.
describe('events go with what they are about', () => {
  async function eventsOf(broadcastId: string): Promise<number> {
    const result = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE broadcast_id = $1', [broadcastId])
    return result.rows[0].n
  }
  async function recordDelivered(projectId: string, broadcastId: string, subscriberId: string | null): Promise<void> {
    await t.database.db.query(
      `INSERT INTO events (id, project_id, broadcast_id, subscriber_id, type) VALUES ($1, $2, $3, $4, $5)`,
      [newId('evt'), projectId, broadcastId, subscriberId, subscriberId ? 'delivered' : 'clicked'],
    )
  }

  it('deleting a project deletes its broadcasts and their events, beacons (no subscriber) included; other projects keep theirs', async () => {
    const gone = await t.project({ name: 'Gone' })
    const broadcast = await insertBroadcast(gone.id)
    await recordDelivered(gone.id, broadcast, await insertSubscriber(gone.id))
    await recordDelivered(gone.id, broadcast, null)
    const kept = await insertBroadcast(b.id)
    await recordDelivered(b.id, kept, null)
    expect(await eventsOf(broadcast)).toBe(2)
    await t.database.db.query('DELETE FROM projects WHERE id = $1', [gone.id])
    expect(await eventsOf(broadcast)).toBe(0)
    expect(await eventsOf(kept)).toBe(1)
  })

  it('erasing a subscriber deletes its events, and an event cannot name a subscriber that does not exist', async () => {
    const broadcast = await insertBroadcast(a.id)
    const subscriber = await insertSubscriber(a.id)
    await recordDelivered(a.id, broadcast, subscriber)
    await recordDelivered(a.id, broadcast, null)
    await t.database.db.query('DELETE FROM subscribers WHERE id = $1', [subscriber])
    expect(await eventsOf(broadcast)).toBe(1)
    await expect(recordDelivered(a.id, broadcast, newId('sub'))).rejects.toMatchObject({ code: '23503' })
    expect(await eventsOf(broadcast)).toBe(1)
  })
})
