import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { newId } from '../platform/ids.ts'
import { MAX_WEBHOOKS_PER_PROJECT } from './webhooks.schemas.ts'

let t: TestApp
/** HERALD_ALLOW_PRIVATE_ENDPOINTS=false: the production URL rules. */
let strict: TestApp

beforeAll(async () => {
  t = await createTestApp()
  strict = await createTestApp({ HERALD_ALLOW_PRIVATE_ENDPOINTS: 'false' })
})
afterAll(async () => {
  await t?.close()
  await strict?.close()
})

const ALL_EVENTS = ['delivered', 'failed', 'clicked', 'dismissed']

function create(app: TestApp, project: TestProject, payload: unknown) {
  return app.app.inject({ method: 'POST', url: '/v1/webhooks', headers: project.auth, payload: payload as object })
}

async function list(project: TestProject, query = '') {
  const res = await t.app.inject({ method: 'GET', url: `/v1/webhooks${query}`, headers: project.auth })
  expect(res.statusCode).toBe(200)
  return res.json() as { webhooks: Array<Record<string, unknown>>; next_cursor: string | null }
}

describe('POST /v1/webhooks', () => {
  it('registers an endpoint for all events with a Standard Webhooks secret, stored for signing', async () => {
    const project = await t.project()
    const res = await create(t, project, { url: 'https://hooks.example.com/herald' })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toEqual({
      id: expect.stringMatching(/^whk_[0-9a-z]{26}$/),
      url: 'https://hooks.example.com/herald',
      events: ALL_EVENTS,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    })
    expect(Buffer.from(body.secret.slice('whsec_'.length), 'base64')).toHaveLength(32)
    const stored = await t.ctx.db.query<{ secret: string; status: string; project_id: string }>(
      'SELECT secret, status, project_id FROM webhooks WHERE id = $1',
      [body.id],
    )
    expect(stored.rows[0]).toEqual({ secret: body.secret, status: 'active', project_id: project.id })
    // Every endpoint gets its own secret.
    const other = (await create(t, project, { url: 'https://hooks.example.com/herald' })).json()
    expect(other.secret).not.toBe(body.secret)
  })

  it('takes a subset of events', async () => {
    const project = await t.project()
    const res = await create(t, project, { url: 'https://hooks.example.com/x', events: ['clicked', 'failed'] })
    expect(res.statusCode).toBe(201)
    expect(res.json().events).toEqual(['clicked', 'failed'])
    expect((await list(project)).webhooks[0].events).toEqual(['clicked', 'failed'])
  })

  it('accepts a URL of 2048 characters and refuses 2049', async () => {
    const project = await t.project()
    const base = 'https://hooks.example.com/'
    const ok = await create(t, project, { url: base + 'a'.repeat(2048 - base.length) })
    expect(ok.statusCode).toBe(201)
    const long = await create(t, project, { url: base + 'a'.repeat(2049 - base.length) })
    expect(long.statusCode).toBe(400)
    expect(long.json().error.issues[0].path).toBe('url')
  })

  it('refuses bad bodies with invalid_request', async () => {
    const project = await t.project()
    for (const [payload, path] of [
      [{}, 'url'],
      [{ url: '' }, 'url'],
      [{ url: 42 }, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ url: 'ftp://hooks.example.com/x' }, 'url'],
      [{ url: 'https://user:pw@hooks.example.com/x' }, 'url'],
      [{ url: 'https://hooks.example.com/x', events: [] }, 'events'],
      [{ url: 'https://hooks.example.com/x', events: ['clicked', 'clicked'] }, 'events'],
      [{ url: 'https://hooks.example.com/x', events: ['opened'] }, 'events.0'],
      [{ url: 'https://hooks.example.com/x', events: 'clicked' }, 'events'],
      [{ url: 'https://hooks.example.com/x', event: ['clicked'] }, '(body)'],
    ] as const) {
      const res = await create(t, project, payload)
      expect(res.statusCode, JSON.stringify(payload)).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
      expect(res.json().error.issues.map((issue: { path: string }) => issue.path)).toContain(path)
    }
    expect((await list(project)).webhooks).toEqual([])
  })

  it('refuses plain HTTP and private, loopback and local addresses by default', async () => {
    const project = await strict.project()
    for (const url of [
      'http://hooks.example.com/x',
      'https://127.0.0.1/x',
      'https://10.0.0.1/x',
      'https://192.168.1.10/x',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/x',
      'https://[::ffff:10.0.0.1]/x',
      'https://localhost/x',
      'https://api.localhost/x',
    ]) {
      const res = await create(strict, project, { url })
      expect(res.statusCode, url).toBe(400)
      expect(res.json().error).toMatchObject({ code: 'invalid_request', issues: [{ path: 'url', message: expect.any(String) }] })
    }
    const count = await strict.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhooks WHERE project_id = $1', [project.id])
    expect(count.rows[0].n).toBe(0)
    // A public address is fine (an IP literal, so the test needs no DNS).
    const ok = await create(strict, project, { url: 'https://93.184.215.14/hook' })
    expect(ok.statusCode).toBe(201)
  })

  it(`caps a project at ${MAX_WEBHOOKS_PER_PROJECT} endpoints with 403 webhook_limit_reached`, async () => {
    const project = await t.project()
    const ids: string[] = []
    for (let i = 0; i < MAX_WEBHOOKS_PER_PROJECT; i++) {
      const res = await create(t, project, { url: `https://hooks.example.com/${i}` })
      expect(res.statusCode).toBe(201)
      ids.push(res.json().id)
    }
    const over = await create(t, project, { url: 'https://hooks.example.com/over' })
    expect(over.statusCode).toBe(403)
    expect(over.json()).toEqual({ error: { code: 'webhook_limit_reached', message: expect.stringContaining(String(MAX_WEBHOOKS_PER_PROJECT)), limit: MAX_WEBHOOKS_PER_PROJECT } })
    // Another project is not affected, and deleting one makes room.
    expect((await create(t, await t.project(), { url: 'https://hooks.example.com/b' })).statusCode).toBe(201)
    await t.app.inject({ method: 'DELETE', url: `/v1/webhooks/${ids[0]}`, headers: project.auth })
    expect((await create(t, project, { url: 'https://hooks.example.com/again' })).statusCode).toBe(201)
  })
})

describe('GET /v1/webhooks', () => {
  it('lists endpoints newest first without their secrets, a page at a time', async () => {
    const project = await t.project()
    const a = (await create(t, project, { url: 'https://hooks.example.com/a' })).json()
    const b = (await create(t, project, { url: 'https://hooks.example.com/b', events: ['delivered'] })).json()
    const res = await t.app.inject({ method: 'GET', url: '/v1/webhooks', headers: project.auth })
    expect(res.json()).toEqual({
      webhooks: [
        { id: b.id, url: 'https://hooks.example.com/b', events: ['delivered'], status: 'active', created_at: expect.any(Number), disabled_at: null, disabled_reason: null },
        { id: a.id, url: 'https://hooks.example.com/a', events: ALL_EVENTS, status: 'active', created_at: expect.any(Number), disabled_at: null, disabled_reason: null },
      ],
      next_cursor: null,
    })
    expect(res.body).not.toContain('whsec_')
    expect(Math.abs(res.json().webhooks[0].created_at - Date.now())).toBeLessThan(60_000)

    const first = await list(project, '?limit=1')
    expect(first.webhooks.map((w) => w.id)).toEqual([b.id])
    expect(first.next_cursor).toBe(b.id)
    const second = await list(project, `?limit=1&cursor=${b.id}`)
    expect(second.webhooks.map((w) => w.id)).toEqual([a.id])
    expect(second.next_cursor).toBeNull()
  })

  it('shows a disabled endpoint as disabled with its time', async () => {
    const project = await t.project()
    const hook = (await create(t, project, { url: 'https://hooks.example.com/d' })).json()
    const when = new Date('2026-01-02T03:04:05.678Z')
    await t.ctx.db.query("UPDATE webhooks SET status = 'disabled', disabled_at = $2 WHERE id = $1", [hook.id, when])
    expect((await list(project)).webhooks[0]).toMatchObject({ id: hook.id, status: 'disabled', disabled_at: when.getTime() })
  })

  it('refuses a bad limit or cursor', async () => {
    const project = await t.project()
    for (const query of ['limit=0', 'limit=101', 'cursor=whk_x', 'cursor=grp_0123456789abcdefghjkmnpqrs']) {
      const res = await t.app.inject({ method: 'GET', url: `/v1/webhooks?${query}`, headers: project.auth })
      expect(res.statusCode, query).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
    }
  })
})

describe('DELETE /v1/webhooks/:id', () => {
  it('removes the endpoint; a second delete is 404 webhook_not_found', async () => {
    const project = await t.project()
    const hook = (await create(t, project, { url: 'https://hooks.example.com/del' })).json()
    const res = await t.app.inject({ method: 'DELETE', url: `/v1/webhooks/${hook.id}`, headers: project.auth })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect((await list(project)).webhooks).toEqual([])
    const again = await t.app.inject({ method: 'DELETE', url: `/v1/webhooks/${hook.id}`, headers: project.auth })
    expect(again.statusCode).toBe(404)
    expect(again.json()).toEqual({ error: { code: 'webhook_not_found', message: expect.any(String) } })
    const unknown = await t.app.inject({ method: 'DELETE', url: `/v1/webhooks/${newId('whk')}`, headers: project.auth })
    expect(unknown.statusCode).toBe(404)
  })
})

describe('isolation and authentication', () => {
  it("never shows or deletes another project's endpoints", async () => {
    const a = await t.project({ name: 'A' })
    const b = await t.project({ name: 'B' })
    const hook = (await create(t, a, { url: 'https://hooks.example.com/a-only' })).json()
    expect((await list(b)).webhooks).toEqual([])
    const res = await t.app.inject({ method: 'DELETE', url: `/v1/webhooks/${hook.id}`, headers: b.auth })
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toBe('webhook_not_found')
    expect((await list(a)).webhooks.map((w) => w.id)).toEqual([hook.id])
  })

  it('answers 401 invalid_api_key without a valid key', async () => {
    const project = await t.project()
    const hook = (await create(t, project, { url: 'https://hooks.example.com/auth' })).json()
    for (const headers of [{}, { authorization: 'Bearer hk_live_00000000000000000000000000000000' }, { authorization: project.apiKey }]) {
      for (const route of [
        { method: 'POST', url: '/v1/webhooks', payload: { url: 'https://hooks.example.com/z' } },
        { method: 'GET', url: '/v1/webhooks' },
        { method: 'DELETE', url: `/v1/webhooks/${hook.id}` },
      ] as const) {
        const res = await t.app.inject({ ...route, headers })
        expect(res.statusCode, `${route.method} ${JSON.stringify(headers)}`).toBe(401)
        expect(res.json().error.code).toBe('invalid_api_key')
      }
    }
    expect((await list(project)).webhooks.map((w) => w.id)).toEqual([hook.id])
  })
})
