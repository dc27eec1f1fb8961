// The security sweep, written once and run over every route (the tables in
// support/routes.ts): bearer authentication, cross-project isolation, the
// operator token, what response bodies never contain, and which routes answer
// CORS. A route registered without a row in those tables fails the sweep.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from './support/app.ts'
import { ADMIN_ROUTES, BEARER_ROUTES, BROWSER_ROUTES, MEMBER_ROUTES, SESSION_ROUTES, routeName, type RouteCase, type RouteIds } from './support/routes.ts'
import { subscription } from '../src/subscribers/subscribers.fixtures.ts'
import { addMember } from './support/members.ts'
import { clickLinkKey, clickToken } from '../src/broadcasts/click-link.ts'
import { runningExperiment } from '../src/experiments/experiments.fixtures.ts'

const ORIGIN = 'https://shop.example.com'
const DAY = 24 * 60 * 60 * 1000

let t: TestApp
const registered: Array<{ method: string; path: string }> = []
/** Every response this file received, for the leak checks at the end. */
const responses: Array<{ name: string; res: LightMyRequestResponse }> = []

async function call(name: string, options: InjectOptions): Promise<LightMyRequestResponse> {
  const res = await t.app.inject(options)
  responses.push({ name, res })
  return res
}

function request(route: RouteCase, ids: RouteIds, headers: Record<string, string>): Promise<LightMyRequestResponse> {
  return call(routeName(route), { method: route.method, url: route.url(ids), headers: { ...headers, ...route.headers }, payload: route.body?.(ids) })
}

/** A project with one of everything: a group with a member, a scheduled broadcast, a webhook. */
async function populate(project: TestProject): Promise<RouteIds> {
  const ok = async (res: LightMyRequestResponse) => {
    if (res.statusCode >= 300) throw new Error(`setup: ${res.statusCode} ${res.body}`)
    return res.json()
  }
  const group = (await ok(await call('setup', { method: 'POST', url: '/v1/groups', headers: project.auth, payload: { name: 'Fans' } }))).id
  const externalId = `user-${project.id.slice(-6)}`
  const body = subscription({ external_id: externalId, group_ids: [group] })
  const subscriber = (await ok(await call('setup', { method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: body }))).id
  const broadcast = (await ok(await call('setup', {
    method: 'POST',
    url: '/v1/send',
    headers: project.auth,
    payload: { target: { type: 'all' }, notification: { title: 'Later', body: 'Soon' }, scheduled_at: Date.now() + DAY },
  }))).broadcast_id
  // Sent now: no worker runs here, so it stays pending (stop's own; DELETE cancels the scheduled one).
  const pendingBroadcast = (await ok(await call('setup', {
    method: 'POST',
    url: '/v1/send',
    headers: project.auth,
    payload: { target: { type: 'all' }, notification: { title: 'Now', body: 'Soon' } },
  }))).broadcast_id
  const webhook = (await ok(await call('setup', { method: 'POST', url: '/v1/webhooks', headers: project.auth, payload: { url: 'https://hooks.example.com/a' } }))).id
  const template = (await ok(await call('setup', { method: 'POST', url: '/v1/templates', headers: project.auth, payload: { name: 'Welcome', notification: { title: 'Hi {{ tags.first_name }}', body: 'Welcome' } } }))).id
  const spareApiKeyId = (await ok(await call('setup', { method: 'POST', url: '/v1/api-keys', headers: project.auth, payload: { name: 'spare' } }))).id
  // An account of the project's (a viewer), for the operator's password reset link.
  const accountEmail = `viewer-${project.id.slice(-6)}@example.com`
  await addMember(t, project.id, accountEmail, 'viewer')
  const experimentBroadcast = await runningExperiment(t, project)
  return { project: project.id, group, subscriber, endpoint: body.endpoint as string, externalId, broadcast, pendingBroadcast, experimentBroadcast, webhook, template, apiKeyId: project.apiKeyId, spareApiKeyId, accountEmail }
}

/** Every row that belongs to the project, in a stable order. */
async function snapshot(projectId: string): Promise<Record<string, unknown[]>> {
  const rows = async (sql: string) => (await t.ctx.db.query(sql, [projectId])).rows
  return {
    projects: await rows('SELECT * FROM projects WHERE id = $1'),
    // Not last_used_at: A's key is used on purpose by some checks (a 403 is still a use).
    api_keys: await rows('SELECT id, project_id, name, prefix, hash, scope, created_at, revoked_at FROM api_keys WHERE project_id = $1 ORDER BY id'),
    groups: await rows('SELECT * FROM groups WHERE project_id = $1 ORDER BY id'),
    group_members: await rows(
      'SELECT m.* FROM group_members m JOIN groups g ON g.id = m.group_id WHERE g.project_id = $1 ORDER BY m.group_id, m.subscriber_id',
    ),
    subscribers: await rows('SELECT * FROM subscribers WHERE project_id = $1 ORDER BY id'),
    broadcasts: await rows('SELECT * FROM broadcasts WHERE project_id = $1 ORDER BY id'),
    webhooks: await rows('SELECT * FROM webhooks WHERE project_id = $1 ORDER BY id'),
    templates: await rows('SELECT * FROM templates WHERE project_id = $1 ORDER BY id'),
    events: await rows('SELECT * FROM events WHERE project_id = $1 ORDER BY id'),
    push_usage: await rows('SELECT * FROM push_usage WHERE project_id = $1 ORDER BY month'),
  }
}

let a: TestProject
let b: TestProject
let aIds: RouteIds
let before: Record<string, unknown[]>
let revokedKey: string
let aWebhookSecret: string

beforeAll(async () => {
  t = await createTestApp({}, {
    onRoute: (route) => {
      for (const method of [route.method].flat()) registered.push({ method, path: route.url })
    },
  })
  a = await t.project({ plan: 'plus' })
  b = await t.project({ plan: 'plus' })
  aIds = await populate(a)
  await populate(b)
  aWebhookSecret = (await t.ctx.db.query<{ secret: string }>('SELECT secret FROM webhooks WHERE id = $1', [aIds.webhook])).rows[0].secret

  // A second key of A's, shown to work, then revoked through the operator API.
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
  const created = await call('setup', { method: 'POST', url: `/admin/v1/projects/${a.id}/api-keys`, headers: admin, payload: { name: 'old' } })
  revokedKey = created.json().api_key
  expect((await call('setup', { method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${revokedKey}` } })).statusCode).toBe(200)
  const revoked = await call('setup', { method: 'DELETE', url: `/admin/v1/projects/${a.id}/api-keys/${created.json().id}`, headers: admin })
  expect(revoked.statusCode).toBe(200)

  before = await snapshot(a.id)
})
afterAll(async () => {
  await t.close()
})

const routeKey = (route: { method: string; path: string }) => routeName(route)
const listed = (routes: RouteCase[]) => routes.map(routeKey).sort()
const registeredUnder = (prefix: string) =>
  [...new Set(registered.filter((r) => r.path.startsWith(prefix) && r.method !== 'HEAD' && r.method !== 'OPTIONS').map(routeKey))].sort()

describe('the route tables cover the app', () => {
  it('every /v1 route is a bearer route, a member route, a session route or a browser route in the tables', () => {
    expect(registeredUnder('/v1/')).toEqual([...listed(BEARER_ROUTES), ...listed(MEMBER_ROUTES), ...listed(SESSION_ROUTES), ...listed(BROWSER_ROUTES)].sort())
  })

  it('every /admin route and /metrics is in the operator table', () => {
    expect([...registeredUnder('/admin/'), ...registeredUnder('/metrics')].sort()).toEqual(listed(ADMIN_ROUTES))
  })
})

// ---------------------------------------------------------------------------

const BAD_AUTH: Array<[string, () => Record<string, string>]> = [
  ['no Authorization', () => ({})],
  ['Bearer garbage', () => ({ authorization: 'Bearer garbage' })],
  ['Bearer with no key', () => ({ authorization: 'Bearer ' })],
  ['Basic xxx', () => ({ authorization: 'Basic xxx' })],
  ['the key as Basic credentials', () => ({ authorization: `Basic ${Buffer.from(`${a.apiKey}:`).toString('base64')}` })],
  ['the key without a scheme', () => ({ authorization: a.apiKey })],
  ['the key with one character changed', () => ({ authorization: `Bearer ${a.apiKey.slice(0, -1)}${a.apiKey.endsWith('A') ? 'B' : 'A'}` })],
  ['the key with a suffix', () => ({ authorization: `Bearer ${a.apiKey}x` })],
  ['a well-formed unknown key', () => ({ authorization: `Bearer hk_live_${'x'.repeat(40)}` })],
  ['a revoked key', () => ({ authorization: `Bearer ${revokedKey}` })],
  ['the operator token', () => ({ authorization: `Bearer ${ADMIN_TOKEN}` })],
]

describe('bearer routes: authentication', () => {
  it.each(BEARER_ROUTES.map((route) => [routeName(route), route] as const))('%s: a missing or bad key → 401 invalid_api_key', async (_name, route) => {
    for (const [label, headers] of BAD_AUTH) {
      const res = await request(route, aIds, headers())
      expect(res.statusCode, label).toBe(401)
      expect(res.json(), label).toEqual({ error: { code: 'invalid_api_key', message: expect.any(String) } })
      if (route.method === 'GET') {
        const head = await call(routeName(route), { method: 'HEAD', url: route.url(aIds), headers: headers() })
        expect(head.statusCode, `HEAD, ${label}`).toBe(401)
      }
    }
  })

  it('A\'s own key still works on every route (the table\'s URLs and bodies are valid)', async () => {
    // Run against a copy of A's data in a third project, so A's stays untouched.
    const c = await t.project({ plan: 'plus' })
    const cIds = await populate(c)
    // Deletes last, and the group's own delete after those that need the group.
    const last = (route: RouteCase) => (route.method !== 'DELETE' ? 0 : route.path === '/v1/groups/:id' ? 2 : 1)
    for (const route of [...BEARER_ROUTES].sort((x, y) => last(x) - last(y))) {
      const res = await request(route, cIds, c.auth)
      expect(res.statusCode, routeName(route)).toBeLessThan(300)
    }
  })

  it('nothing of A\'s changed', async () => {
    expect(await snapshot(a.id)).toEqual(before)
  })
})

describe('member routes: people are managed by owners\' sessions only', () => {
  it.each(MEMBER_ROUTES.map((route) => [routeName(route), route] as const))('%s: a bad key → 401, A\'s own key → 403 insufficient_scope', async (_name, route) => {
    for (const [label, headers] of BAD_AUTH) {
      const res = await request(route, aIds, headers())
      expect(res.statusCode, label).toBe(401)
      expect(res.json().error.code, label).toBe('invalid_api_key')
    }
    const res = await request(route, { ...aIds, member: 'usr_x', invite: 'inv_x' }, a.auth)
    expect(res.statusCode).toBe(403)
    expect(res.json().error.code).toBe('insufficient_scope')
  })
})

describe('bearer routes: another project\'s key on A\'s ids', () => {
  it.each(BEARER_ROUTES.map((route) => [routeName(route), route] as const))('%s', async (_name, route) => {
    const res = await request(route, aIds, b.auth)
    expect(res.statusCode).toBe(route.foreign.status)
    if (route.foreign.code) expect(res.json()).toEqual({ error: { code: route.foreign.code, message: expect.any(String) } })
    if (route.foreign.body) expect(res.json()).toEqual(route.foreign.body)
    if (res.statusCode < 300) {
      // A success may show B's own data only: none of A's ids or values.
      for (const value of [a.id, aIds.group, aIds.subscriber, aIds.endpoint, aIds.externalId, aIds.broadcast, aIds.pendingBroadcast!, aIds.webhook, aIds.template!, aIds.apiKeyId, aIds.spareApiKeyId]) {
        expect(res.body).not.toContain(value)
      }
    }
  })

  it('B cannot add A\'s subscriber to B\'s own group, nor read it through list filters', async () => {
    const own = (await call('setup', { method: 'POST', url: '/v1/groups', headers: b.auth, payload: { name: 'Mine' } })).json().id
    const add = await call('add foreign', { method: 'POST', url: `/v1/groups/${own}/subscribers`, headers: b.auth, payload: { subscriber_ids: [aIds.subscriber] } })
    expect(add.statusCode).toBe(200)
    expect(add.json()).toEqual({ added: 0 })
    const remove = await call('remove foreign', { method: 'DELETE', url: `/v1/groups/${own}/subscribers/${aIds.subscriber}`, headers: b.auth })
    expect(remove.statusCode).toBe(200)
    for (const query of [`group_id=${aIds.group}`, `external_id=${aIds.externalId}`, `cursor=${aIds.subscriber}`]) {
      const res = await call('list filter', { method: 'GET', url: `/v1/subscribers?${query}`, headers: b.auth })
      if (res.statusCode === 200) expect(res.json().subscribers, query).toEqual([])
      else expect(res.statusCode, query).toBe(400)
    }
    const send = await call('send user', {
      method: 'POST',
      url: '/v1/send',
      headers: b.auth,
      payload: { target: { type: 'user', external_id: aIds.externalId }, notification: { title: 'Hi', body: 'There' } },
    })
    expect(send.statusCode).toBe(202)
    const sent = await call('get broadcast', { method: 'GET', url: `/v1/broadcasts/${send.json().broadcast_id}`, headers: b.auth })
    expect(sent.json().audience).toBe(0)
  })

  it('GET /v1/me with B\'s key describes B', async () => {
    const res = await call('me', { method: 'GET', url: '/v1/me', headers: b.auth })
    expect(res.json().project.id).toBe(b.id)
  })

  it('nothing of A\'s changed', async () => {
    expect(await snapshot(a.id)).toEqual(before)
  })
})

// ---------------------------------------------------------------------------

describe('operator routes: only HERALD_ADMIN_TOKEN opens them', () => {
  const BAD_ADMIN: Array<[string, () => Record<string, string>]> = [
    ['no Authorization', () => ({})],
    ['a wrong token', () => ({ authorization: 'Bearer wrong-admin-token-0123456789' })],
    ['the token with a suffix', () => ({ authorization: `Bearer ${ADMIN_TOKEN}x` })],
    ['the token without a scheme', () => ({ authorization: ADMIN_TOKEN })],
    ['the token as Basic', () => ({ authorization: `Basic ${ADMIN_TOKEN}` })],
    ['a project API key', () => a.auth],
  ]

  it.each(ADMIN_ROUTES.map((route) => [routeName(route), route] as const))('%s → 401 invalid_admin_token', async (_name, route) => {
    for (const [label, headers] of BAD_ADMIN) {
      const res = await request(route, aIds, headers())
      expect(res.statusCode, label).toBe(401)
      expect(res.json(), label).toEqual({ error: { code: 'invalid_admin_token', message: expect.any(String) } })
    }
  })

  it('nothing changed: no project made, A\'s plan and keys as they were', async () => {
    expect(await snapshot(a.id)).toEqual(before)
    const projects = await t.ctx.db.query('SELECT id FROM projects WHERE name = $1', ['Sweep'])
    expect(projects.rows).toEqual([])
  })

  it('with the token, every operator route answers (the table\'s URLs and bodies are valid)', async () => {
    const c = await t.project()
    const cIds = { ...aIds, project: c.id, apiKeyId: c.apiKeyId }
    for (const route of ADMIN_ROUTES) {
      const res = await request(route, cIds, { authorization: `Bearer ${ADMIN_TOKEN}` })
      expect(res.statusCode, routeName(route)).toBeLessThan(300)
    }
  })
})

// ---------------------------------------------------------------------------

describe('CORS: browser routes answer it, bearer and operator routes never do', () => {
  const preflight = (route: RouteCase, ids: RouteIds) =>
    call(`preflight ${routeName(route)}`, {
      method: 'OPTIONS',
      url: route.url(ids),
      headers: { origin: ORIGIN, 'access-control-request-method': route.method, 'access-control-request-headers': 'content-type, authorization' },
    })

  it.each(BROWSER_ROUTES.map((route) => [routeName(route), route] as const))('%s: preflight and request carry Access-Control-Allow-Origin', async (_name, route) => {
    const c = await t.project({ plan: 'plus' })
    const cIds = await populate(c)
    const pre = await preflight(route, cIds)
    expect(pre.statusCode).toBe(204)
    expect(pre.headers['access-control-allow-origin']).toBe(ORIGIN)
    expect(String(pre.headers['access-control-allow-methods'])).toContain(route.method)
    expect(String(pre.headers['access-control-allow-headers']).toLowerCase()).toContain('content-type')
    // Cookies are never part of it: a browser route is open to any site but sends no credentials.
    expect(pre.headers['access-control-allow-credentials']).toBeUndefined()
    const res = await request(route, cIds, { origin: ORIGIN })
    expect(res.headers['access-control-allow-origin']).toBe(ORIGIN)
  })

  const closed = [...BEARER_ROUTES.map((route) => ['bearer', route] as const), ...ADMIN_ROUTES.map((route) => ['operator', route] as const)]
  it.each(closed.map(([kind, route]) => [`${kind} ${routeName(route)}`, kind, route] as const))(
    '%s: no Access-Control-Allow-Origin on the preflight or the request',
    async (_name, kind, route) => {
      const c = await t.project({ plan: 'plus' })
      const cIds = await populate(c)
      const pre = await preflight(route, cIds)
      expect(pre.statusCode).toBeGreaterThanOrEqual(400)
      for (const header of ['access-control-allow-origin', 'access-control-allow-methods', 'access-control-allow-headers', 'access-control-allow-credentials']) {
        expect(pre.headers[header], header).toBeUndefined()
      }
      const auth = kind === 'bearer' ? c.auth : { authorization: `Bearer ${ADMIN_TOKEN}` }
      const res = await request(route, kind === 'bearer' ? cIds : { ...cIds, apiKeyId: c.apiKeyId }, { ...auth, origin: ORIGIN })
      if (route.populated) expect([res.statusCode, res.json().error.code]).toEqual([route.populated.status, route.populated.code])
      else expect(res.statusCode).toBeLessThan(300)
      expect(res.headers['access-control-allow-origin']).toBeUndefined()
    },
  )
})

// ---------------------------------------------------------------------------

describe('click links (GET /c/:token): public, but only for the project, broadcast and URL they were made for', () => {
  const keyOf = async (projectId: string) =>
    clickLinkKey((await t.ctx.db.query<{ vapid_private: string }>('SELECT vapid_private FROM projects WHERE id = $1', [projectId])).rows[0].vapid_private)

  it('is registered, needs no credentials and answers no CORS; a link made with another project\'s key, or altered, is 404', async () => {
    expect(registered.some((r) => r.method === 'GET' && r.path === '/c/:token')).toBe(true)
    // A's broadcast goes to "/", so A needs a domain for the link to have somewhere to go.
    await t.ctx.db.query(`UPDATE projects SET domain = 'shop.example.com' WHERE id = $1`, [a.id])
    const link = { project_id: a.id, broadcast_id: aIds.pendingBroadcast!, action: null, url: '/' }
    const own = clickToken(await keyOf(a.id), link)
    const attempts: Array<[string, string]> = [
      ["B's key on A's broadcast", clickToken(await keyOf(b.id), link)],
      ["A's link claiming B's project", clickToken(await keyOf(a.id), { ...link, project_id: b.id })],
      ['another URL (open redirect)', clickToken(await keyOf(a.id), { ...link, url: 'https://evil.example/' })],
      ['an action the broadcast lacks', clickToken(await keyOf(a.id), { ...link, action: 'buy' })],
      ['one character changed', own.slice(0, -1) + (own.endsWith('A') ? 'B' : 'A')],
      ['an API key as the token', a.apiKey],
    ]
    for (const [name, token] of attempts) {
      const res = await call(`click link: ${name}`, { method: 'GET', url: `/c/${token}`, headers: { origin: ORIGIN, authorization: b.auth.authorization } })
      expect(res.statusCode, name).toBe(404)
      expect(res.json().error.code, name).toBe('click_link_not_found')
      expect(res.headers['access-control-allow-origin'], name).toBeUndefined()
    }
    const clicks = async () => (await t.ctx.db.query(`SELECT count(*)::int AS n FROM events WHERE broadcast_id = $1`, [link.broadcast_id])).rows[0].n
    expect(await clicks()).toBe(0)
    const ok = await call('click link', { method: 'GET', url: `/c/${own}`, headers: { origin: ORIGIN } })
    expect(ok.statusCode).toBe(302)
    expect(ok.headers.location).toBe('https://shop.example.com/')
    expect(ok.headers['access-control-allow-origin']).toBeUndefined()
    expect(await clicks()).toBe(1)
  })
})

// ---------------------------------------------------------------------------

describe('no response body leaks a secret or a stack trace', () => {
  it('checks every response this file received', async () => {
    const hashes = (await t.ctx.db.query<{ hash: string }>('SELECT hash FROM api_keys')).rows.map((row) => row.hash)
    const vapidPrivate = (await t.ctx.db.query<{ vapid_private: string }>('SELECT vapid_private FROM projects')).rows.map((row) => row.vapid_private)
    expect(responses.length).toBeGreaterThan(300)
    for (const { name, res } of responses) {
      const body = res.body
      expect(body, name).not.toMatch(/"stack"|\n\s+at |node_modules|\.ts:\d+/)
      // The one exception, on purpose (issue 23): the operator's export hands a
      // project's VAPID pair over, so another sender can take over; only with
      // the operator token (a 200), and it stays a secret everywhere else.
      const handsKeysOver = name === 'GET /admin/v1/projects/:id/subscribers/export' && res.statusCode === 200
      if (!handsKeysOver) expect(body, name).not.toContain('vapid_private')
      expect(body, name).not.toContain('"hash"')
      for (const hash of hashes) expect(body, name).not.toContain(hash)
      if (!handsKeysOver) for (const key of vapidPrivate) expect(body, name).not.toContain(key)
      // A's webhook secret was shown once, at creation (in setup); never again.
      if (name !== 'setup') expect(body, name).not.toContain(aWebhookSecret)
      // The projects' own keys were never sent by the server (they come from the test helper).
      expect(body, name).not.toContain(a.apiKey)
      expect(body, name).not.toContain(b.apiKey)
    }
  })
})
