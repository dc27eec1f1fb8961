// POST /v1/subscribe and /v1/unsubscribe at the door (api.md 4.8, 4.9, §5,
// §7, §8): project auth, validation boundaries, the push endpoint rule and
// CORS. What happens to stored subscriptions: subscribe.lifecycle.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { newId } from '../platform/ids.ts'
import { fcmEndpoint, pushKeys, subscription } from './subscribers.fixtures.ts'
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

describe('POST /v1/subscribe', () => {
  it('stores the subscription: 201 { id: sub_… }, active, with its keys', async () => {
    const p = await t.project()
    const body = subscription({ external_id: 'user_42' })
    const before = Date.now()
    const res = await subscribeAs(p, body)
    expect(res.statusCode).toBe(201)
    expect(res.json()).toEqual({ id: expect.stringMatching(/^sub_[0-9a-z]{26}$/) })
    const stored = await row(res.json().id)
    const keys = body.keys as { p256dh: string; auth: string }
    expect(stored).toMatchObject({
      project_id: p.id,
      endpoint: body.endpoint,
      p256dh: keys.p256dh,
      auth: keys.auth,
      external_id: 'user_42',
      status: 'active',
    })
    expect(stored.created_at.getTime()).toBeGreaterThanOrEqual(before - 1000)
  })

  it('takes the project from the X-Service-Project header', async () => {
    const p = await t.project()
    const res = await post('/v1/subscribe', subscription(), { 'x-service-project': p.id })
    expect(res.statusCode).toBe(201)
    expect((await rows(p.id)).map((r) => r.id)).toEqual([res.json().id])
  })

  it('accepts what PushSubscription.toJSON() gives, expirationTime included', async () => {
    const p = await t.project()
    expect((await subscribeAs(p, { ...subscription(), expirationTime: null })).statusCode).toBe(201)
  })

  it('answers 400 missing_project without the parameter or the header, or with them empty', async () => {
    for (const [url, headers] of [
      ['/v1/subscribe', {}],
      ['/v1/subscribe?project=', {}],
      ['/v1/subscribe', { 'x-service-project': '' }],
    ] as const) {
      const res = await post(url, subscription(), headers)
      expect(res.statusCode).toBe(400)
      expect(res.json().error.code).toBe('missing_project')
    }
  })

  it('answers 404 project_not_found for an unknown project, by parameter or header', async () => {
    for (const [url, headers] of [
      ['/v1/subscribe?project=prj_00000000000000000000000000', {}],
      ['/v1/subscribe', { 'x-service-project': 'prj_00000000000000000000000000' }],
      ['/v1/subscribe?project=nonsense', {}],
    ] as const) {
      const res = await post(url, subscription(), headers)
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('project_not_found')
    }
  })

  it('checks the project before the body', async () => {
    const res = await post('/v1/subscribe', { endpoint: 'not a url' })
    expect(res.json().error.code).toBe('missing_project')
  })

  describe('validation', () => {
    it('takes an endpoint of 2048 characters and refuses 2049', async () => {
      const p = await t.project()
      expect((await subscribeAs(p, { endpoint: endpointOfLength(2048), keys: pushKeys() })).statusCode).toBe(201)
      expectInvalid(await subscribeAs(p, { endpoint: endpointOfLength(2049), keys: pushKeys() }), 'endpoint')
    })

    it('refuses an endpoint that is missing, not a string, not a URL, or not http(s)', async () => {
      const p = await t.project()
      expectInvalid(await subscribeAs(p, { keys: pushKeys() }), 'endpoint')
      expectInvalid(await subscribeAs(p, { endpoint: 42, keys: pushKeys() }), 'endpoint')
      expectInvalid(await subscribeAs(p, { endpoint: 'not a url', keys: pushKeys() }), 'endpoint')
      expectInvalid(await subscribeAs(p, { endpoint: 'ftp://fcm.googleapis.com/x', keys: pushKeys() }), 'endpoint')
      expectInvalid(await subscribeAs(p, { endpoint: 'https://user:pw@fcm.googleapis.com/x', keys: pushKeys() }), 'endpoint')
      expect(await rows(p.id)).toEqual([])
    })

    it('requires both keys', async () => {
      const p = await t.project()
      expectInvalid(await subscribeAs(p, { endpoint: fcmEndpoint() }), 'keys')
      expectInvalid(await subscribeAs(p, { endpoint: fcmEndpoint(), keys: { auth: pushKeys().auth } }), 'keys.p256dh')
      expectInvalid(await subscribeAs(p, { endpoint: fcmEndpoint(), keys: { p256dh: pushKeys().p256dh } }), 'keys.auth')
      expectInvalid(await subscribeAs(p, { endpoint: fcmEndpoint(), keys: { p256dh: '', auth: '' } }), 'keys.p256dh')
    })

    it('takes keys of 256 characters and refuses 257', async () => {
      const p = await t.project()
      const { p256dh, auth } = pushKeys()
      expect((await subscribeAs(p, { endpoint: fcmEndpoint(), keys: { p256dh: 'A'.repeat(256), auth: 'B'.repeat(256) } })).statusCode).toBe(201)
      expectInvalid(await subscribeAs(p, { endpoint: fcmEndpoint(), keys: { p256dh: 'A'.repeat(257), auth } }), 'keys.p256dh')
      expectInvalid(await subscribeAs(p, { endpoint: fcmEndpoint(), keys: { p256dh, auth: 'B'.repeat(257) } }), 'keys.auth')
    })

    it('takes base64url (padding allowed) and refuses other characters in keys', async () => {
      const p = await t.project()
      const { p256dh, auth } = pushKeys()
      expect((await subscribeAs(p, { endpoint: fcmEndpoint(), keys: { p256dh: 'ab-_CD==', auth } })).statusCode).toBe(201)
      expectInvalid(await subscribeAs(p, { endpoint: fcmEndpoint(), keys: { p256dh: 'ab+/cd', auth } }), 'keys.p256dh')
      expectInvalid(await subscribeAs(p, { endpoint: fcmEndpoint(), keys: { p256dh, auth: 'a b' } }), 'keys.auth')
    })

    it('takes an external_id of 256 characters and refuses 257 or a character outside A-Z a-z 0-9 _ -', async () => {
      const p = await t.project()
      const ok = 'aZ09_-'.repeat(43).slice(0, 256)
      const res = await subscribeAs(p, subscription({ external_id: ok }))
      expect(res.statusCode).toBe(201)
      expect((await row(res.json().id)).external_id).toBe(ok)
      expectInvalid(await subscribeAs(p, subscription({ external_id: 'a'.repeat(257) })), 'external_id')
      for (const bad of ['user@example.com', 'a b', 'é', 'a.b', '']) {
        expectInvalid(await subscribeAs(p, subscription({ external_id: bad })), 'external_id')
      }
      expectInvalid(await subscribeAs(p, subscription({ external_id: 42 })), 'external_id')
    })

    it('takes 50 group_ids and refuses 51 or a non-array', async () => {
      const p = await t.project()
      const fifty = Array.from({ length: 50 }, () => newId('grp'))
      expect((await subscribeAs(p, subscription({ group_ids: fifty }))).statusCode).toBe(201)
      expectInvalid(await subscribeAs(p, subscription({ group_ids: [...fifty, newId('grp')] })), 'group_ids')
      expectInvalid(await subscribeAs(p, subscription({ group_ids: 'grp_x' })), 'group_ids')
    })

    it('answers invalid_json for a body that is not JSON', async () => {
      const p = await t.project()
      const res = await t.app.inject({
        method: 'POST',
        url: `/v1/subscribe?project=${p.id}`,
        headers: { 'content-type': 'application/json' },
        payload: '{',
      })
      expect(res.statusCode).toBe(400)
      expect(res.json().error.code).toBe('invalid_json')
    })
  })
})

describe('CORS on the browser routes', () => {
  it('answers a preflight and a request that carry an Origin', async () => {
    const p = await t.project()
    const preflight = await t.app.inject({
      method: 'OPTIONS',
      url: `/v1/subscribe?project=${p.id}`,
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    })
    expect(preflight.statusCode).toBeLessThan(300)
    expect(preflight.headers['access-control-allow-origin']).toBe('https://shop.example')
    for (const url of [`/v1/subscribe?project=${p.id}`, `/v1/unsubscribe?project=${p.id}`]) {
      const payload = url.includes('unsubscribe') ? { endpoint: fcmEndpoint() } : subscription()
      const res = await post(url, payload, { origin: 'https://shop.example' })
      expect(res.statusCode).toBeLessThan(300)
      expect(res.headers['access-control-allow-origin']).toBe('https://shop.example')
    }
  })

  it('also answers CORS on errors, so the browser SDK can read them', async () => {
    const res = await post('/v1/subscribe', subscription(), { origin: 'https://shop.example' })
    expect(res.statusCode).toBe(400)
    expect(res.headers['access-control-allow-origin']).toBe('https://shop.example')
  })
})

describe('the push endpoint rule (HERALD_ALLOW_PRIVATE_ENDPOINTS=false)', () => {
  let strict: TestApp
  beforeAll(async () => {
    strict = await createTestApp({ HERALD_ALLOW_PRIVATE_ENDPOINTS: 'false' })
  })
  afterAll(async () => {
    await strict.close()
  })

  it('takes an endpoint of a known push service and refuses any other', async () => {
    const p = await strict.project()
    const send = (endpoint: string) =>
      strict.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: { endpoint, keys: pushKeys() } })
    expect((await send(fcmEndpoint())).statusCode).toBe(201)
    expect((await send('https://updates.push.services.mozilla.com/wpush/v2/abc')).statusCode).toBe(201)
    expect((await send('https://web.push.apple.com/QGx')).statusCode).toBe(201)
    for (const endpoint of [
      'https://example.com/push/abc',
      'http://fcm.googleapis.com/fcm/send/abc',
      'https://127.0.0.1/push',
      'https://localhost:8443/push',
      'https://fcm.googleapis.com.evil.example/x',
    ]) {
      const res = await send(endpoint)
      expect(res.statusCode, endpoint).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
      expect(res.json().error.issues).toEqual([{ path: 'endpoint', message: expect.any(String) }])
    }
    const stored = await strict.database.db.query('SELECT count(*)::int8 AS n FROM subscribers WHERE project_id = $1', [p.id])
    expect(stored.rows[0]).toEqual({ n: 3 })
  })

  it('lets a local endpoint through in the default test app (private endpoints allowed)', async () => {
    const p = await t.project()
    expect((await subscribeAs(p, { endpoint: 'http://127.0.0.1:9999/push/abc', keys: pushKeys() })).statusCode).toBe(201)
  })
})
