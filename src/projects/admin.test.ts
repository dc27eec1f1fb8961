import Fastify, { type FastifyInstance } from 'fastify'
import sharp from 'sharp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_TOKEN, createTestApp, type TestApp } from '../../test/support/app.ts'
import { bearerAuth } from './project-auth.ts'
import { installErrorHandling } from '../platform/http/errors.ts'
import { newId } from '../platform/ids.ts'
import { lookupPrefix } from './api-keys.ts'
import { PLANS } from './plans.ts'
import { findActiveKeyByPrefix } from './projects.store.ts'

let t: TestApp
let noToken: TestApp
/** A one-route app behind the real bearerAuth hook, on the same database: proves which keys work. */
let probe: FastifyInstance

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

beforeAll(async () => {
  t = await createTestApp()
  noToken = await createTestApp({ HERALD_ADMIN_TOKEN: '' })
  probe = Fastify()
  installErrorHandling(probe)
  probe.get('/probe', { onRequest: bearerAuth(t.ctx, 'project:read') }, async (request) => ({ project: request.project.id }))
  await probe.ready()
})
afterAll(async () => {
  await probe?.close()
  await t?.close()
  await noToken?.close()
})

async function createProject(body: Record<string, unknown> = { name: 'Shop' }) {
  const res = await t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: body })
  expect(res.statusCode).toBe(201)
  return res.json() as { id: string; name: string; plan: string; api_key: string; vapid_public: string }
}

function patch(id: string, payload: unknown) {
  return t.app.inject({ method: 'PATCH', url: `/admin/v1/projects/${id}`, headers: admin, payload: payload as object })
}

function probeWith(key: string) {
  return probe.inject({ method: 'GET', url: '/probe', headers: { authorization: `Bearer ${key}` } })
}

describe('operator authentication', () => {
  const routes = [
    { method: 'POST', url: '/admin/v1/projects', payload: { name: 'x' } },
    { method: 'GET', url: '/admin/v1/projects' },
    { method: 'GET', url: '/admin/v1/projects/prj_x' },
    { method: 'PATCH', url: '/admin/v1/projects/prj_x', payload: { plan: 'pro' } },
    { method: 'GET', url: '/admin/v1/projects/prj_x/api-keys' },
    { method: 'POST', url: '/admin/v1/projects/prj_x/api-keys', payload: {} },
    { method: 'DELETE', url: '/admin/v1/projects/prj_x/api-keys/key_x' },
  ] as const

  it.each(routes)('$method $url answers 401 invalid_admin_token without or with a wrong token', async (route) => {
    const project = await t.project()
    for (const headers of [{}, { authorization: 'Bearer wrong-token-0123456789' }, { authorization: ADMIN_TOKEN }, project.auth]) {
      const res = await t.app.inject({ ...route, headers })
      expect(res.statusCode).toBe(401)
      expect(res.json()).toEqual({ error: { code: 'invalid_admin_token', message: expect.any(String) } })
    }
  })

  it('refuses every admin request when no operator token is configured', async () => {
    for (const route of routes) {
      const res = await noToken.app.inject({ ...route, headers: admin })
      expect(res.statusCode).toBe(401)
      expect(res.json().error.code).toBe('invalid_admin_token')
    }
  })
})

describe('POST /admin/v1/projects', () => {
  it('creates a free project with a working API key', async () => {
    const created = await createProject({ name: 'Shop' })
    expect(created).toEqual({
      id: expect.stringMatching(/^prj_[0-9a-z]{26}$/),
      name: 'Shop',
      plan: 'free',
      api_key: expect.stringMatching(/^hk_live_[0-9A-Za-z]{32}$/),
      vapid_public: expect.stringMatching(/^[A-Za-z0-9_-]{87}$/),
    })
    expect((await probeWith(created.api_key)).json()).toEqual({ project: created.id })
    const stored = await t.ctx.db.query<{ hash: string }>('SELECT hash FROM api_keys WHERE project_id = $1', [created.id])
    expect(stored.rows).toHaveLength(1)
    expect(stored.rows[0].hash).not.toContain(created.api_key.slice(8))
  })

  it('takes a plan and a domain', async () => {
    const created = await createProject({ name: 'Big', plan: 'max', domain: 'shop.example.com' })
    expect(created.plan).toBe('max')
    const project = (await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${created.id}`, headers: admin })).json()
    expect(project.domain).toBe('shop.example.com')
    expect(project.limits).toEqual(PLANS.max)
  })

  it('accepts a name of 128 characters and a domain of 253, and refuses one more', async () => {
    await createProject({ name: 'n'.repeat(128), domain: 'd'.repeat(253) })
    for (const [body, path] of [
      [{ name: 'n'.repeat(129) }, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 'ok', domain: 'd'.repeat(254) }, 'domain'],
      [{}, 'name'],
      [{ name: 'ok', plan: 'gold' }, 'plan'],
      [{ name: 'ok', plan: 'Pro' }, 'plan'],
      [{ name: 42 }, 'name'],
      [{ name: 'ok', plann: 'pro' }, '(body)'],
    ] as const) {
      const res = await t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: body })
      expect(res.statusCode, JSON.stringify(body)).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
      expect(res.json().error.issues.map((issue: { path: string }) => issue.path)).toContain(path)
    }
  })

  it('accepts every plan', async () => {
    for (const plan of ['free', 'hobby', 'plus', 'pro', 'max']) expect((await createProject({ name: plan, plan })).plan).toBe(plan)
  })
})

describe('GET /admin/v1/projects/:id', () => {
  it('answers the project with limits, overrides and usage, and no secret', async () => {
    const created = await createProject({ name: 'Shop', plan: 'plus', domain: null })
    const res = await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${created.id}`, headers: admin })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      id: created.id,
      name: 'Shop',
      domain: null,
      plan: 'plus',
      default_icon: null,
      limits: { groups: 27, subscribers: 250_000, monthly_pushes: 5_000_000, requests_per_minute: 3_000 },
      limit_overrides: {},
      usage: { subscribers: 0, pushes_this_month: 0 },
      vapid_public: created.vapid_public,
      created_at: expect.any(Number),
      expire_after_failures: null,
      expire_after_days_without_delivery: null,
    })
    expect(Math.abs(res.json().created_at - Date.now())).toBeLessThan(60_000)
    expect(res.body).not.toContain('vapid_private')
    expect(res.body).not.toContain('hk_live_')
  })

  it('counts active subscribers and this month’s pushes', async () => {
    const created = await createProject()
    const insert = 'INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, status) VALUES ($1, $2, $3, $4, $5, $6)'
    await t.ctx.db.query(insert, [newId('sub'), created.id, 'https://push.example/1', 'p', 'a', 'active'])
    await t.ctx.db.query(insert, [newId('sub'), created.id, 'https://push.example/2', 'p', 'a', 'active'])
    await t.ctx.db.query(insert, [newId('sub'), created.id, 'https://push.example/3', 'p', 'a', 'unsubscribed'])
    const month = new Date().toISOString().slice(0, 7) + '-01'
    await t.ctx.db.query('INSERT INTO push_usage (project_id, month, pushes) VALUES ($1, $2, 1234), ($1, $3, 99)', [created.id, month, '2001-01-01'])
    const project = (await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${created.id}`, headers: admin })).json()
    expect(project.usage).toEqual({ subscribers: 2, pushes_this_month: 1234 })
  })

  it('answers 404 project_not_found for an unknown project', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${newId('prj')}`, headers: admin })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: { code: 'project_not_found', message: expect.any(String) } })
  })
})

describe('GET /admin/v1/projects', () => {
  it('lists projects newest first, a page at a time', async () => {
    const a = await createProject({ name: 'List A' })
    const b = await createProject({ name: 'List B' })
    const first = await t.app.inject({ method: 'GET', url: '/admin/v1/projects?limit=1', headers: admin })
    expect(first.statusCode).toBe(200)
    expect(first.json().projects.map((p: { id: string }) => p.id)).toEqual([b.id])
    expect(first.json().next_cursor).toBe(b.id)
    const second = (await t.app.inject({ method: 'GET', url: `/admin/v1/projects?limit=1&cursor=${b.id}`, headers: admin })).json()
    expect(second.projects[0]).toEqual({
      id: a.id,
      name: 'List A',
      domain: null,
      plan: 'free',
      default_icon: null,
      limits: PLANS.free,
      limit_overrides: {},
      usage: { subscribers: 0, pushes_this_month: 0 },
      vapid_public: a.vapid_public,
      created_at: expect.any(Number),
      expire_after_failures: null,
      expire_after_days_without_delivery: null,
    })
    const all = (await t.app.inject({ method: 'GET', url: '/admin/v1/projects?limit=100', headers: admin })).json()
    const ids = all.projects.map((p: { id: string }) => p.id)
    expect(ids.indexOf(b.id)).toBeLessThan(ids.indexOf(a.id))
    expect(ids).toEqual([...ids].sort().reverse())
  })

  it('ends with next_cursor null', async () => {
    const all = (await t.app.inject({ method: 'GET', url: '/admin/v1/projects?limit=100', headers: admin })).json()
    expect(all.projects.length).toBeLessThan(100)
    expect(all.next_cursor).toBeNull()
  })

  it('refuses a bad limit or cursor', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=x', 'cursor=nope', 'cursor=grp_0123456789abcdefghjkmnpqrs']) {
      const res = await t.app.inject({ method: 'GET', url: `/admin/v1/projects?${query}`, headers: admin })
      expect(res.statusCode, query).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
    }
  })
})

describe('PATCH /admin/v1/projects/:id', () => {
  it('changes the plan, and the limits follow it', async () => {
    const created = await createProject()
    const res = await patch(created.id, { plan: 'pro' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ id: created.id, plan: 'pro', limits: PLANS.pro, limit_overrides: {} })
    expect((await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${created.id}`, headers: admin })).json().plan).toBe('pro')
  })

  it('merges limit overrides; null returns a field to the plan value', async () => {
    const created = await createProject({ name: 'Limits', plan: 'hobby' })
    let res = await patch(created.id, { limits: { groups: 10 } })
    expect(res.json().limit_overrides).toEqual({ groups: 10 })
    expect(res.json().limits).toEqual({ ...PLANS.hobby, groups: 10 })

    res = await patch(created.id, { limits: { subscribers: 5, monthly_pushes: 0 } })
    expect(res.json().limit_overrides).toEqual({ groups: 10, subscribers: 5, monthly_pushes: 0 })
    expect(res.json().limits).toEqual({ ...PLANS.hobby, groups: 10, subscribers: 5, monthly_pushes: 0 })

    res = await patch(created.id, { plan: 'max', limits: { groups: null } })
    expect(res.json().limit_overrides).toEqual({ subscribers: 5, monthly_pushes: 0 })
    expect(res.json().limits).toEqual({ ...PLANS.max, subscribers: 5, monthly_pushes: 0 })

    res = await patch(created.id, { limits: { subscribers: null, monthly_pushes: null, requests_per_minute: null } })
    expect(res.json().limit_overrides).toEqual({})
    expect(res.json().limits).toEqual(PLANS.max)
    const stored = await t.ctx.db.query<{ limits: unknown }>('SELECT limits FROM projects WHERE id = $1', [created.id])
    expect(stored.rows[0].limits).toEqual({})
  })

  it('makes the overrides the numbers the API enforces', async () => {
    const created = await createProject()
    await patch(created.id, { limits: { requests_per_minute: 7 } })
    const res = await probeWith(created.api_key)
    expect(res.statusCode).toBe(200)
    expect(res.headers['ratelimit-limit']).toBe('7')
  })

  it('changes nothing for an empty body', async () => {
    const created = await createProject({ name: 'Same', plan: 'plus' })
    await patch(created.id, { limits: { groups: 4 } })
    const res = await patch(created.id, {})
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ plan: 'plus', default_icon: null, limit_overrides: { groups: 4 } })
  })

  it('refuses bad plans and limits', async () => {
    const created = await createProject()
    for (const [body, path] of [
      [{ plan: 'gold' }, 'plan'],
      [{ plan: null }, 'plan'],
      [{ limits: { groups: -1 } }, 'limits.groups'],
      [{ limits: { groups: 1.5 } }, 'limits.groups'],
      [{ limits: { groups: '10' } }, 'limits.groups'],
      [{ limits: { subscribers: 1e13 } }, 'limits.subscribers'],
      [{ limits: { widgets: 3 } }, 'limits'],
      [{ limits: null }, 'limits'],
      [{ name: 'Renamed' }, '(body)'],
    ] as const) {
      const res = await patch(created.id, body)
      expect(res.statusCode, JSON.stringify(body)).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
      expect(res.json().error.issues.map((issue: { path: string }) => issue.path)).toContain(path)
    }
    const project = (await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${created.id}`, headers: admin })).json()
    expect(project).toMatchObject({ plan: 'free', limit_overrides: {} })
  })

  it('sets the default icon from an HTTPS URL and clears it with null', async () => {
    const created = await createProject()
    const icon = 'https://cdn.example.com/icon.png'
    let res = await patch(created.id, { default_icon: icon })
    expect(res.statusCode).toBe(200)
    expect(res.json().default_icon).toBe(icon)
    res = await patch(created.id, { plan: 'hobby' })
    expect(res.json().default_icon).toBe(icon)
    res = await patch(created.id, { default_icon: null })
    expect(res.statusCode).toBe(200)
    expect(res.json().default_icon).toBeNull()
  })

  it('hosts a square data-URL icon and refuses a non-square one', async () => {
    const created = await createProject()
    const png = (width: number, height: number) =>
      sharp({ create: { width, height, channels: 4, background: '#c00' } }).png().toBuffer()
    const square = `data:image/png;base64,${(await png(32, 32)).toString('base64')}`
    const res = await patch(created.id, { default_icon: square })
    expect(res.statusCode).toBe(200)
    expect(res.json().default_icon).toMatch(/^http:\/\/localhost:3000\/icons\/[0-9a-f]{64}\.png$/)
    const wide = await patch(created.id, { default_icon: `data:image/png;base64,${(await png(64, 32)).toString('base64')}` })
    expect(wide.statusCode).toBe(400)
    expect(wide.json().error.code).toBe('invalid_icon')
  })

  it('refuses an icon that is neither an HTTPS URL nor a valid data URL, keeping the old one', async () => {
    const created = await createProject()
    await patch(created.id, { default_icon: 'https://cdn.example.com/a.png' })
    for (const icon of ['ftp://cdn.example.com/a.png', 'data:image/png;base64,AAAA', 'data:text/plain;base64,aGVsbG8=']) {
      const res = await patch(created.id, { default_icon: icon })
      expect(res.statusCode, icon).toBe(400)
      expect(res.json().error.code).toBe('invalid_icon')
      expect(res.json().error.message).toMatch(/^default_icon/)
    }
    const project = (await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${created.id}`, headers: admin })).json()
    expect(project.default_icon).toBe('https://cdn.example.com/a.png')
  })

  it('takes bodies up to 512 KB (a data-URL icon) and answers 413 above', async () => {
    const created = await createProject()
    const big = await patch(created.id, { default_icon: 'data:image/png;base64,' + 'A'.repeat(400 * 1024) })
    expect(big.statusCode).toBe(400)
    expect(big.json().error.code).toBe('invalid_icon')
    const tooBig = await patch(created.id, { default_icon: 'data:image/png;base64,' + 'A'.repeat(520 * 1024) })
    expect(tooBig.statusCode).toBe(413)
    expect(tooBig.json().error.code).toBe('payload_too_large')
  })

  it('answers 404 project_not_found for an unknown project', async () => {
    const res = await patch(newId('prj'), { plan: 'pro' })
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toBe('project_not_found')
  })
})

describe('API keys', () => {
  it('creates, lists and revokes keys; a revoked key stops working at once', async () => {
    const created = await createProject()
    const add = await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${created.id}/api-keys`, headers: admin, payload: { name: 'ci' } })
    expect(add.statusCode).toBe(201)
    const key = add.json()
    const shown = { name: 'ci', prefix: key.api_key.slice(0, 14), scope: 'full', created_at: expect.any(Number), last_used_at: null, created_by: { type: 'operator', id: null, email: null } }
    expect(key).toEqual({ id: expect.stringMatching(/^key_/), ...shown, api_key: expect.stringMatching(/^hk_live_[0-9A-Za-z]{32}$/) })
    expect((await probeWith(key.api_key)).statusCode).toBe(200)

    const list = await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${created.id}/api-keys`, headers: admin })
    expect(list.statusCode).toBe(200)
    expect(list.json()).toEqual({
      api_keys: [
        { id: expect.stringMatching(/^key_/), name: 'default', prefix: created.api_key.slice(0, 14), scope: 'full', created_at: expect.any(Number), last_used_at: null, created_by: { type: 'operator', id: null, email: null }, revoked_at: null },
        // Used once (the probe above): last_used_at is set.
        { id: key.id, name: 'ci', prefix: key.prefix, scope: 'full', created_at: expect.any(Number), last_used_at: expect.any(Number), created_by: { type: 'operator', id: null, email: null }, revoked_at: null },
      ],
    })
    expect(list.body).not.toContain('hash')
    // Only hk_live_ and 6 of the 32 random characters: not even the whole lookup prefix.
    expect(list.body).not.toContain(lookupPrefix(key.api_key))
    expect(list.body).not.toContain(key.api_key)

    const revoke = await t.app.inject({ method: 'DELETE', url: `/admin/v1/projects/${created.id}/api-keys/${key.id}`, headers: admin })
    expect(revoke.statusCode).toBe(200)
    expect(revoke.json()).toEqual({ ok: true })

    const row = await t.ctx.db.query<{ revoked_at: Date | null }>('SELECT revoked_at FROM api_keys WHERE id = $1', [key.id])
    expect(row.rows[0].revoked_at).toBeInstanceOf(Date)
    expect(await findActiveKeyByPrefix(t.ctx.db, lookupPrefix(key.api_key)!)).toBeNull()
    const refused = await probeWith(key.api_key)
    expect(refused.statusCode).toBe(401)
    expect(refused.json().error.code).toBe('invalid_api_key')
    const groups = await t.app.inject({ method: 'GET', url: '/v1/groups', headers: { authorization: `Bearer ${key.api_key}` } })
    expect(groups.statusCode).toBe(401)
    expect(groups.json().error.code).toBe('invalid_api_key')
    // The project's other key is untouched.
    expect((await probeWith(created.api_key)).statusCode).toBe(200)

    const after = (await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${created.id}/api-keys`, headers: admin })).json()
    expect(after.api_keys[1]).toMatchObject({ id: key.id, name: 'ci', revoked_at: expect.any(Number) })
    expect(after.api_keys[0].revoked_at).toBeNull()

    // Revoking again is not an error: the key is revoked either way.
    const again = await t.app.inject({ method: 'DELETE', url: `/admin/v1/projects/${created.id}/api-keys/${key.id}`, headers: admin })
    expect(again.statusCode).toBe(200)
  })

  it('creates a key without a body or name', async () => {
    const created = await createProject()
    const res = await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${created.id}/api-keys`, headers: admin })
    expect(res.statusCode).toBe(201)
    const list = (await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${created.id}/api-keys`, headers: admin })).json()
    expect(list.api_keys[1]).toMatchObject({ id: res.json().id, name: null })
    expect((await probeWith(res.json().api_key)).statusCode).toBe(200)
  })

  it('refuses a JSON body that is not an object (null, an array, a string), creating no key', async () => {
    const created = await createProject()
    for (const payload of ['null', '[]', '"ci"', '1']) {
      const res = await t.app.inject({
        method: 'POST',
        url: `/admin/v1/projects/${created.id}/api-keys`,
        headers: { ...admin, 'content-type': 'application/json' },
        payload,
      })
      expect(res.statusCode, payload).toBe(400)
      expect(res.json().error).toMatchObject({ code: 'invalid_request', issues: [{ path: '(body)', message: 'must be object' }] })
    }
    const list = (await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${created.id}/api-keys`, headers: admin })).json()
    expect(list.api_keys).toHaveLength(1)
  })

  it('refuses a key name over 128 characters', async () => {
    const created = await createProject()
    const ok = await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${created.id}/api-keys`, headers: admin, payload: { name: 'k'.repeat(128) } })
    expect(ok.statusCode).toBe(201)
    const res = await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${created.id}/api-keys`, headers: admin, payload: { name: 'k'.repeat(129) } })
    expect(res.statusCode).toBe(400)
    expect(res.json().error.issues[0].path).toBe('name')
  })

  it("answers 404 api_key_not_found for another project's key, which keeps working", async () => {
    const a = await createProject({ name: 'A' })
    const b = await createProject({ name: 'B' })
    const aKeys = (await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${a.id}/api-keys`, headers: admin })).json()
    const res = await t.app.inject({ method: 'DELETE', url: `/admin/v1/projects/${b.id}/api-keys/${aKeys.api_keys[0].id}`, headers: admin })
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toBe('api_key_not_found')
    expect((await probeWith(a.api_key)).json()).toEqual({ project: a.id })
    const unknown = await t.app.inject({ method: 'DELETE', url: `/admin/v1/projects/${a.id}/api-keys/${newId('key')}`, headers: admin })
    expect(unknown.statusCode).toBe(404)
    expect(unknown.json().error.code).toBe('api_key_not_found')
  })

  it('answers 404 project_not_found on every key route of an unknown project', async () => {
    const id = newId('prj')
    for (const route of [
      { method: 'GET', url: `/admin/v1/projects/${id}/api-keys` },
      { method: 'POST', url: `/admin/v1/projects/${id}/api-keys`, payload: {} },
      { method: 'DELETE', url: `/admin/v1/projects/${id}/api-keys/${newId('key')}` },
    ] as const) {
      const res = await t.app.inject({ ...route, headers: admin })
      expect(res.statusCode, route.method).toBe(404)
      expect(res.json().error.code).toBe('project_not_found')
    }
  })
})

describe('OpenAPI', () => {
  it('documents the admin routes with the operator token', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    expect(doc.paths['/admin/v1/projects/{id}'].patch.security).toEqual([{ adminToken: [] }])
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/admin/v1/projects', '/admin/v1/projects/{id}/api-keys/{key_id}']))
  })
})
