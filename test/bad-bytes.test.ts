// Issue 15 §3, case by case: strings PostgreSQL cannot store (NUL, lone UTF-16
// surrogates) are refused with 400 invalid_request naming the field, on every
// route and in every part of a request, before anything reaches the database;
// POST /v1/events still answers 202 and records nothing; a value the database
// refuses anyway is a 400, never a 500; every invalid_request has issues.
// test/fuzz.test.ts covers the same ground at random; these are the cases seen.
import Fastify from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { createTestApp, type TestApp, type TestProject } from './support/app.ts'
import { changedTables, fingerprinter, type Fingerprint } from './support/db-fingerprint.ts'
import { subscription } from '../src/subscribers/subscribers.fixtures.ts'
import { insertGroup, insertSentBroadcast } from '../src/broadcasts/broadcasts.fixtures.ts'
import { installErrorHandling } from '../src/platform/http/errors.ts'

let t: TestApp
let p: TestProject
let group: string
let broadcast: string
let fingerprint: () => Promise<Fingerprint>

beforeAll(async () => {
  t = await createTestApp({ HERALD_ALLOW_PRIVATE_ENDPOINTS: 'false' })
  p = await t.project({ plan: 'max' })
  group = await insertGroup(t.ctx.db, p.id)
  broadcast = await insertSentBroadcast(t.ctx.db, p.id)
  fingerprint = await fingerprinter(t.ctx.db)
})
afterAll(async () => {
  await t.close()
})

/** JSON text as a client would send it: escapes such as \u0000 and \udc00 stay escapes on the wire. */
const json = (text: string) => ({ headers: { 'content-type': 'application/json' }, payload: text })

/** Sends the request and checks it was refused with invalid_request naming `path`, having written nothing. */
async function expectRefused(options: InjectOptions, path: string): Promise<LightMyRequestResponse> {
  const before = await fingerprint()
  const res = await t.app.inject(options)
  expect(res.statusCode, res.body).toBe(400)
  const error = res.json().error
  expect(error.code).toBe('invalid_request')
  expect(error.issues.map((issue: { path: string }) => issue.path)).toContain(path)
  expect(changedTables(before, await fingerprint())).toEqual([])
  return res
}

describe('a NUL character is refused wherever it is', () => {
  it('in a query parameter of an unauthenticated route: POST /v1/subscribe?project=prj_%00', async () => {
    await expectRefused({ method: 'POST', url: '/v1/subscribe?project=prj_%00', payload: subscription() }, 'querystring.project')
  })

  it('in a JSON string: a group name "a\\u0000b"', async () => {
    const res = await expectRefused({ method: 'POST', url: '/v1/groups', ...json('{"name":"a\\u0000b"}'), headers: { ...p.auth, 'content-type': 'application/json' } }, 'name')
    expect(res.json().error.issues[0].message).toMatch(/NUL/)
  })

  it('in a path parameter: DELETE /v1/webhooks/x%00', async () => {
    await expectRefused({ method: 'DELETE', url: '/v1/webhooks/x%00', headers: p.auth }, 'params.id')
  })

  it('deep in a body: an array item, a nested field', async () => {
    const body = subscription({ group_ids: [group, 'grp_\u0000'] })
    await expectRefused({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: body }, 'group_ids.1')
    await expectRefused({
      method: 'POST',
      url: '/v1/send',
      headers: p.auth,
      payload: { target: { type: 'user', external_id: 'u\u0000' }, notification: { title: 'Hi', body: 'x' } },
    }, 'target.external_id')
  })

  it('in a property name, which is not echoed back', async () => {
    const res = await expectRefused({
      method: 'PATCH',
      url: `/v1/groups/${group}`,
      ...json('{"name":"ok","\\u0000evil":1}'),
      headers: { ...p.auth, 'content-type': 'application/json' },
    }, '(body)')
    expect(res.body).not.toContain('evil')
  })

  it('in a query parameter of a bearer route', async () => {
    await expectRefused({ method: 'GET', url: '/v1/subscribers?external_id=a%00', headers: p.auth }, 'querystring.external_id')
  })

  it('on an operator route', async () => {
    await expectRefused({ method: 'GET', url: '/admin/v1/projects/prj_%00', headers: { authorization: 'Bearer test-admin-token-0123456789' } }, 'params.id')
  })
})

describe('a lone UTF-16 surrogate is refused (PGlite would send a corrupt message; node-pg would store U+FFFD)', () => {
  it('in a group description "\\u00e9\\udc00"', async () => {
    const res = await expectRefused({ method: 'POST', url: '/v1/groups', ...json('{"name":"g","description":"\\u00e9\\udc00"}'), headers: { ...p.auth, 'content-type': 'application/json' } }, 'description')
    expect(res.json().error.issues[0].message).toMatch(/surrogate/)
  })

  it('in a notification title', async () => {
    await expectRefused({
      method: 'POST',
      url: '/v1/send',
      ...json('{"target":{"type":"all"},"notification":{"title":"\\ud800","body":"x"}}'),
      headers: { ...p.auth, 'content-type': 'application/json' },
    }, 'notification.title')
  })

  it('in the endpoint of POST /v1/unsubscribe', async () => {
    await expectRefused({ method: 'POST', url: `/v1/unsubscribe?project=${p.id}`, ...json('{"endpoint":"https://fcm.googleapis.com/fcm/send/\\udfff"}') }, 'endpoint')
  })

  it('percent-encoded in a path (the bytes of a surrogate are not UTF-8)', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/subscribers/%ED%A0%80', headers: p.auth })
    expect(res.statusCode).toBe(400)
    expect(res.json().error).toMatchObject({ code: 'invalid_request', issues: [expect.objectContaining({ path: 'params' })] })
  })

  it('while a proper pair (an emoji) is fine', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: p.auth, payload: { name: 'Fans 🙂', description: 'é 🙂' } })
    expect(res.statusCode).toBe(201)
  })
})

describe('POST /v1/events keeps answering 202 to bad bytes, and records nothing', () => {
  const cases: Array<[string, () => InjectOptions]> = [
    ['a NUL in the project', () => ({ url: `/v1/events?project=${p.id}%00`, payload: { type: 'clicked', broadcast_id: broadcast } })],
    ['a NUL in the broadcast id', () => ({ url: `/v1/events?project=${p.id}`, payload: { type: 'clicked', broadcast_id: `${broadcast}\u0000` } })],
    ['a lone surrogate in the subscriber id', () => ({ url: `/v1/events?project=${p.id}`, ...json(`{"type":"clicked","broadcast_id":"${broadcast}","subscriber_id":"\\ud800"}`) })],
    ['a NUL in an extra field, as text/plain', () => ({ url: `/v1/events?project=${p.id}`, headers: { 'content-type': 'text/plain' }, payload: `{"type":"clicked","broadcast_id":"${broadcast}","x":"\\u0000"}` })],
  ]
  for (const [name, options] of cases) {
    it(name, async () => {
      const before = await fingerprint()
      const res = await t.app.inject({ method: 'POST', ...options() })
      expect(res.statusCode).toBe(202)
      expect(res.json()).toEqual({ ok: true })
      expect(changedTables(before, await fingerprint())).toEqual([])
    })
  }
})

describe('every invalid_request carries issues', () => {
  it('GET /v1/broadcasts/%ff (a path that is not UTF-8)', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/broadcasts/%ff', headers: p.auth })
    expect(res.statusCode).toBe(400)
    expect(res.json().error).toEqual({
      code: 'invalid_request',
      message: expect.any(String),
      issues: [{ path: 'params', message: expect.any(String) }],
    })
  })

  it('an over-long path parameter', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/subscribers/${'x'.repeat(1100)}`, headers: p.auth })
    expect(res.json().error.issues).toHaveLength(1)
  })
})

describe('a value the database refuses is a 400, never a 500, and its text is not shown', () => {
  // The one error handler, in front of the real database of either storage mode.
  const cases: Array<[string, string, unknown[]]> = [
    ['22003 numeric value out of range', 'SELECT $1::int', ['99999999999']],
    ['22P02 invalid text representation', 'SELECT $1::int', ['abc']],
    ['22021 NUL in text', 'SELECT $1::text', ['a\u0000']],
    ['22008 datetime field overflow', 'SELECT to_timestamp($1::float8)', [1e300]],
    ['22P05 untranslatable character', 'SELECT $1::jsonb', ['{"a":"\\u0000"}']],
    ['54000 program limit exceeded', "SELECT repeat('xx', 600000000)", []],
  ]
  for (const [name, sql, params] of cases) {
    it(name, async () => {
      const app = Fastify({ logger: false })
      installErrorHandling(app)
      app.get('/', async () => (await t.ctx.db.query(sql, params)).rows)
      try {
        const res = await app.inject({ method: 'GET', url: '/' })
        expect(res.statusCode).toBe(400)
        const error = res.json().error
        expect(error).toEqual({ code: 'invalid_request', message: expect.any(String), issues: [{ path: '(request)', message: expect.any(String) }] })
        expect(res.body).not.toMatch(/for type|input syntax|byte sequence|escape sequence|requested length|timestamp|"code":"2|SELECT/)
      } finally {
        await app.close()
      }
    })
  }
})
