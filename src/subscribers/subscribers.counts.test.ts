// GET /v1/subscribers/counts: the project's subscribers by status, for the
// dashboard's overview, without listing them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { subscribe, subscription } from './subscribers.fixtures.ts'

let t: TestApp
let a: TestProject
let b: TestProject
beforeAll(async () => {
  t = await createTestApp()
  a = await t.project()
  b = await t.project()
})
afterAll(async () => {
  await t.close()
})

const counts = (project: TestProject) => t.app.inject({ method: 'GET', url: '/v1/subscribers/counts', headers: project.auth })

describe('GET /v1/subscribers/counts', () => {
  it('is all zero for a new project', async () => {
    const res = await counts(a)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ active: 0, unsubscribed: 0, expired: 0 })
  })

  it('follows subscribe, unsubscribe, expiry, re-subscribe and erasure', async () => {
    const bodies = [subscription(), subscription(), subscription(), subscription()]
    const ids: string[] = []
    for (const body of bodies) {
      const res = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${a.id}`, payload: body })
      ids.push(res.json().id)
    }
    await subscribe(t, b)
    expect((await counts(a)).json()).toEqual({ active: 4, unsubscribed: 0, expired: 0 })

    await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${a.id}`, payload: { endpoint: bodies[0].endpoint } })
    await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${a.id}`, payload: { endpoint: bodies[1].endpoint } })
    // What fan-out does after a 404/410 from the push service.
    await t.database.db.query("UPDATE subscribers SET status = 'expired' WHERE id = $1", [ids[2]])
    expect((await counts(a)).json()).toEqual({ active: 1, unsubscribed: 2, expired: 1 })

    await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${a.id}`, payload: bodies[1] })
    await t.app.inject({ method: 'DELETE', url: `/v1/subscribers/${ids[0]}`, headers: a.auth })
    expect((await counts(a)).json()).toEqual({ active: 2, unsubscribed: 0, expired: 1 })
    // The same numbers as the list filters give.
    for (const status of ['active', 'unsubscribed', 'expired']) {
      const list = await t.app.inject({ method: 'GET', url: `/v1/subscribers?status=${status}`, headers: a.auth })
      expect(list.json().subscribers.length, status).toBe((await counts(a)).json()[status])
    }
    expect((await counts(b)).json()).toEqual({ active: 1, unsubscribed: 0, expired: 0 })
  })

  it('is not read as a subscriber id', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: '/v1/subscribers/counts', headers: a.auth })
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toBe('subscriber_not_found')
  })

  it('answers 401 invalid_api_key without a valid key', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/subscribers/counts', headers: { authorization: 'Bearer hk_live_nope' } })
    expect(res.statusCode).toBe(401)
    expect(res.json().error.code).toBe('invalid_api_key')
  })
})
