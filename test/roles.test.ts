// The role matrix (issue 13): every /v1 bearer route × every member role is
// allowed or 403 insufficient_role, and × every API key scope allowed or 403
// insufficient_scope, exactly as access/access.ts's tables say. The routes
// come from the app's own registration (each bearerAuth hook carries its
// permission), so a new route joins the matrix by existing. Then: a member of
// project A cannot reach project B's data, by header or by id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LightMyRequestResponse, RouteOptions } from 'fastify'
import { createTestApp, type TestApp, type TestProject } from './support/app.ts'
import { addMember, signIn, type SignedIn } from './support/members.ts'
import { BEARER_ROUTES, MEMBER_ROUTES, routeName, type BearerRouteCase, type RouteIds } from './support/routes.ts'
import { allows, KEY_SCOPES, ROLES, type KeyScope, type Permission, type Role } from '../src/access/access.ts'
import { ADMIN_TOKEN } from './support/app.ts'
import { subscription } from '../src/subscribers/subscribers.fixtures.ts'
import { runningExperiment } from '../src/experiments/experiments.fixtures.ts'

const DAY = 86_400_000
const TABLE = [...BEARER_ROUTES, ...MEMBER_ROUTES]
let t: TestApp
/** Method and path → the permission its bearerAuth hook checks, as registered. */
const permissions = new Map<string, Permission>()

function permissionOf(route: RouteOptions): Permission | undefined {
  const hooks = [route.onRequest ?? []].flat() as Array<{ permission?: Permission }>
  return hooks.find((hook) => hook.permission)?.permission
}

beforeAll(async () => {
  t = await createTestApp({}, {
    onRoute: (route) => {
      const permission = permissionOf(route)
      if (permission) for (const method of [route.method].flat()) if (method !== 'HEAD') permissions.set(`${method} ${route.url}`, permission)
    },
  })
})
afterAll(async () => {
  await t.close()
})

async function ok(res: LightMyRequestResponse) {
  if (res.statusCode >= 300) throw new Error(`setup: ${res.statusCode} ${res.body}`)
  return res.json()
}

/** A project with one of everything (as the security sweep makes it), an owner, a spare member and an open invite. */
async function populate(project: TestProject, tag: string): Promise<RouteIds> {
  const call = (method: 'GET' | 'POST', url: string, payload?: unknown) => t.app.inject({ method, url, headers: project.auth, payload: payload as object })
  const group = (await ok(await call('POST', '/v1/groups', { name: 'Fans' }))).id
  const externalId = `user-${tag}`
  const body = subscription({ external_id: externalId, group_ids: [group] })
  const subscriber = (await ok(await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: body }))).id
  const later = { target: { type: 'all' }, notification: { title: 'Later', body: 'Soon' }, scheduled_at: Date.now() + DAY }
  const broadcast = (await ok(await call('POST', '/v1/send', later))).broadcast_id
  const pendingBroadcast = (await ok(await call('POST', '/v1/send', { target: { type: 'all' }, notification: { title: 'Now', body: 'Soon' } }))).broadcast_id
  const webhook = (await ok(await call('POST', '/v1/webhooks', { url: 'https://hooks.example.com/a' }))).id
  const template = (await ok(await call('POST', '/v1/templates', { name: 'Welcome', notification: { title: 'Hi {{ tags.first_name }}', body: 'Welcome' } }))).id
  const spareApiKeyId = (await ok(await call('POST', '/v1/api-keys', { name: 'spare' }))).id
  await addMember(t, project.id, `owner-${tag}@example.com`, 'owner')
  const member = await addMember(t, project.id, `spare-${tag}@example.com`, 'viewer')
  const invite = (await t.ctx.db.query<{ id: string }>(
    "INSERT INTO invites (id, project_id, email, role, token_hash, expires_at) VALUES ($1, $2, $3, 'viewer', $4, now() + interval '1 day') RETURNING id",
    [`inv_${tag}`, project.id, `invited-${tag}@example.com`, `hash-${tag}`],
  )).rows[0].id
  // Two rotations: the key between them is neither current nor in use, so an owner may retire it.
  const rotate = () => t.app.inject({ method: 'POST', url: `/admin/v1/projects/${project.id}/vapid-keys/rotate`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  const spareVapidKey = (await ok(await rotate())).vapid_key.id
  await ok(await rotate())
  const experimentBroadcast = await runningExperiment(t, project)
  return { project: project.id, group, subscriber, endpoint: body.endpoint as string, externalId, broadcast, pendingBroadcast, experimentBroadcast, webhook, template, apiKeyId: project.apiKeyId, spareApiKeyId, member, invite, spareVapidKey }
}

function send(route: BearerRouteCase, ids: RouteIds, headers: Record<string, string>) {
  return t.app.inject({ method: route.method, url: route.url(ids), headers: { ...headers, ...route.headers }, payload: route.body?.(ids) })
}

/** Deletes last, and the group's own delete after those that need the group. */
const order = (route: BearerRouteCase) => (route.method !== 'DELETE' ? 0 : route.path === '/v1/groups/:id' ? 2 : 1)

describe('the matrix covers every bearer route', () => {
  it('every registered route with a permission is in the route tables, and every row of them names one', () => {
    expect([...permissions.keys()].sort()).toEqual(TABLE.map(routeName).sort())
  })
})

describe.each(ROLES.map((role) => [role] as const))('role %s', (role: Role) => {
  let ids: RouteIds
  let session: SignedIn
  beforeAll(async () => {
    const project = await t.project({ plan: 'plus' })
    ids = await populate(project, role)
    await addMember(t, project.id, `${role}@example.com`, role)
    session = await signIn(t, `${role}@example.com`, undefined, { project: project.id })
  })

  it.each([...TABLE].sort((x, y) => order(x) - order(y)).map((route) => [routeName(route), route] as const))('%s', async (name, route) => {
    const permission = permissions.get(name)!
    const res = await send(route, ids, session.headers)
    if (allows({ type: 'user', id: 'usr_x', role }, permission)) {
      expect(res.statusCode, `${permission}: ${res.body}`).toBeLessThan(300)
    } else {
      expect(res.statusCode, permission).toBe(403)
      expect(res.json().error.code).toBe('insufficient_role')
    }
  })
})

describe.each(KEY_SCOPES.map((scope) => [scope] as const))('API key with scope %s', (scope: KeyScope) => {
  let ids: RouteIds
  let auth: { authorization: string }
  beforeAll(async () => {
    const project = await t.project({ plan: 'plus' })
    ids = await populate(project, `scope-${scope}`)
    const created = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/projects/${project.id}/api-keys`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { name: scope, scope },
    })
    expect(created.json().scope).toBe(scope)
    auth = { authorization: `Bearer ${created.json().api_key}` }
  })

  it.each([...TABLE].sort((x, y) => order(x) - order(y)).map((route) => [routeName(route), route] as const))('%s', async (name, route) => {
    const permission = permissions.get(name)!
    const res = await send(route, ids, auth)
    if (allows({ type: 'key', id: 'key_x', scope }, permission)) {
      expect(res.statusCode, `${permission}: ${res.body}`).toBeLessThan(300)
    } else {
      expect(res.statusCode, permission).toBe(403)
      expect(res.json().error.code).toBe('insufficient_scope')
    }
  })
})

describe('a member of project A cannot touch project B', () => {
  let a: RouteIds
  let b: RouteIds
  let owner: SignedIn
  let before: string
  const snapshotB = async () => {
    const rows = async (sql: string) => (await t.ctx.db.query(sql, [b.project])).rows
    return JSON.stringify([
      await rows('SELECT * FROM groups WHERE project_id = $1 ORDER BY id'),
      await rows('SELECT * FROM subscribers WHERE project_id = $1 ORDER BY id'),
      await rows('SELECT * FROM broadcasts WHERE project_id = $1 ORDER BY id'),
      await rows('SELECT * FROM webhooks WHERE project_id = $1 ORDER BY id'),
      await rows('SELECT * FROM memberships WHERE project_id = $1 ORDER BY user_id'),
      await rows('SELECT * FROM invites WHERE project_id = $1 ORDER BY id'),
      await rows('SELECT id, name, scope, revoked_at FROM api_keys WHERE project_id = $1 ORDER BY id'),
    ])
  }
  beforeAll(async () => {
    a = await populate(await t.project({ plan: 'plus' }), 'a')
    b = await populate(await t.project({ plan: 'plus' }), 'b')
    owner = await signIn(t, 'owner-a@example.com')
    before = await snapshotB()
  })

  it.each(TABLE.map((route) => [routeName(route), route] as const))('%s: X-Herald-Project of B → 404 project_not_found', async (_name, route) => {
    const res = await send(route, b, { ...owner.headers, 'x-herald-project': b.project })
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toBe('project_not_found')
  })

  it.each(TABLE.map((route) => [routeName(route), route] as const))('%s: acting in A on B\'s ids → as another project\'s key', async (_name, route) => {
    const res = await send(route, b, owner.headers)
    expect(res.statusCode).toBe(route.foreign.status)
    if (route.foreign.code) expect(res.json().error.code).toBe(route.foreign.code)
    if (res.statusCode < 300) for (const value of [b.project, b.group, b.subscriber, b.broadcast, b.webhook, b.apiKeyId, b.spareApiKeyId, b.member!, 'spare-b@']) expect(res.body).not.toContain(value)
  })

  it('nothing of B\'s changed, and A\'s session never switches to B', async () => {
    expect(await snapshotB()).toBe(before)
    const res = await t.app.inject({ method: 'PATCH', url: '/v1/session', headers: owner.headers, payload: { project: b.project } })
    expect(res.statusCode).toBe(404)
    expect(a.project).not.toBe(b.project)
  })
})
