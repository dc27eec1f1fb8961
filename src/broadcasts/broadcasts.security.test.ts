// Every broadcasts route: bearer auth (401), cross-project isolation (404, and
// nothing changed), bad JSON (400), and the rate limit (429 with Retry-After).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { awayFromWindowEdge } from '../../test/support/rate-window.ts'
import { getBroadcast, insertGroup, insertSubscribers, send, sendBody } from './broadcasts.fixtures.ts'

const DAY = 24 * 60 * 60 * 1000

let t: TestApp
let a: TestProject
let b: TestProject
let scheduledA: string
let pendingA: string
beforeAll(async () => {
  t = await createTestApp()
  a = await t.project({ plan: 'plus' })
  b = await t.project({ plan: 'plus' })
  await insertSubscribers(t.ctx.db, a.id, 2)
  scheduledA = (await send(t, a, sendBody({ scheduled_at: Date.now() + DAY }))).json().broadcast_id
  pendingA = (await send(t, a, sendBody())).json().broadcast_id
})
afterAll(async () => {
  await t.close()
})

type Route = { name: string; method: 'GET' | 'POST' | 'DELETE'; url: () => string; payload?: () => unknown }
const ROUTES: Route[] = [
  { name: 'POST /v1/send', method: 'POST', url: () => '/v1/send', payload: () => sendBody() },
  { name: 'GET /v1/broadcasts', method: 'GET', url: () => '/v1/broadcasts' },
  { name: 'GET /v1/broadcasts/:id', method: 'GET', url: () => `/v1/broadcasts/${scheduledA}` },
  { name: 'DELETE /v1/broadcasts/:id', method: 'DELETE', url: () => `/v1/broadcasts/${scheduledA}` },
]

describe('broadcasts routes: authentication', () => {
  it.each(ROUTES)('$name without, with a malformed or a wrong key → 401 invalid_api_key', async (route) => {
    for (const headers of [
      {},
      { authorization: 'Bearer' },
      { authorization: 'Basic abc' },
      { authorization: a.auth.authorization.slice(0, -2) + 'zz' },
      { authorization: 'Bearer hk_live_' + 'x'.repeat(40) },
    ]) {
      const res = await t.app.inject({ method: route.method, url: route.url(), headers, payload: route.payload?.() as object })
      expect(res.statusCode).toBe(401)
      expect(res.json().error.code).toBe('invalid_api_key')
    }
    expect((await getBroadcast(t, a, scheduledA)).json().status).toBe('scheduled')
  })
})

describe('broadcasts routes: cross-project isolation', () => {
  it('B cannot read A\'s broadcast: 404 broadcast_not_found', async () => {
    const res = await getBroadcast(t, b, scheduledA)
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toBe('broadcast_not_found')
  })

  it('B cannot cancel A\'s scheduled (or pending) broadcast: 404, and A\'s stays as it was', async () => {
    for (const id of [scheduledA, pendingA]) {
      const res = await t.app.inject({ method: 'DELETE', url: `/v1/broadcasts/${id}`, headers: b.auth })
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('broadcast_not_found')
    }
    expect((await getBroadcast(t, a, scheduledA)).json().status).toBe('scheduled')
    expect((await getBroadcast(t, a, pendingA)).json().status).toBe('pending')
  })

  it('B\'s list never shows A\'s broadcasts, even with A\'s id as cursor or a status filter', async () => {
    const own = (await send(t, b, sendBody())).json().broadcast_id
    for (const query of ['', '?status=scheduled', `?cursor=${own}`, '?limit=100']) {
      const res = await t.app.inject({ method: 'GET', url: `/v1/broadcasts${query}`, headers: b.auth })
      const ids = res.json().broadcasts.map((x: { id: string }) => x.id)
      expect(ids).not.toContain(scheduledA)
      expect(ids).not.toContain(pendingA)
    }
    const listed = await t.app.inject({ method: 'GET', url: '/v1/broadcasts', headers: b.auth })
    expect(listed.json().broadcasts.map((x: { id: string }) => x.id)).toEqual([own])
  })

  it('B cannot send to A\'s group: 404 group_not_found', async () => {
    const group = await insertGroup(t.ctx.db, a.id, [])
    const res = await send(t, b, sendBody({ target: { type: 'group', group_id: group } }))
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toBe('group_not_found')
  })

  it('B\'s sends reach only B\'s subscribers and use B\'s budget', async () => {
    const res = await send(t, b, sendBody())
    expect((await getBroadcast(t, b, res.json().broadcast_id)).json().audience).toBe(0)
  })
})

describe('POST /v1/send body parsing', () => {
  it('a body that is not JSON → 400 invalid_json', async () => {
    for (const payload of ['{"target":', 'hello', '']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/send',
        headers: { ...a.auth, 'content-type': 'application/json' },
        payload,
      })
      expect(res.statusCode).toBe(400)
      expect(res.json().error.code).toBe('invalid_json')
    }
  })
})

describe('broadcasts routes: rate limit', () => {
  it.each(ROUTES)('$name: the 4th request in a minute at 3/min → 429 rate_limited with Retry-After', async (route) => {
    const p = await t.project({ plan: 'plus', limits: { requests_per_minute: 3 } })
    await awayFromWindowEdge()
    const statuses: number[] = []
    let last
    for (let i = 0; i < 4; i++) {
      last = await t.app.inject({ method: route.method, url: route.url(), headers: p.auth, payload: route.payload?.() as object })
      statuses.push(last.statusCode)
    }
    expect(statuses.slice(0, 3)).not.toContain(429)
    expect(last!.statusCode).toBe(429)
    expect(last!.json().error.code).toBe('rate_limited')
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0)
    expect(Number(last!.headers['retry-after'])).toBeLessThanOrEqual(60)
  })
})
