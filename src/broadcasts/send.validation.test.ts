// POST /v1/send: every field rule of api.md 4.7 at its boundary (400 invalid_request with issues).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { getBroadcast, send, sendBody } from './broadcasts.fixtures.ts'

let t: TestApp
let p: TestProject
beforeAll(async () => {
  t = await createTestApp()
  p = await t.project({ plan: 'max' })
})
afterAll(async () => {
  await t.close()
})

async function expectAccepted(body: unknown) {
  const res = await send(t, p, body)
  expect(res.statusCode, res.body).toBe(202)
  return (await getBroadcast(t, p, res.json().broadcast_id)).json()
}

async function expectInvalid(body: unknown, path: string) {
  const res = await send(t, p, body)
  expect(res.statusCode, res.body).toBe(400)
  const error = res.json().error
  expect(error.code).toBe('invalid_request')
  expect(error.issues.map((issue: { path: string }) => issue.path)).toContain(path)
}

describe('POST /v1/send validation', () => {
  it('accepts the smallest body and fills the defaults', async () => {
    const b = await expectAccepted(sendBody())
    expect(b).toMatchObject({ ttl: 86400, urgency: 'normal', topic: null, notification: { url: '/', icon: null, image: null } })
  })

  it('title: 1 and 256 chars ok; empty, 257 chars and missing rejected', async () => {
    await expectAccepted(sendBody({ notification: { title: 'x' } }))
    const b = await expectAccepted(sendBody({ notification: { title: 'é'.repeat(256) } }))
    expect(b.notification.title).toBe('é'.repeat(256))
    await expectInvalid(sendBody({ notification: { title: '' } }), 'notification.title')
    await expectInvalid(sendBody({ notification: { title: 'x'.repeat(257) } }), 'notification.title')
    await expectInvalid({ target: { type: 'all' }, notification: { body: 'b' } }, 'notification.title')
  })

  it('body: 2048 chars ok; empty, 2049 chars and missing rejected', async () => {
    await expectAccepted(sendBody({ notification: { body: 'x'.repeat(2048) } }))
    await expectInvalid(sendBody({ notification: { body: '' } }), 'notification.body')
    await expectInvalid(sendBody({ notification: { body: 'x'.repeat(2049) } }), 'notification.body')
    await expectInvalid({ target: { type: 'all' }, notification: { title: 't' } }, 'notification.body')
  })

  it('url: absolute http(s) URLs and paths up to 2048 chars; 2049 and other forms rejected', async () => {
    const base = 'https://shop.example/'
    const long = base + 'a'.repeat(2048 - base.length)
    expect((await expectAccepted(sendBody({ notification: { url: long } }))).notification.url).toBe(long)
    await expectAccepted(sendBody({ notification: { url: 'http://shop.example/sale?x=1#top' } }))
    expect((await expectAccepted(sendBody({ notification: { url: '/sale/today?x=1' } }))).notification.url).toBe('/sale/today?x=1')
    await expectInvalid(sendBody({ notification: { url: long + 'a' } }), 'notification.url')
    await expectInvalid(sendBody({ notification: { url: '/' + 'a'.repeat(2048) } }), 'notification.url')
    for (const bad of ['javascript:alert(1)', 'ftp://shop.example/', 'sale', '//evil.example/x', 'https://', 'https://a b', '']) {
      await expectInvalid(sendBody({ notification: { url: bad } }), 'notification.url')
    }
  })

  it('ttl: numbers 0 to 2419200 (a fraction rounded down); -1, 2419201 and "10" rejected', async () => {
    expect((await expectAccepted(sendBody({ ttl: 0 }))).ttl).toBe(0)
    expect((await expectAccepted(sendBody({ ttl: 2419200 }))).ttl).toBe(2419200)
    expect((await expectAccepted(sendBody({ ttl: 1.5 }))).ttl).toBe(1)
    for (const bad of [-1, 2419201, 2419200.5, '10', null]) await expectInvalid(sendBody({ ttl: bad }), 'ttl')
  })

  it('urgency: the four levels; anything else rejected', async () => {
    for (const urgency of ['very-low', 'low', 'normal', 'high']) {
      expect((await expectAccepted(sendBody({ urgency }))).urgency).toBe(urgency)
    }
    for (const bad of ['urgent', 'HIGH', '', 1]) await expectInvalid(sendBody({ urgency: bad }), 'urgency')
  })

  it('topic: up to 32 chars of A-Z a-z 0-9 _ -; 33 chars, other characters and empty rejected', async () => {
    const topic = 'Ab0_-'.repeat(6) + 'zz'
    expect(topic).toHaveLength(32)
    expect((await expectAccepted(sendBody({ topic }))).topic).toBe(topic)
    await expectInvalid(sendBody({ topic: topic + 'z' }), 'topic')
    for (const bad of ['sale!', 'a b', 'é', '']) await expectInvalid(sendBody({ topic: bad }), 'topic')
  })

  it('user target: external_id up to 256 chars of A-Z a-z 0-9 _ -; 257, other characters, empty, missing rejected', async () => {
    const id = 'u'.repeat(256)
    const b = await expectAccepted(sendBody({ target: { type: 'user', external_id: id } }))
    expect(b.target).toEqual({ type: 'user', external_id: id })
    await expectInvalid(sendBody({ target: { type: 'user', external_id: id + 'u' } }), 'target.external_id')
    for (const bad of ['user@example.com', 'a.b', 'a b', '', 5]) {
      await expectInvalid(sendBody({ target: { type: 'user', external_id: bad } }), 'target.external_id')
    }
    await expectInvalid(sendBody({ target: { type: 'user' } }), 'target.external_id')
  })

  it('target: missing, unknown type, no type, wrong shape and extra fields rejected', async () => {
    await expectInvalid({ notification: { title: 't', body: 'b' } }, 'target')
    for (const target of [{ type: 'everyone' }, { type: 'ALL' }, {}, { type: 3 }, 'all', ['all'], null]) {
      await expectInvalid(sendBody({ target }), 'target')
    }
    await expectInvalid(sendBody({ target: { type: 'group' } }), 'target.group_id')
    await expectInvalid(sendBody({ target: { type: 'group', group_id: 7 } }), 'target.group_id')
    await expectInvalid(sendBody({ target: { type: 'all', external_id: 'u1' } }), 'target')
  })

  it('an unknown target type says which types exist', async () => {
    const res = await send(t, p, sendBody({ target: { type: 'tag' } }))
    expect(res.json().error.message).toBe('target.type: must be one of: all, user, group, segment')
    const urgency = await send(t, p, sendBody({ urgency: 'now' }))
    expect(urgency.json().error.message).toBe('urgency: must be one of: very-low, low, normal, high')
  })

  it('wrong types anywhere are rejected, never coerced', async () => {
    await expectInvalid(sendBody({ notification: { title: 5 } }), 'notification.title')
    await expectInvalid(sendBody({ notification: { body: ['x'] } }), 'notification.body')
    await expectInvalid(sendBody({ notification: { icon: 1 } }), 'notification.icon')
    await expectInvalid(sendBody({ notification: { image: {} } }), 'notification.image')
    await expectInvalid(sendBody({ notification: { url: null } }), 'notification.url')
    await expectInvalid(sendBody({ scheduled_at: '2030-01-01T00:00:00Z' }), 'scheduled_at')
    await expectInvalid({ target: { type: 'all' }, notification: 'Hello' }, 'notification')
    await expectInvalid({ target: { type: 'all' } }, 'notification')
    const res = await send(t, p, [sendBody()])
    expect(res.statusCode).toBe(400)
    expect(res.json().error.code).toBe('invalid_request')
  })

  it('unknown fields are rejected, so a misspelt option never goes unnoticed', async () => {
    await expectInvalid(sendBody({ scheduledAt: Date.now() + 60_000 }), '(body)')
    await expectInvalid(sendBody({ notification: { click_url: '/x' } }), 'notification')
    const res = await send(t, p, sendBody({ scheduledAt: Date.now() + 60_000 }))
    expect(res.json().error.message).toContain("'scheduledAt'")
  })

  it('reports every issue at once', async () => {
    const res = await send(t, p, sendBody({ notification: { title: '' }, ttl: -1, urgency: 'now' }))
    const paths = res.json().error.issues.map((issue: { path: string }) => issue.path)
    expect(paths).toEqual(expect.arrayContaining(['notification.title', 'ttl', 'urgency']))
  })

  it('a refused body creates no broadcast and no job', async () => {
    const other = await t.project({ plan: 'max' })
    await send(t, other, sendBody({ ttl: -1 }))
    const list = await t.app.inject({ method: 'GET', url: '/v1/broadcasts', headers: other.auth })
    expect(list.json().broadcasts).toEqual([])
  })
})
