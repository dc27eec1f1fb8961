// The contract's mirror: api.md and decisions.md walked row by row, as a
// customer who has only those two documents would call the service. Every
// request goes through HTTP (app.inject); projects, caps and keys are set up
// through the operator API of decisions.md §2, as support would.
import { createECDH, randomBytes } from 'node:crypto'
import sharp from 'sharp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { padPng } from '../src/media/images.fixtures.ts'
import { runProjectCommand } from '../src/projects/cli.ts'
import { ADMIN_TOKEN, createTestApp, type TestApp } from './support/app.ts'
import { awayFromWindowEdge } from './support/rate-window.ts'

let t: TestApp
let strict: TestApp
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

beforeAll(async () => {
  t = await createTestApp()
  // The default outbound rules of decisions.md §5 (tests otherwise lift them).
  strict = await createTestApp({ HERALD_ALLOW_PRIVATE_ENDPOINTS: 'false' })
})
afterAll(async () => {
  await t?.close()
  await strict?.close()
})

// ---------------------------------------------------------------- helpers

interface Client {
  id: string
  apiKey: string
  auth: { authorization: string }
}

type Json = Record<string, unknown>

async function newProject(body: Json = {}, limits?: Json): Promise<Client> {
  const res = await t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: { name: 'Shop', ...body } })
  expect(res.statusCode).toBe(201)
  const { id, api_key: apiKey } = res.json()
  if (limits) {
    const patched = await t.app.inject({ method: 'PATCH', url: `/admin/v1/projects/${id}`, headers: admin, payload: { limits } })
    expect(patched.statusCode).toBe(200)
  }
  return { id, apiKey, auth: { authorization: `Bearer ${apiKey}` } }
}

function keys(): { p256dh: string; auth: string } {
  const ecdh = createECDH('prime256v1')
  ecdh.generateKeys()
  return { p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') }
}

function endpoint(): string {
  return `https://fcm.googleapis.com/fcm/send/${randomBytes(12).toString('base64url')}`
}

function subscribeReq(p: Client, body: Json = {}) {
  return t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: { endpoint: endpoint(), keys: keys(), ...body } })
}

async function subscribe(p: Client, body: Json = {}): Promise<string> {
  const res = await subscribeReq(p, body)
  expect(res.statusCode, res.body).toBe(201)
  return res.json().id
}

function bearer(p: Client, method: string, url: string, payload?: unknown) {
  return t.app.inject({ method: method as 'GET', url, headers: p.auth, ...(payload === undefined ? {} : { payload: payload as Json }) })
}

async function createGroup(p: Client, name = `g-${randomBytes(4).toString('hex')}`): Promise<string> {
  const res = await bearer(p, 'POST', '/v1/groups', { name })
  expect(res.statusCode, res.body).toBe(201)
  return res.json().id
}

function sendBody(extra: Json = {}): Json {
  const { notification, ...rest } = extra as { notification?: Json }
  return { target: { type: 'all' }, notification: { title: 'Hello', body: 'World', ...notification }, ...rest }
}

function send(p: Client, extra: Json = {}) {
  return bearer(p, 'POST', '/v1/send', sendBody(extra))
}

function dataUrl(type: string, bytes: Buffer): string {
  return `data:${type};base64,${bytes.toString('base64')}`
}

async function png(width: number, height: number): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 10, g: 120, b: 200 } } }).png().toBuffer()
}

/** decisions.md §1: { error: { code, message, ... } }, with the status the code stands for. */
function expectError(res: { statusCode: number; json(): Json }, status: number, code: string): Json {
  expect(res.statusCode).toBe(status)
  const body = res.json() as { error: Json }
  expect(body).toEqual({ error: expect.objectContaining({ code, message: expect.any(String) }) })
  expect(Object.keys(body)).toEqual(['error'])
  return body.error
}

function expectInvalid(res: { statusCode: number; json(): Json }, path?: string): void {
  const error = expectError(res, 400, 'invalid_request')
  expect(error.issues).toEqual(expect.arrayContaining([{ path: expect.any(String), message: expect.any(String) }]))
  if (path) expect((error.issues as { path: string }[]).map((issue) => issue.path)).toContain(path)
}

const future = (ms: number) => Date.now() + ms
const DAY = 86_400_000

// ---------------------------------------------------------- decisions.md §1

describe('decisions.md §1: the error body', () => {
  it('unknown route: 404 not_found', async () => {
    expectError(await t.app.inject({ method: 'GET', url: '/v1/no-such-thing' }), 404, 'not_found')
  })

  it('wrong method: 405 method_not_allowed', async () => {
    expectError(await t.app.inject({ method: 'PUT', url: '/v1/groups' }), 405, 'method_not_allowed')
  })

  it('body that is not JSON: 400 invalid_json', async () => {
    const p = await newProject()
    const res = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: { ...p.auth, 'content-type': 'application/json' }, payload: '{"name":' })
    expectError(res, 400, 'invalid_json')
  })

  it('body too large: 413 payload_too_large', async () => {
    const p = await newProject()
    const res = await bearer(p, 'POST', '/v1/groups', { name: 'x', description: 'y'.repeat(200_000) })
    expectError(res, 413, 'payload_too_large')
  })

  it('validation failure: 400 invalid_request with issues [{ path, message }]', async () => {
    const p = await newProject()
    const res = await send(p, { notification: { title: '' } })
    expectInvalid(res, 'notification.title')
  })

  it('missing or malformed Authorization on a bearer route: 401 invalid_api_key', async () => {
    for (const headers of [{}, { authorization: 'Basic abc' }, { authorization: 'Bearer' }, { authorization: 'hk_live_abc' }, { authorization: 'Bearer hk_live_wrong' }]) {
      expectError(await t.app.inject({ method: 'POST', url: '/v1/send', headers, payload: sendBody() }), 401, 'invalid_api_key')
      expectError(await t.app.inject({ method: 'GET', url: '/v1/groups', headers }), 401, 'invalid_api_key')
    }
  })

  it('5xx: 500 internal_error with a request_id and no stack trace', async () => {
    const broken = await createTestApp()
    try {
      const res0 = await broken.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: { name: 'B' } })
      const auth = { authorization: `Bearer ${res0.json().api_key}` }
      // Something the server cannot survive: a table it needs is gone.
      await broken.database.db.query('ALTER TABLE groups RENAME TO groups_gone')
      const res = await broken.app.inject({ method: 'GET', url: '/v1/groups', headers: auth })
      const error = expectError(res, 500, 'internal_error')
      expect(error.request_id).toEqual(expect.any(String))
      expect(res.body).not.toMatch(/groups_gone|at .*\.ts|stack/)
    } finally {
      await broken.close()
    }
  })

  it('429 rate_limited carries Retry-After (seconds) and RateLimit-* headers', async () => {
    const p = await newProject({}, { requests_per_minute: 2 })
    await awayFromWindowEdge()
    const ok = await bearer(p, 'GET', '/v1/groups')
    expect(ok.statusCode).toBe(200)
    expect(ok.headers['ratelimit-limit']).toBe('2')
    await bearer(p, 'GET', '/v1/groups')
    const res = await bearer(p, 'GET', '/v1/groups')
    expectError(res, 429, 'rate_limited')
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0)
    expect(Number.isInteger(Number(res.headers['retry-after']))).toBe(true)
    expect(res.headers['ratelimit-limit']).toBe('2')
    expect(res.headers['ratelimit-remaining']).toBe('0')
    expect(res.headers['ratelimit-reset']).toMatch(/^\d+$/)
  })

  it('403 monthly_push_limit_reached carries limit and audience as fields and in the message', async () => {
    const p = await newProject({}, { monthly_pushes: 1 })
    await subscribe(p)
    await subscribe(p)
    const error = expectError(await send(p), 403, 'monthly_push_limit_reached')
    expect(error.limit).toBe(1)
    expect(error.audience).toBe(2)
    expect(error.message).toMatch(/\b1\b/)
    expect(error.message).toMatch(/\b2\b/)
  })

  it('403 subscriber_limit_reached carries limit as a field and in the message', async () => {
    const p = await newProject({}, { subscribers: 1 })
    await subscribe(p)
    const error = expectError(await subscribeReq(p), 403, 'subscriber_limit_reached')
    expect(error.limit).toBe(1)
    expect(error.message).toMatch(/\b1\b/)
  })
})

// A self-hosted install has no upgrade page and the owner holds only an API
// key: every plan gate says that the operator lifts it, with the real command.

describe('decisions.md §2: a plan gate names the operator command that lifts it, and the command works', () => {
  /** Runs the `herald projects update …` the message names (with N filled in), as the operator would. */
  async function runNamedCommand(message: string, n = '1000'): Promise<void> {
    const named = /herald (projects update prj_[0-9a-z]+ [^()]*?)(?: or --plan \w+)? \(or PATCH \/admin\/v1\/projects\/prj_[0-9a-z]+/.exec(message)
    expect(named, message).not.toBeNull()
    const args = named![1].replace('=N', `=${n}`).split(' ')
    const log = console.log
    console.log = () => {}
    try {
      expect(await runProjectCommand(t.ctx.db, t.ctx.config, 'projects', args.slice(1))).toBe(0)
    } finally {
      console.log = log
    }
  }

  it('scheduling_requires_upgrade and image_requires_upgrade: --plan plus / --plan hobby', async () => {
    const p = await newProject({ plan: 'free' })
    const image = { notification: { image: 'https://cdn.example/banner.png' } }
    const imageError = expectError(await send(p, image), 403, 'image_requires_upgrade')
    expect(imageError.message).toContain(`The operator of this Herald can change the project's plan: herald projects update ${p.id} --plan hobby`)
    await runNamedCommand(imageError.message as string)
    expect((await send(p, image)).statusCode).toBe(202)

    const schedule = { scheduled_at: future(DAY) }
    const scheduleError = expectError(await send(p, schedule), 403, 'scheduling_requires_upgrade')
    expect(scheduleError.message).toContain(`herald projects update ${p.id} --plan plus`)
    await runNamedCommand(scheduleError.message as string)
    expect((await send(p, schedule)).statusCode).toBe(202)
  })

  it('group_limit_reached, subscriber_limit_reached, monthly_push_limit_reached: --limit FIELD=N', async () => {
    const p = await newProject({ plan: 'free' }, { subscribers: 1, monthly_pushes: 0 })
    for (let i = 0; i < 3; i++) await createGroup(p)
    const groupError = expectError(await bearer(p, 'POST', '/v1/groups', { name: 'fourth' }), 403, 'group_limit_reached')
    expect(groupError.message).toContain(`The operator of this Herald can raise it: herald projects update ${p.id} --limit groups=N or --plan hobby`)
    await runNamedCommand(groupError.message as string)
    await createGroup(p)

    await subscribe(p)
    const subscriberError = expectError(await subscribeReq(p), 403, 'subscriber_limit_reached')
    expect(subscriberError.message).toContain(`herald projects update ${p.id} --limit subscribers=N`)
    await runNamedCommand(subscriberError.message as string)
    await subscribe(p)

    const pushError = expectError(await send(p), 403, 'monthly_push_limit_reached')
    expect(pushError.message).toContain(`herald projects update ${p.id} --limit monthly_pushes=N`)
    await runNamedCommand(pushError.message as string)
    expect((await send(p)).statusCode).toBe(202)
  })
})

// ---------------------------------------------------------- api.md §4.1-4.6

describe('api.md 4.1 GET /v1/groups', () => {
  it('200 { groups: [{ id, name, description|null, member_count, created_at (Unix ms) }] }', async () => {
    const p = await newProject()
    const before = Date.now()
    const id = await createGroup(p, 'news')
    const sub = await subscribe(p)
    await bearer(p, 'POST', `/v1/groups/${id}/subscribers`, { subscriber_ids: [sub] })
    const res = await bearer(p, 'GET', '/v1/groups')
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ groups: [{ id, name: 'news', description: null, member_count: 1, created_at: expect.any(Number) }] })
    const created = res.json().groups[0].created_at
    expect(Number.isInteger(created)).toBe(true)
    expect(created).toBeGreaterThanOrEqual(before - 1000)
    expect(created).toBeLessThanOrEqual(Date.now() + 1000)
  })
})

describe('api.md 4.2 POST /v1/groups', () => {
  it('201 { id: grp_* }', async () => {
    const p = await newProject()
    const res = await bearer(p, 'POST', '/v1/groups', { name: 'a', description: 'd' })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toEqual({ id: expect.stringMatching(/^grp_/) })
  })

  it('name 1-64 chars; description at most 512', async () => {
    const p = await newProject({ plan: 'max' })
    expect((await bearer(p, 'POST', '/v1/groups', { name: 'n'.repeat(64) })).statusCode).toBe(201)
    expectInvalid(await bearer(p, 'POST', '/v1/groups', { name: 'n'.repeat(65) }), 'name')
    expectInvalid(await bearer(p, 'POST', '/v1/groups', { name: '' }), 'name')
    expectInvalid(await bearer(p, 'POST', '/v1/groups', {}), 'name')
    expect((await bearer(p, 'POST', '/v1/groups', { name: 'd512', description: 'd'.repeat(512) })).statusCode).toBe(201)
    expectInvalid(await bearer(p, 'POST', '/v1/groups', { name: 'd513', description: 'd'.repeat(513) }), 'description')
  })

  it('403 group_limit_reached at the plan cap (Free: 3)', async () => {
    const p = await newProject()
    for (let i = 0; i < 3; i++) await createGroup(p)
    expectError(await bearer(p, 'POST', '/v1/groups', { name: 'fourth' }), 403, 'group_limit_reached')
  })

  it('409 group_name_taken', async () => {
    const p = await newProject()
    await createGroup(p, 'same')
    expectError(await bearer(p, 'POST', '/v1/groups', { name: 'same' }), 409, 'group_name_taken')
  })

  it('names are unique within a project only', async () => {
    const a = await newProject()
    const b = await newProject()
    await createGroup(a, 'shared')
    expect((await bearer(b, 'POST', '/v1/groups', { name: 'shared' })).statusCode).toBe(201)
  })
})

describe('api.md 4.3 PATCH /v1/groups/:id', () => {
  it('200 { ok: true }; renames, sets and clears (null) the description', async () => {
    const p = await newProject()
    const id = await createGroup(p, 'old')
    let res = await bearer(p, 'PATCH', `/v1/groups/${id}`, { name: 'new', description: 'text' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect((await bearer(p, 'GET', '/v1/groups')).json().groups[0]).toMatchObject({ name: 'new', description: 'text' })
    res = await bearer(p, 'PATCH', `/v1/groups/${id}`, { description: null })
    expect(res.json()).toEqual({ ok: true })
    expect((await bearer(p, 'GET', '/v1/groups')).json().groups[0]).toMatchObject({ name: 'new', description: null })
  })

  it('sending neither field changes nothing', async () => {
    const p = await newProject()
    const id = await createGroup(p, 'keep')
    await bearer(p, 'PATCH', `/v1/groups/${id}`, { description: 'x' })
    const res = await bearer(p, 'PATCH', `/v1/groups/${id}`, {})
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect((await bearer(p, 'GET', '/v1/groups')).json().groups[0]).toMatchObject({ name: 'keep', description: 'x' })
  })

  it('name 1-64 and description 512 limits apply on update', async () => {
    const p = await newProject()
    const id = await createGroup(p)
    expect((await bearer(p, 'PATCH', `/v1/groups/${id}`, { name: 'n'.repeat(64), description: 'd'.repeat(512) })).statusCode).toBe(200)
    expectInvalid(await bearer(p, 'PATCH', `/v1/groups/${id}`, { name: 'n'.repeat(65) }), 'name')
    expectInvalid(await bearer(p, 'PATCH', `/v1/groups/${id}`, { name: '' }), 'name')
    expectInvalid(await bearer(p, 'PATCH', `/v1/groups/${id}`, { description: 'd'.repeat(513) }), 'description')
  })

  it('404 group_not_found (absent, or another project\'s)', async () => {
    const a = await newProject()
    const b = await newProject()
    const id = await createGroup(a, 'mine')
    expectError(await bearer(a, 'PATCH', '/v1/groups/grp_nope', { name: 'x' }), 404, 'group_not_found')
    expectError(await bearer(b, 'PATCH', `/v1/groups/${id}`, { name: 'stolen' }), 404, 'group_not_found')
    expect((await bearer(a, 'GET', '/v1/groups')).json().groups[0].name).toBe('mine')
  })

  it('renaming a group to its own name is not a conflict', async () => {
    const p = await newProject()
    const id = await createGroup(p, 'self')
    const res = await bearer(p, 'PATCH', `/v1/groups/${id}`, { name: 'self' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
  })

  it('409 group_name_taken', async () => {
    const p = await newProject()
    await createGroup(p, 'one')
    const two = await createGroup(p, 'two')
    expectError(await bearer(p, 'PATCH', `/v1/groups/${two}`, { name: 'one' }), 409, 'group_name_taken')
  })
})

describe('api.md 4.4 DELETE /v1/groups/:id', () => {
  it('200 { ok: true }; memberships go, subscribers stay', async () => {
    const p = await newProject()
    const id = await createGroup(p)
    const sub = await subscribe(p)
    await bearer(p, 'POST', `/v1/groups/${id}/subscribers`, { subscriber_ids: [sub] })
    const res = await bearer(p, 'DELETE', `/v1/groups/${id}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect((await bearer(p, 'GET', '/v1/groups')).json().groups).toEqual([])
    const s = await bearer(p, 'GET', `/v1/subscribers/${sub}`)
    expect(s.json()).toMatchObject({ id: sub, status: 'active', group_ids: [] })
  })

  it('404 group_not_found', async () => {
    const a = await newProject()
    const b = await newProject()
    const id = await createGroup(a)
    expectError(await bearer(a, 'DELETE', '/v1/groups/grp_nope'), 404, 'group_not_found')
    expectError(await bearer(b, 'DELETE', `/v1/groups/${id}`), 404, 'group_not_found')
    expect((await bearer(a, 'GET', '/v1/groups')).json().groups).toHaveLength(1)
  })
})

describe('api.md 4.5 POST /v1/groups/:id/subscribers', () => {
  it('200 { added }: counts only new memberships (idempotent)', async () => {
    const p = await newProject()
    const id = await createGroup(p)
    const s1 = await subscribe(p)
    const s2 = await subscribe(p)
    let res = await bearer(p, 'POST', `/v1/groups/${id}/subscribers`, { subscriber_ids: [s1] })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ added: 1 })
    res = await bearer(p, 'POST', `/v1/groups/${id}/subscribers`, { subscriber_ids: [s1, s2] })
    expect(res.json()).toEqual({ added: 1 })
    res = await bearer(p, 'POST', `/v1/groups/${id}/subscribers`, { subscriber_ids: [s1, s2] })
    expect(res.json()).toEqual({ added: 0 })
  })

  it('ids of other projects are silently filtered out', async () => {
    const a = await newProject()
    const b = await newProject()
    const id = await createGroup(a)
    const theirs = await subscribe(b)
    const res = await bearer(a, 'POST', `/v1/groups/${id}/subscribers`, { subscriber_ids: [theirs, 'sub_unknown'] })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ added: 0 })
    expect((await bearer(b, 'GET', `/v1/subscribers/${theirs}`)).json().group_ids).toEqual([])
  })

  it('subscriber_ids takes 1-500 items', async () => {
    const p = await newProject()
    const id = await createGroup(p)
    const many = Array.from({ length: 500 }, (_, i) => `sub_${String(i).padStart(26, '0')}`)
    expect((await bearer(p, 'POST', `/v1/groups/${id}/subscribers`, { subscriber_ids: many })).json()).toEqual({ added: 0 })
    expectInvalid(await bearer(p, 'POST', `/v1/groups/${id}/subscribers`, { subscriber_ids: [...many, 'sub_x'] }), 'subscriber_ids')
    expectInvalid(await bearer(p, 'POST', `/v1/groups/${id}/subscribers`, { subscriber_ids: [] }), 'subscriber_ids')
    expectInvalid(await bearer(p, 'POST', `/v1/groups/${id}/subscribers`, {}), 'subscriber_ids')
  })

  it('404 group_not_found', async () => {
    const a = await newProject()
    const b = await newProject()
    const id = await createGroup(a)
    const sub = await subscribe(b)
    expectError(await bearer(a, 'POST', '/v1/groups/grp_nope/subscribers', { subscriber_ids: ['sub_x'] }), 404, 'group_not_found')
    expectError(await bearer(b, 'POST', `/v1/groups/${id}/subscribers`, { subscriber_ids: [sub] }), 404, 'group_not_found')
    expect((await bearer(a, 'GET', '/v1/groups')).json().groups[0].member_count).toBe(0)
  })
})

describe('api.md 4.6 DELETE /v1/groups/:id/subscribers/:sid', () => {
  it('200 { ok: true }; the subscriber stays active and in its other groups', async () => {
    const p = await newProject()
    const g1 = await createGroup(p)
    const g2 = await createGroup(p)
    const sub = await subscribe(p, { group_ids: [g1, g2] })
    const res = await bearer(p, 'DELETE', `/v1/groups/${g1}/subscribers/${sub}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect((await bearer(p, 'GET', `/v1/subscribers/${sub}`)).json()).toMatchObject({ status: 'active', group_ids: [g2] })
  })

  it('404 group_not_found', async () => {
    const a = await newProject()
    const b = await newProject()
    const g = await createGroup(a)
    const sub = await subscribe(a, { group_ids: [g] })
    expectError(await bearer(a, 'DELETE', `/v1/groups/grp_nope/subscribers/${sub}`), 404, 'group_not_found')
    expectError(await bearer(b, 'DELETE', `/v1/groups/${g}/subscribers/${sub}`), 404, 'group_not_found')
    expect((await bearer(a, 'GET', `/v1/subscribers/${sub}`)).json().group_ids).toEqual([g])
  })
})

describe('api.md §5 rule: every /v1/groups operation is bearer', () => {
  it('each groups route answers 401 invalid_api_key without a key', async () => {
    const routes = [
      ['GET', '/v1/groups'], ['POST', '/v1/groups'], ['PATCH', '/v1/groups/grp_x'], ['DELETE', '/v1/groups/grp_x'],
      ['POST', '/v1/groups/grp_x/subscribers'], ['DELETE', '/v1/groups/grp_x/subscribers/sub_x'],
    ] as const
    for (const [method, url] of routes) {
      expectError(await t.app.inject({ method, url, payload: method === 'POST' || method === 'PATCH' ? { name: 'x' } : undefined }), 401, 'invalid_api_key')
    }
  })
})

// ---------------------------------------------------------- api.md §4.7

describe('api.md 4.7 POST /v1/send: responses', () => {
  it('202 { broadcast_id: bdc_* } and nothing else for an immediate send', async () => {
    const p = await newProject()
    const res = await send(p)
    expect(res.statusCode).toBe(202)
    expect(res.json()).toEqual({ broadcast_id: expect.stringMatching(/^bdc_/) })
  })

  it('202 { broadcast_id, scheduled_at } for a scheduled send (Plus)', async () => {
    const p = await newProject({ plan: 'plus' })
    const at = future(DAY)
    const res = await send(p, { scheduled_at: at })
    expect(res.statusCode).toBe(202)
    expect(res.json()).toEqual({ broadcast_id: expect.stringMatching(/^bdc_/), scheduled_at: at })
  })

  it('defaults: ttl 86400, urgency normal, url /', async () => {
    const p = await newProject()
    const id = (await send(p)).json().broadcast_id
    const b = (await bearer(p, 'GET', `/v1/broadcasts/${id}`)).json()
    expect(b).toMatchObject({ ttl: 86400, urgency: 'normal', notification: { url: '/' }, topic: null })
  })

  it('target all with no subscribers: accepted, delivered 0', async () => {
    const p = await newProject()
    const id = (await send(p)).json().broadcast_id
    expect((await bearer(p, 'GET', `/v1/broadcasts/${id}`)).json()).toMatchObject({ audience: 0, delivered: 0 })
  })

  it('user target with no match: 202, audience 0, the record remains', async () => {
    const p = await newProject()
    const res = await send(p, { target: { type: 'user', external_id: 'nobody' } })
    expect(res.statusCode).toBe(202)
    const b = await bearer(p, 'GET', `/v1/broadcasts/${res.json().broadcast_id}`)
    expect(b.statusCode).toBe(200)
    expect(b.json()).toMatchObject({ target: { type: 'user', external_id: 'nobody' }, audience: 0, delivered: 0 })
  })

  it('group target: unknown group 404 group_not_found and no broadcast; empty group 202', async () => {
    const a = await newProject()
    const b = await newProject()
    const theirs = await createGroup(b)
    expectError(await send(a, { target: { type: 'group', group_id: 'grp_nope' } }), 404, 'group_not_found')
    expectError(await send(a, { target: { type: 'group', group_id: theirs } }), 404, 'group_not_found')
    expect((await bearer(a, 'GET', '/v1/broadcasts')).json().broadcasts).toEqual([])
    const empty = await createGroup(a)
    const res = await send(a, { target: { type: 'group', group_id: empty } })
    expect(res.statusCode).toBe(202)
    expect((await bearer(a, 'GET', `/v1/broadcasts/${res.json().broadcast_id}`)).json().audience).toBe(0)
  })

  it('user and group targets count the right audience', async () => {
    const p = await newProject()
    await subscribe(p, { external_id: 'u1' })
    await subscribe(p, { external_id: 'u1' })
    await subscribe(p, { external_id: 'u2' })
    const g = await createGroup(p)
    await subscribe(p, { group_ids: [g] })
    const user = (await send(p, { target: { type: 'user', external_id: 'u1' } })).json().broadcast_id
    const group = (await send(p, { target: { type: 'group', group_id: g } })).json().broadcast_id
    const all = (await send(p)).json().broadcast_id
    expect((await bearer(p, 'GET', `/v1/broadcasts/${user}`)).json().audience).toBe(2)
    expect((await bearer(p, 'GET', `/v1/broadcasts/${group}`)).json().audience).toBe(1)
    expect((await bearer(p, 'GET', `/v1/broadcasts/${all}`)).json().audience).toBe(4)
  })
})

describe('api.md 4.7 / §7 POST /v1/send: 400 validation rows (invalid_request)', () => {
  let p: Client
  beforeAll(async () => {
    p = await newProject({ plan: 'max' })
  })

  it('wrong body shape', async () => {
    expectInvalid(await bearer(p, 'POST', '/v1/send', { notification: { title: 'a', body: 'b' } }), 'target')
    expectInvalid(await bearer(p, 'POST', '/v1/send', { target: { type: 'all' } }), 'notification')
    expectInvalid(await bearer(p, 'POST', '/v1/send', []))
  })

  it('title 1-256 chars; empty title', async () => {
    expect((await send(p, { notification: { title: 't'.repeat(256) } })).statusCode).toBe(202)
    expectInvalid(await send(p, { notification: { title: 't'.repeat(257) } }), 'notification.title')
    expectInvalid(await send(p, { notification: { title: '' } }), 'notification.title')
  })

  it('body 1-2048 chars; empty body', async () => {
    expect((await send(p, { notification: { body: 'b'.repeat(2048) } })).statusCode).toBe(202)
    expectInvalid(await send(p, { notification: { body: 'b'.repeat(2049) } }), 'notification.body')
    expectInvalid(await send(p, { notification: { body: '' } }), 'notification.body')
  })

  it('url at most 2048 chars', async () => {
    const base = 'https://shop.example/'
    expect((await send(p, { notification: { url: base + 'a'.repeat(2048 - base.length) } })).statusCode).toBe(202)
    expectInvalid(await send(p, { notification: { url: base + 'a'.repeat(2049 - base.length) } }), 'notification.url')
  })

  it('unknown target type', async () => {
    expectInvalid(await send(p, { target: { type: 'everyone' } }))
  })

  it('user external_id over 256 chars or with other characters', async () => {
    expect((await send(p, { target: { type: 'user', external_id: 'a'.repeat(256) } })).statusCode).toBe(202)
    expectInvalid(await send(p, { target: { type: 'user', external_id: 'a'.repeat(257) } }))
    expectInvalid(await send(p, { target: { type: 'user', external_id: 'a@b' } }))
  })

  it('ttl outside 0-2419200', async () => {
    expect((await send(p, { ttl: 0 })).statusCode).toBe(202)
    expect((await send(p, { ttl: 2419200 })).statusCode).toBe(202)
    expectInvalid(await send(p, { ttl: -1 }), 'ttl')
    expectInvalid(await send(p, { ttl: 2419201 }), 'ttl')
  })

  it('urgency not one of very-low, low, normal, high', async () => {
    for (const urgency of ['very-low', 'low', 'normal', 'high']) expect((await send(p, { urgency })).statusCode).toBe(202)
    expectInvalid(await send(p, { urgency: 'urgent' }), 'urgency')
  })

  it('topic over 32 chars or with other characters', async () => {
    expect((await send(p, { topic: 'T'.repeat(32) })).statusCode).toBe(202)
    expectInvalid(await send(p, { topic: 'T'.repeat(33) }), 'topic')
    expectInvalid(await send(p, { topic: 'a b' }), 'topic')
  })
})

describe('api.md 4.7 / §7 POST /v1/send: coded errors', () => {
  it('400 invalid_icon: malformed, empty, wrong type, not square', async () => {
    const p = await newProject()
    for (const icon of ['data:image/png;base64,###', 'data:image/png;base64,', dataUrl('image/gif', Buffer.from('GIF89a')), dataUrl('image/png', await png(64, 32))]) {
      expectError(await send(p, { notification: { icon } }), 400, 'invalid_icon')
    }
  })

  it('icon: a square PNG data URL is hosted under {cdn_url}/icons and served there', async () => {
    const p = await newProject()
    const res = await send(p, { notification: { icon: dataUrl('image/png', await png(64, 64)) } })
    expect(res.statusCode).toBe(202)
    const icon = (await bearer(p, 'GET', `/v1/broadcasts/${res.json().broadcast_id}`)).json().notification.icon as string
    expect(icon).toMatch(/^http:\/\/localhost:3000\/icons\/[0-9a-f]{64}\.(png|webp|jpg|jpeg)$/)
    const served = await t.app.inject({ method: 'GET', url: new URL(icon).pathname })
    expect(served.statusCode).toBe(200)
    expect(served.headers['content-type']).toMatch(/^image\//)
  })

  it('icon: an HTTPS URL is used as given; at most 2048 chars', async () => {
    const p = await newProject()
    const url = 'https://cdn.example/' + 'i'.repeat(2048 - 20)
    const res = await send(p, { notification: { icon: url } })
    expect(res.statusCode).toBe(202)
    expect((await bearer(p, 'GET', `/v1/broadcasts/${res.json().broadcast_id}`)).json().notification.icon).toBe(url)
    expect((await send(p, { notification: { icon: url + 'i' } })).statusCode).toBe(400)
  })

  it('400 invalid_image: malformed or wrong type (Hobby)', async () => {
    const p = await newProject({ plan: 'hobby' })
    for (const image of ['data:image/png;base64,###', dataUrl('image/gif', Buffer.from('GIF89a'))]) {
      expectError(await send(p, { notification: { image } }), 400, 'invalid_image')
    }
    expect((await send(p, { notification: { image: dataUrl('image/png', await png(200, 100)) } })).statusCode).toBe(202)
  })

  it('icon data URL at most 256 KB and image at most 1 MB, both in one send (no 413 below the limits)', async () => {
    const p = await newProject({ plan: 'hobby' })
    const icon = padPng(await png(64, 64), 256 * 1024)
    const image = padPng(await png(300, 150), 1024 * 1024)
    const ok = await send(p, { notification: { icon: dataUrl('image/png', icon), image: dataUrl('image/png', image) } })
    expect(ok.statusCode, ok.body).toBe(202)
    expectError(await send(p, { notification: { icon: dataUrl('image/png', padPng(await png(64, 64), 256 * 1024 + 1)) } }), 400, 'invalid_icon')
    expectError(await send(p, { notification: { image: dataUrl('image/png', padPng(await png(300, 150), 1024 * 1024 + 1)) } }), 400, 'invalid_image')
  })

  it('image: an HTTPS URL at most 2048 chars (Hobby)', async () => {
    const p = await newProject({ plan: 'hobby' })
    const url = 'https://cdn.example/' + 'b'.repeat(2048 - 20)
    expect((await send(p, { notification: { image: url } })).statusCode).toBe(202)
    expect((await send(p, { notification: { image: url + 'b' } })).statusCode).toBe(400)
  })

  it('403 monthly_push_limit_reached only when the broadcast would go over the cap', async () => {
    const p = await newProject({}, { monthly_pushes: 2 })
    await subscribe(p)
    await subscribe(p)
    expect((await send(p)).statusCode).toBe(202)
    const error = expectError(await send(p), 403, 'monthly_push_limit_reached')
    expect(error).toMatchObject({ limit: 2, audience: 2 })
  })

  it('a scheduled broadcast reserves its push budget at fire time, not at send', async () => {
    const p = await newProject({ plan: 'plus' }, { monthly_pushes: 2 })
    await subscribe(p)
    await subscribe(p)
    expect((await send(p, { scheduled_at: future(DAY) })).statusCode).toBe(202)
    expect((await bearer(p, 'GET', '/v1/me')).json().project.usage.pushes_this_month).toBe(0)
    // Nothing was reserved, so an immediate send still fits.
    expect((await send(p)).statusCode).toBe(202)
  })

  it('an immediate send counts its audience in /v1/me usage.pushes_this_month', async () => {
    const p = await newProject()
    await subscribe(p)
    await subscribe(p)
    expect((await send(p)).statusCode).toBe(202)
    expect((await bearer(p, 'GET', '/v1/me')).json().project.usage).toEqual({ subscribers: 2, pushes_this_month: 2 })
  })

  it('group target with a malformed group id is 404 group_not_found', async () => {
    const p = await newProject()
    expectError(await send(p, { target: { type: 'group', group_id: 'not-a-group' } }), 404, 'group_not_found')
  })

  it('400 invalid_scheduled_at: in the past or more than 90 days ahead', async () => {
    const p = await newProject({ plan: 'plus' })
    expectError(await send(p, { scheduled_at: Date.now() - 60_000 }), 400, 'invalid_scheduled_at')
    expectError(await send(p, { scheduled_at: future(91 * DAY) }), 400, 'invalid_scheduled_at')
    expect((await send(p, { scheduled_at: future(89 * DAY) })).statusCode).toBe(202)
  })

  it('401 invalid_api_key: bad bearer key', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/send', headers: { authorization: 'Bearer hk_live_notarealkey000000000000' }, payload: sendBody() })
    expectError(res, 401, 'invalid_api_key')
  })

  it('403 scheduling_requires_upgrade below Plus', async () => {
    for (const plan of ['free', 'hobby']) {
      const p = await newProject({ plan })
      expectError(await send(p, { scheduled_at: future(DAY) }), 403, 'scheduling_requires_upgrade')
    }
  })

  it('403 image_requires_upgrade on Free', async () => {
    const p = await newProject()
    expectError(await send(p, { notification: { image: 'https://cdn.example/banner.png' } }), 403, 'image_requires_upgrade')
  })

  it('429 rate_limited', async () => {
    const p = await newProject({}, { requests_per_minute: 1 })
    await awayFromWindowEdge()
    expect((await send(p)).statusCode).toBe(202)
    expectError(await send(p), 429, 'rate_limited')
  })
})

// ---------------------------------------------------------- api.md §4.8-4.10, §5

describe('api.md 4.8 POST /v1/subscribe', () => {
  it('201 { id: sub_* }', async () => {
    const p = await newProject()
    const res = await subscribeReq(p)
    expect(res.statusCode).toBe(201)
    expect(res.json()).toEqual({ id: expect.stringMatching(/^sub_/) })
  })

  it('idempotent on (project, endpoint): same id, last_seen_at refreshed', async () => {
    const p = await newProject()
    const body = { endpoint: endpoint(), keys: keys() }
    const first = await subscribe(p, body)
    const seen = (await bearer(p, 'GET', `/v1/subscribers/${first}`)).json().last_seen_at
    await new Promise((resolve) => setTimeout(resolve, 15))
    expect(await subscribe(p, body)).toBe(first)
    expect((await bearer(p, 'GET', `/v1/subscribers/${first}`)).json().last_seen_at).toBeGreaterThan(seen)
  })

  it('the project may come as the X-Service-Project header', async () => {
    const p = await newProject()
    const res = await t.app.inject({ method: 'POST', url: '/v1/subscribe', headers: { 'x-service-project': p.id }, payload: { endpoint: endpoint(), keys: keys() } })
    expect(res.statusCode).toBe(201)
  })

  it('400 missing_project; 404 project_not_found', async () => {
    const body = { endpoint: endpoint(), keys: keys() }
    expectError(await t.app.inject({ method: 'POST', url: '/v1/subscribe', payload: body }), 400, 'missing_project')
    expectError(await t.app.inject({ method: 'POST', url: '/v1/subscribe?project=prj_nope', payload: body }), 404, 'project_not_found')
    expectError(await t.app.inject({ method: 'POST', url: '/v1/subscribe', headers: { 'x-service-project': 'prj_nope' }, payload: body }), 404, 'project_not_found')
  })

  it('400 validation: endpoint not a URL, keys missing, external_id with other characters', async () => {
    const p = await newProject()
    expectInvalid(await subscribeReq(p, { endpoint: 'not a url' }), 'endpoint')
    expectInvalid(await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: { endpoint: endpoint() } }), 'keys')
    expectInvalid(await subscribeReq(p, { keys: { p256dh: keys().p256dh } }), 'keys.auth')
    expectInvalid(await subscribeReq(p, { external_id: 'a b' }), 'external_id')
  })

  it('limits: endpoint 2048, keys 256 each, external_id 256, group_ids 50', async () => {
    const p = await newProject()
    const long = endpoint().padEnd(2048, 'x')
    expect((await subscribeReq(p, { endpoint: long })).statusCode).toBe(201)
    expectInvalid(await subscribeReq(p, { endpoint: long + 'x' }), 'endpoint')
    expectInvalid(await subscribeReq(p, { keys: { p256dh: 'A'.repeat(257), auth: 'A' } }), 'keys.p256dh')
    expectInvalid(await subscribeReq(p, { keys: { p256dh: 'A', auth: 'A'.repeat(257) } }), 'keys.auth')
    expect((await subscribeReq(p, { external_id: 'e'.repeat(256) })).statusCode).toBe(201)
    expectInvalid(await subscribeReq(p, { external_id: 'e'.repeat(257) }), 'external_id')
    const ids = Array.from({ length: 50 }, (_, i) => `grp_${i}`)
    expect((await subscribeReq(p, { group_ids: ids })).statusCode).toBe(201)
    expectInvalid(await subscribeReq(p, { group_ids: [...ids, 'grp_x'] }), 'group_ids')
  })

  it('keys at 256 chars are accepted', async () => {
    const p = await newProject()
    expect((await subscribeReq(p, { keys: { p256dh: 'A'.repeat(256), auth: 'B'.repeat(256) } })).statusCode).toBe(201)
  })

  it('at the subscriber cap, a repeat subscribe of a known endpoint still refreshes (201, same id)', async () => {
    const p = await newProject({}, { subscribers: 1 })
    const body = { endpoint: endpoint(), keys: keys() }
    const id = await subscribe(p, body)
    expect(await subscribe(p, body)).toBe(id)
  })

  it('invalid group_ids are dropped silently; valid ones joined', async () => {
    const a = await newProject()
    const b = await newProject()
    const mine = await createGroup(a)
    const theirs = await createGroup(b)
    const deleted = await createGroup(a)
    await bearer(a, 'DELETE', `/v1/groups/${deleted}`)
    const res = await subscribeReq(a, { group_ids: [mine, theirs, deleted, 'grp_typo'] })
    expect(res.statusCode).toBe(201)
    expect((await bearer(a, 'GET', `/v1/subscribers/${res.json().id}`)).json().group_ids).toEqual([mine])
  })

  it('decisions.md §5: an endpoint outside the known push services is 400 invalid_request', async () => {
    const p = await (async () => {
      const res = await strict.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: { name: 'Strict' } })
      return res.json().id as string
    })()
    const res = await strict.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p}`, payload: { endpoint: 'https://push.example.com/x', keys: keys() } })
    expectError(res, 400, 'invalid_request')
    const http = await strict.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p}`, payload: { endpoint: 'http://fcm.googleapis.com/fcm/send/x', keys: keys() } })
    expectError(http, 400, 'invalid_request')
  })

  it('403 subscriber_limit_reached; 429 rate_limited', async () => {
    const capped = await newProject({}, { subscribers: 0 })
    expectError(await subscribeReq(capped), 403, 'subscriber_limit_reached')
    const limited = await newProject({}, { requests_per_minute: 1 })
    await awayFromWindowEdge()
    await subscribe(limited)
    expectError(await subscribeReq(limited), 429, 'rate_limited')
  })
})

describe('api.md 4.9 POST /v1/unsubscribe', () => {
  it('200 { ok: true }; status becomes unsubscribed and the row stays', async () => {
    const p = await newProject()
    const ep = endpoint()
    const id = await subscribe(p, { endpoint: ep })
    const res = await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${p.id}`, payload: { endpoint: ep } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect((await bearer(p, 'GET', `/v1/subscribers/${id}`)).json().status).toBe('unsubscribed')
  })

  it('200 { ok: true } for an endpoint not on file or already unsubscribed', async () => {
    const p = await newProject()
    for (let i = 0; i < 2; i++) {
      const res = await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${p.id}`, payload: { endpoint: 'https://fcm.googleapis.com/fcm/send/never' } })
      expect(res.statusCode).toBe(200)
      expect(res.json()).toEqual({ ok: true })
    }
  })

  it('X-Service-Project header; 400 missing_project; 404 project_not_found', async () => {
    const p = await newProject()
    const ep = endpoint()
    const id = await subscribe(p, { endpoint: ep })
    const res = await t.app.inject({ method: 'POST', url: '/v1/unsubscribe', headers: { 'x-service-project': p.id }, payload: { endpoint: ep } })
    expect(res.json()).toEqual({ ok: true })
    expect((await bearer(p, 'GET', `/v1/subscribers/${id}`)).json().status).toBe('unsubscribed')
    expectError(await t.app.inject({ method: 'POST', url: '/v1/unsubscribe', payload: { endpoint: ep } }), 400, 'missing_project')
    expectError(await t.app.inject({ method: 'POST', url: '/v1/unsubscribe?project=prj_nope', payload: { endpoint: ep } }), 404, 'project_not_found')
  })

  it('endpoint at most 2048 chars', async () => {
    const p = await newProject()
    const long = endpoint().padEnd(2048, 'x')
    expect((await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${p.id}`, payload: { endpoint: long } })).statusCode).toBe(200)
    expectInvalid(await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${p.id}`, payload: { endpoint: long + 'x' } }), 'endpoint')
  })

  it('429 rate_limited', async () => {
    const p = await newProject({}, { requests_per_minute: 1 })
    await awayFromWindowEdge()
    const url = `/v1/unsubscribe?project=${p.id}`
    expect((await t.app.inject({ method: 'POST', url, payload: { endpoint: endpoint() } })).statusCode).toBe(200)
    expectError(await t.app.inject({ method: 'POST', url, payload: { endpoint: endpoint() } }), 429, 'rate_limited')
  })

  it('decisions.md §3: subscribing again makes it active with the same id', async () => {
    const p = await newProject()
    const body = { endpoint: endpoint(), keys: keys() }
    const id = await subscribe(p, body)
    await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${p.id}`, payload: { endpoint: body.endpoint } })
    expect(await subscribe(p, body)).toBe(id)
    expect((await bearer(p, 'GET', `/v1/subscribers/${id}`)).json().status).toBe('active')
  })
})

describe('api.md §5 from a browser: the project routes answer CORS', () => {
  it('a cross-origin preflight for subscribe with X-Service-Project is allowed', async () => {
    for (const url of ['/v1/subscribe', '/v1/unsubscribe', '/v1/events?project=prj_x']) {
      const res = await t.app.inject({
        method: 'OPTIONS',
        url,
        headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, x-service-project' },
      })
      expect(res.statusCode, url).toBeLessThan(300)
      expect(res.headers['access-control-allow-origin'], url).toMatch(/^(\*|https:\/\/shop\.example)$/)
      expect(String(res.headers['access-control-allow-headers']).toLowerCase(), url).toContain('content-type')
    }
    const sub = await t.app.inject({ method: 'OPTIONS', url: '/v1/subscribe', headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-service-project' } })
    expect(String(sub.headers['access-control-allow-headers']).toLowerCase()).toContain('x-service-project')
  })
})

describe('api.md 4.10 POST /v1/events', () => {
  async function clicks(p: Client, id: string): Promise<{ clicked: number; dismissed: number }> {
    const b = (await bearer(p, 'GET', `/v1/broadcasts/${id}`)).json()
    return { clicked: b.clicked, dismissed: b.dismissed }
  }

  it('202 { ok: true } and recorded for the project\'s own broadcast (clicked, dismissed)', async () => {
    const p = await newProject()
    const id = (await send(p)).json().broadcast_id
    for (const type of ['clicked', 'dismissed']) {
      const res = await t.app.inject({ method: 'POST', url: `/v1/events?project=${p.id}`, payload: { type, broadcast_id: id, subscriber_id: 'sub_x' } })
      expect(res.statusCode).toBe(202)
      expect(res.json()).toEqual({ ok: true })
    }
    expect(await clicks(p, id)).toEqual({ clicked: 1, dismissed: 1 })
  })

  it('issue 25: type shown is 202 { ok: true } and counted as shown, nothing else (clicked and dismissed unchanged)', async () => {
    const p = await newProject()
    const id = (await send(p)).json().broadcast_id
    const res = await t.app.inject({ method: 'POST', url: `/v1/events?project=${p.id}`, payload: { type: 'shown', broadcast_id: id } })
    expect(res.statusCode).toBe(202)
    expect(res.json()).toEqual({ ok: true })
    const b = (await bearer(p, 'GET', `/v1/broadcasts/${id}`)).json()
    expect({ clicked: b.clicked, dismissed: b.dismissed, shown: b.shown, funnel_shown: b.funnel.shown }).toEqual({ clicked: 0, dismissed: 0, shown: 1, funnel_shown: 1 })
  })

  it('a body over the size limit is 202 { ok: true } too, not 413', async () => {
    const p = await newProject()
    const res = await t.app.inject({ method: 'POST', url: `/v1/events?project=${p.id}`, payload: { type: 'clicked', broadcast_id: 'bdc_x', pad: 'x'.repeat(100_000) } })
    expect(res.statusCode).toBe(202)
    expect(res.json()).toEqual({ ok: true })
  })

  it('always 202 { ok: true }; dropped when the project is missing, wrong, header-only, or not the broadcast\'s', async () => {
    const p = await newProject()
    const other = await newProject()
    const id = (await send(p)).json().broadcast_id
    const payload = { type: 'clicked', broadcast_id: id }
    const calls = [
      { url: '/v1/events', payload },
      { url: '/v1/events?project=prj_nope', payload },
      { url: `/v1/events?project=${other.id}`, payload },
      { url: '/v1/events', headers: { 'x-service-project': p.id }, payload },
      { url: `/v1/events?project=${p.id}`, payload: { type: 'opened', broadcast_id: id } },
      { url: `/v1/events?project=${p.id}`, payload: { broadcast_id: id } },
    ]
    for (const call of calls) {
      const res = await t.app.inject({ method: 'POST', ...call })
      expect(res.statusCode, call.url).toBe(202)
      expect(res.json()).toEqual({ ok: true })
    }
    const bad = await t.app.inject({ method: 'POST', url: `/v1/events?project=${p.id}`, headers: { 'content-type': 'application/json' }, payload: '{oops' })
    expect(bad.statusCode).toBe(202)
    expect(bad.json()).toEqual({ ok: true })
    expect(await clicks(p, id)).toEqual({ clicked: 0, dismissed: 0 })
  })
})

// ---------------------------------------------------------- decisions.md §2

describe('decisions.md §2: operator API', () => {
  it('POST /admin/v1/projects: 201 { id, name, plan, api_key, vapid_public }, plan defaults to free', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: { name: 'Shop', domain: 'shop.example' } })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toEqual({
      id: expect.stringMatching(/^prj_/),
      name: 'Shop',
      plan: 'free',
      api_key: expect.stringMatching(/^hk_live_/),
      vapid_public: expect.any(String),
    })
  })

  it('plans take free, hobby, plus, pro, max; anything else is 400', async () => {
    for (const plan of ['free', 'hobby', 'plus', 'pro', 'max']) {
      const res = await t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: { name: 'x', plan } })
      expect(res.json().plan).toBe(plan)
    }
    expectInvalid(await t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: { name: 'x', plan: 'gold' } }), 'plan')
  })

  it('POST /admin/v1/projects without a name is 400 invalid_request', async () => {
    expectInvalid(await t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: {} }), 'name')
  })

  it('the plan table: groups, subscribers, monthly pushes, requests per minute', async () => {
    const table = {
      free: [3, 10_000, 100_000, 600],
      hobby: [9, 50_000, 1_000_000, 1_200],
      plus: [27, 250_000, 5_000_000, 3_000],
      pro: [100, 1_000_000, 25_000_000, 6_000],
      max: [1000, 10_000_000, 250_000_000, 12_000],
    }
    for (const [plan, [groups, subscribers, monthly, rpm]] of Object.entries(table)) {
      const p = await newProject({ plan })
      const res = await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${p.id}`, headers: admin })
      expect(res.json().limits, plan).toEqual({ groups, subscribers, monthly_pushes: monthly, requests_per_minute: rpm })
      expect((await bearer(p, 'GET', '/v1/me')).json().project.limits).toEqual(res.json().limits)
    }
  })

  it('GET /admin/v1/projects and /:id: the project(s) with plan, limits, usage', async () => {
    const p = await newProject({ plan: 'hobby' })
    await subscribe(p)
    const one = await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${p.id}`, headers: admin })
    expect(one.statusCode).toBe(200)
    expect(one.json()).toMatchObject({ id: p.id, plan: 'hobby', limits: expect.any(Object), usage: { subscribers: 1, pushes_this_month: 0 } })
    expect(JSON.stringify(one.json())).not.toContain(p.apiKey)
    const list = await t.app.inject({ method: 'GET', url: '/admin/v1/projects', headers: admin })
    expect(list.statusCode).toBe(200)
    expect(list.json()).toEqual({ projects: expect.any(Array), next_cursor: expect.toBeOneOf([null, expect.any(String)]) })
    const missing = await t.app.inject({ method: 'GET', url: '/admin/v1/projects/prj_nope', headers: admin })
    expectError(missing, 404, 'project_not_found')
  })

  it('PATCH /admin/v1/projects/:id { plan, default_icon, limits }: 200 the project; null returns a limit to the plan', async () => {
    const p = await newProject()
    let res = await t.app.inject({ method: 'PATCH', url: `/admin/v1/projects/${p.id}`, headers: admin, payload: { plan: 'pro', default_icon: 'https://cdn.example/i.png', limits: { groups: 5 } } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ id: p.id, plan: 'pro', default_icon: 'https://cdn.example/i.png', limits: { groups: 5, subscribers: 1_000_000 } })
    res = await t.app.inject({ method: 'PATCH', url: `/admin/v1/projects/${p.id}`, headers: admin, payload: { limits: { groups: null } } })
    expect(res.json().limits.groups).toBe(100)
    const icon = dataUrl('image/png', await png(32, 32))
    res = await t.app.inject({ method: 'PATCH', url: `/admin/v1/projects/${p.id}`, headers: admin, payload: { default_icon: icon } })
    expect(res.statusCode).toBe(200)
    expect(res.json().default_icon).toMatch(/\/icons\/[0-9a-f]{64}\./)
  })

  it('unknown project: 404 project_not_found on get, update and key creation', async () => {
    expectError(await t.app.inject({ method: 'PATCH', url: '/admin/v1/projects/prj_nope', headers: admin, payload: { plan: 'pro' } }), 404, 'project_not_found')
    expectError(await t.app.inject({ method: 'POST', url: '/admin/v1/projects/prj_nope/api-keys', headers: admin, payload: {} }), 404, 'project_not_found')
  })

  it('the default icon is used when a send gives none', async () => {
    const p = await newProject()
    await t.app.inject({ method: 'PATCH', url: `/admin/v1/projects/${p.id}`, headers: admin, payload: { default_icon: 'https://cdn.example/default.png' } })
    expect((await bearer(p, 'GET', '/v1/me')).json().project.default_icon).toBe('https://cdn.example/default.png')
  })

  it('POST /admin/v1/projects/:id/api-keys: 201 { id, api_key }; DELETE …/:key_id: 200 { ok: true } and the key stops at once', async () => {
    const p = await newProject()
    const res = await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${p.id}/api-keys`, headers: admin, payload: { name: 'ci' } })
    expect(res.statusCode).toBe(201)
    // The contract's { id, api_key }, and what issue 13 added beside them (name, prefix, scope, dates).
    expect(res.json()).toEqual({
      id: expect.any(String),
      api_key: expect.stringMatching(/^hk_live_/),
      name: 'ci',
      prefix: expect.stringMatching(/^hk_live_/),
      scope: 'full',
      created_at: expect.any(Number),
      last_used_at: null,
      created_by: { type: 'operator', id: null, email: null },
    })
    const key = res.json()
    const second = { id: p.id, apiKey: key.api_key, auth: { authorization: `Bearer ${key.api_key}` } }
    expect((await bearer(second, 'GET', '/v1/me')).statusCode).toBe(200)
    const revoked = await t.app.inject({ method: 'DELETE', url: `/admin/v1/projects/${p.id}/api-keys/${key.id}`, headers: admin })
    expect(revoked.statusCode).toBe(200)
    expect(revoked.json()).toEqual({ ok: true })
    expectError(await bearer(second, 'GET', '/v1/me'), 401, 'invalid_api_key')
    expect((await bearer(p, 'GET', '/v1/me')).statusCode).toBe(200)
    const bare = await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${p.id}/api-keys`, headers: admin })
    expect(bare.statusCode).toBe(201)
  })

  it('operator routes refuse a missing or wrong token, and a project API key, with 401', async () => {
    const p = await newProject()
    for (const headers of [{}, { authorization: 'Bearer wrong' }, p.auth]) {
      const res = await t.app.inject({ method: 'GET', url: '/admin/v1/projects', headers })
      expect(res.statusCode).toBe(401)
      expect(res.json().error).toEqual(expect.objectContaining({ code: expect.any(String), message: expect.any(String) }))
    }
  })
})

// ---------------------------------------------------------- decisions.md §3

describe('decisions.md §3: /v1/me and /v1/vapid-public-key', () => {
  it('GET /v1/me: { project: { id, name, domain, vapid_public, plan, default_icon, limits, frequency_caps, usage } }, no secret', async () => {
    const created = await t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: { name: 'Me', domain: 'me.example', plan: 'plus' } })
    const { id, api_key: apiKey, vapid_public: vapidPublic } = created.json()
    const res = await t.app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${apiKey}` } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      project: {
        id,
        name: 'Me',
        domain: 'me.example',
        vapid_public: vapidPublic,
        plan: 'plus',
        default_icon: null,
        default_timezone: 'UTC',
        quiet_hours: null,
        limits: { groups: 27, subscribers: 250_000, monthly_pushes: 5_000_000, requests_per_minute: 3_000 },
        frequency_caps: [],
        usage: { subscribers: 0, pushes_this_month: 0 },
        expire_after_failures: null,
        expire_after_days_without_delivery: null,
      },
    })
    expect(res.body).not.toContain(apiKey)
    expect(res.body).not.toMatch(/private|secret|hash/)
  })

  it('GET /v1/me: 401 invalid_api_key without a key', async () => {
    expectError(await t.app.inject({ method: 'GET', url: '/v1/me' }), 401, 'invalid_api_key')
  })

  it('GET /v1/vapid-public-key?project=: { vapid_public } without bearer auth', async () => {
    const created = (await t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: { name: 'K' } })).json()
    const res = await t.app.inject({ method: 'GET', url: `/v1/vapid-public-key?project=${created.id}` })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ vapid_public: created.vapid_public })
    const missing = expectError(await t.app.inject({ method: 'GET', url: '/v1/vapid-public-key', headers: { 'x-service-project': created.id } }), 400, 'missing_project')
    // The query parameter is the only form here; the message must not offer the header.
    expect(missing.message).not.toMatch(/X-Service-Project/i)
    expectError(await t.app.inject({ method: 'GET', url: '/v1/vapid-public-key?project=prj_nope' }), 404, 'project_not_found')
  })
})

describe('decisions.md §3: subscribers', () => {
  it('GET /v1/subscribers/:sid: { id, endpoint, external_id, status, push_service, group_ids, tags, source, created_at, last_seen_at, vapid_key_id }', async () => {
    const p = await newProject()
    const g = await createGroup(p)
    const ep = endpoint()
    const id = await subscribe(p, { endpoint: ep, external_id: 'user_1', group_ids: [g] })
    const res = await bearer(p, 'GET', `/v1/subscribers/${id}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      id, endpoint: ep, external_id: 'user_1', status: 'active', push_service: expect.stringMatching(/^(fcm|mozilla|apple|wns|other)$/), group_ids: [g], tags: {}, locale: null, source: 'subscribe', timezone: null, created_at: expect.any(Number), last_seen_at: expect.any(Number),
      // Issue 23: the VAPID pair it was made with, here the project's original one.
      vapid_key_id: `vk_${p.id.slice(4)}`,
      // Issue 23: its health, none yet.
      last_delivered_at: null, last_clicked_at: null, consecutive_failures: 0, health: 'active',
    })
    expect(Number.isInteger(res.json().created_at)).toBe(true)
    const anon = await subscribe(p)
    expect((await bearer(p, 'GET', `/v1/subscribers/${anon}`)).json().external_id).toBeNull()
  })

  it('GET /v1/subscribers/:sid: 404 subscriber_not_found, also for another project\'s subscriber', async () => {
    const a = await newProject()
    const b = await newProject()
    const id = await subscribe(a)
    expectError(await bearer(a, 'GET', '/v1/subscribers/sub_nope'), 404, 'subscriber_not_found')
    expectError(await bearer(b, 'GET', `/v1/subscribers/${id}`), 404, 'subscriber_not_found')
  })

  it('GET /v1/subscribers: { subscribers, next_cursor }, newest first, filters status, external_id, group_id', async () => {
    const p = await newProject()
    const g = await createGroup(p)
    const s1 = await subscribe(p, { external_id: 'u1' })
    const ep = endpoint()
    const s2 = await subscribe(p, { endpoint: ep, group_ids: [g] })
    const s3 = await subscribe(p, { external_id: 'u1' })
    await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${p.id}`, payload: { endpoint: ep } })
    const all = (await bearer(p, 'GET', '/v1/subscribers')).json()
    expect(all.next_cursor).toBeNull()
    expect(all.subscribers.map((s: { id: string }) => s.id)).toEqual([s3, s2, s1])
    const ids = async (query: string) => (await bearer(p, 'GET', `/v1/subscribers?${query}`)).json().subscribers.map((s: { id: string }) => s.id)
    expect(await ids('status=unsubscribed')).toEqual([s2])
    expect(await ids('status=active')).toEqual([s3, s1])
    expect(await ids('external_id=u1')).toEqual([s3, s1])
    expect(await ids(`group_id=${g}`)).toEqual([s2])
    expectInvalid(await bearer(p, 'GET', '/v1/subscribers?status=gone'))
  })

  it('cursor pagination: ?limit= 1-100 (default 50), ?cursor=, next_cursor null on the last page; bad cursor 400', async () => {
    const p = await newProject()
    const made = [await subscribe(p), await subscribe(p), await subscribe(p)].reverse()
    const first = (await bearer(p, 'GET', '/v1/subscribers?limit=2')).json()
    expect(first.subscribers.map((s: { id: string }) => s.id)).toEqual(made.slice(0, 2))
    expect(typeof first.next_cursor).toBe('string')
    const second = (await bearer(p, 'GET', `/v1/subscribers?limit=2&cursor=${first.next_cursor}`)).json()
    expect(second.subscribers.map((s: { id: string }) => s.id)).toEqual(made.slice(2))
    expect(second.next_cursor).toBeNull()
    expect((await bearer(p, 'GET', '/v1/subscribers?limit=100')).statusCode).toBe(200)
    expectInvalid(await bearer(p, 'GET', '/v1/subscribers?limit=0'))
    expectInvalid(await bearer(p, 'GET', '/v1/subscribers?limit=101'))
    expectInvalid(await bearer(p, 'GET', '/v1/subscribers?cursor=garbage'))
  })

  it('?limit= defaults to 50', async () => {
    const p = await newProject()
    for (let i = 0; i < 51; i++) await subscribe(p)
    const res = (await bearer(p, 'GET', '/v1/subscribers')).json()
    expect(res.subscribers).toHaveLength(50)
    expect(typeof res.next_cursor).toBe('string')
  })

  it('status expired is a listed value', async () => {
    const p = await newProject()
    const res = await bearer(p, 'GET', '/v1/subscribers?status=expired')
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ subscribers: [], next_cursor: null })
  })

  it('DELETE /v1/subscribers/:sid → { deleted: 1 }; the row is gone', async () => {
    const a = await newProject()
    const b = await newProject()
    const id = await subscribe(a)
    expectError(await bearer(b, 'DELETE', `/v1/subscribers/${id}`), 404, 'subscriber_not_found')
    const res = await bearer(a, 'DELETE', `/v1/subscribers/${id}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ deleted: 1 })
    expectError(await bearer(a, 'GET', `/v1/subscribers/${id}`), 404, 'subscriber_not_found')
  })

  it('DELETE /v1/subscribers/by-endpoint { endpoint } → { deleted: 0|1 }', async () => {
    const p = await newProject()
    const ep = endpoint()
    await subscribe(p, { endpoint: ep })
    let res = await bearer(p, 'DELETE', '/v1/subscribers/by-endpoint', { endpoint: ep })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ deleted: 1 })
    res = await bearer(p, 'DELETE', '/v1/subscribers/by-endpoint', { endpoint: ep })
    expect(res.json()).toEqual({ deleted: 0 })
  })

  it('DELETE /v1/subscribers/by-external-id/:external_id → { deleted: n }', async () => {
    const p = await newProject()
    await subscribe(p, { external_id: 'many' })
    await subscribe(p, { external_id: 'many' })
    await subscribe(p, { external_id: 'other' })
    const res = await bearer(p, 'DELETE', '/v1/subscribers/by-external-id/many')
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ deleted: 2 })
    expect((await bearer(p, 'GET', '/v1/subscribers')).json().subscribers).toHaveLength(1)
  })

  it('erasure keeps the counts already on broadcasts', async () => {
    const p = await newProject()
    const id = await subscribe(p)
    const bdc = (await send(p)).json().broadcast_id
    await t.app.inject({ method: 'POST', url: `/v1/events?project=${p.id}`, payload: { type: 'clicked', broadcast_id: bdc } })
    await bearer(p, 'DELETE', `/v1/subscribers/${id}`)
    expect((await bearer(p, 'GET', `/v1/broadcasts/${bdc}`)).json()).toMatchObject({ audience: 1, clicked: 1 })
  })
})

describe('decisions.md §3: broadcasts', () => {
  it('GET /v1/broadcasts/:id: every documented field, times Unix ms or null, source api', async () => {
    const p = await newProject({ plan: 'plus' })
    const at = future(DAY)
    const id = (await send(p, { scheduled_at: at, ttl: 60, urgency: 'high', topic: 'sale', notification: { url: '/sale' } })).json().broadcast_id
    const res = await bearer(p, 'GET', `/v1/broadcasts/${id}`)
    expect(res.statusCode).toBe(200)
    const b = res.json()
    expect(b).toEqual(expect.objectContaining({
      id,
      status: 'scheduled',
      source: 'api',
      target: { type: 'all' },
      notification: { title: 'Hello', body: 'World', icon: null, image: null, url: '/sale' },
      ttl: 60,
      urgency: 'high',
      topic: 'sale',
      audience: expect.any(Number),
      delivered: 0,
      failed: 0,
      clicked: 0,
      dismissed: 0,
      shown: 0,
      funnel: {
        audience: expect.any(Number), sent: 0, delivered: 0, cannot_report_shown: 0, shown: 0, clicked: 0, clicked_by_action: {}, dismissed: 0,
        rates: { delivered: null, shown: null, click_through: null, click_through_shown: null },
      },
      scheduled_at: at,
      started_at: null,
      finished_at: null,
      created_at: expect.any(Number),
    }))
    for (const field of ['id', 'status', 'source', 'target', 'notification', 'ttl', 'urgency', 'topic', 'audience', 'delivered', 'failed', 'clicked', 'dismissed', 'scheduled_at', 'started_at', 'finished_at', 'created_at']) {
      expect(b, field).toHaveProperty(field)
    }
    expect(Number.isInteger(b.created_at)).toBe(true)
  })

  it('an immediate broadcast has scheduled_at null and status pending (or later)', async () => {
    const p = await newProject()
    const id = (await send(p)).json().broadcast_id
    const b = (await bearer(p, 'GET', `/v1/broadcasts/${id}`)).json()
    expect(b.scheduled_at).toBeNull()
    expect(['pending', 'sending', 'sent']).toContain(b.status)
  })

  it('GET /v1/broadcasts: { broadcasts, next_cursor }, newest first, paginated', async () => {
    const p = await newProject()
    const ids = [(await send(p)).json().broadcast_id, (await send(p)).json().broadcast_id, (await send(p)).json().broadcast_id].reverse()
    const first = (await bearer(p, 'GET', '/v1/broadcasts?limit=2')).json()
    expect(first.broadcasts.map((b: { id: string }) => b.id)).toEqual(ids.slice(0, 2))
    const second = (await bearer(p, 'GET', `/v1/broadcasts?limit=2&cursor=${first.next_cursor}`)).json()
    expect(second).toEqual({ broadcasts: [expect.objectContaining({ id: ids[2] })], next_cursor: null })
    expectInvalid(await bearer(p, 'GET', '/v1/broadcasts?limit=101'))
    expectInvalid(await bearer(p, 'GET', '/v1/broadcasts?cursor=nope'))
  })

  it('GET /v1/broadcasts/:id: 404 broadcast_not_found, also for another project\'s', async () => {
    const a = await newProject()
    const b = await newProject()
    const id = (await send(a)).json().broadcast_id
    expectError(await bearer(b, 'GET', `/v1/broadcasts/${id}`), 404, 'broadcast_not_found')
    expectError(await bearer(a, 'GET', '/v1/broadcasts/bdc_nope'), 404, 'broadcast_not_found')
  })

  it('DELETE /v1/broadcasts/:id: scheduled → 200 { ok: true } and canceled; again → 409; unknown → 404', async () => {
    const p = await newProject({ plan: 'plus' })
    const other = await newProject({ plan: 'plus' })
    const id = (await send(p, { scheduled_at: future(DAY) })).json().broadcast_id
    expectError(await bearer(other, 'DELETE', `/v1/broadcasts/${id}`), 404, 'broadcast_not_found')
    const res = await bearer(p, 'DELETE', `/v1/broadcasts/${id}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect((await bearer(p, 'GET', `/v1/broadcasts/${id}`)).json().status).toBe('canceled')
    expectError(await bearer(p, 'DELETE', `/v1/broadcasts/${id}`), 409, 'broadcast_not_cancelable')
    const now = (await send(p)).json().broadcast_id
    expectError(await bearer(p, 'DELETE', `/v1/broadcasts/${now}`), 409, 'broadcast_not_cancelable')
    expectError(await bearer(p, 'DELETE', '/v1/broadcasts/bdc_nope'), 404, 'broadcast_not_found')
  })
})

describe('decisions.md §4: the notification the browser gets', () => {
  it('GET /v1/notifications/:broadcast_id?project=: { v: 1, project_id, broadcast_id, title, body, url }, icon and image absent when none', async () => {
    const p = await newProject()
    const id = (await send(p, { notification: { url: '/x' } })).json().broadcast_id
    const res = await t.app.inject({ method: 'GET', url: `/v1/notifications/${id}?project=${p.id}` })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ v: 1, project_id: p.id, broadcast_id: id, title: 'Hello', body: 'World', url: '/x' })
  })

  it('a send without an icon carries the project\'s default icon', async () => {
    const p = await newProject()
    await t.app.inject({ method: 'PATCH', url: `/admin/v1/projects/${p.id}`, headers: admin, payload: { default_icon: 'https://cdn.example/default.png' } })
    const id = (await send(p)).json().broadcast_id
    const res = await t.app.inject({ method: 'GET', url: `/v1/notifications/${id}?project=${p.id}` })
    expect(res.json().icon).toBe('https://cdn.example/default.png')
    const own = (await send(p, { notification: { icon: 'https://cdn.example/own.png' } })).json().broadcast_id
    expect((await t.app.inject({ method: 'GET', url: `/v1/notifications/${own}?project=${p.id}` })).json().icon).toBe('https://cdn.example/own.png')
  })

  it('another project\'s broadcast is 404', async () => {
    const p = await newProject()
    const other = await newProject()
    const id = (await send(p)).json().broadcast_id
    expect((await t.app.inject({ method: 'GET', url: `/v1/notifications/${id}?project=${other.id}` })).statusCode).toBe(404)
    const missing = expectError(await t.app.inject({ method: 'GET', url: `/v1/notifications/${id}`, headers: { 'x-service-project': p.id } }), 400, 'missing_project')
    expect(missing.message).not.toMatch(/X-Service-Project/i)
  })
})

describe('decisions.md §3: webhooks', () => {
  it('POST /v1/webhooks { url }: 201 { id, url, events (default all four), secret whsec_ }', async () => {
    const p = await newProject()
    const res = await bearer(p, 'POST', '/v1/webhooks', { url: 'https://hooks.example/herald' })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toEqual({
      id: expect.any(String),
      url: 'https://hooks.example/herald',
      events: ['delivered', 'failed', 'clicked', 'dismissed'],
      secret: expect.stringMatching(/^whsec_/),
    })
  })

  it('POST /v1/webhooks { url, events }: the chosen events; an unknown event is 400', async () => {
    const p = await newProject()
    const res = await bearer(p, 'POST', '/v1/webhooks', { url: 'https://hooks.example/a', events: ['clicked'] })
    expect(res.json().events).toEqual(['clicked'])
    expectInvalid(await bearer(p, 'POST', '/v1/webhooks', { url: 'https://hooks.example/a', events: ['opened'] }))
  })

  it('issue 25: shown is opt-in: not in the default events, accepted when listed', async () => {
    const p = await newProject()
    expect((await bearer(p, 'POST', '/v1/webhooks', { url: 'https://hooks.example/a' })).json().events).not.toContain('shown')
    const res = await bearer(p, 'POST', '/v1/webhooks', { url: 'https://hooks.example/a', events: ['clicked', 'shown'] })
    expect(res.statusCode).toBe(201)
    expect(res.json().events).toEqual(['clicked', 'shown'])
  })

  it('GET /v1/webhooks lists them without the secret; DELETE /v1/webhooks/:id removes one', async () => {
    const a = await newProject()
    const b = await newProject()
    const created = (await bearer(a, 'POST', '/v1/webhooks', { url: 'https://hooks.example/b' })).json()
    const list = await bearer(a, 'GET', '/v1/webhooks')
    expect(list.statusCode).toBe(200)
    expect(list.json().webhooks).toEqual([expect.objectContaining({ id: created.id, url: 'https://hooks.example/b', events: created.events })])
    expect(list.body).not.toContain(created.secret)
    expect((await bearer(b, 'GET', '/v1/webhooks')).json().webhooks).toEqual([])
    expect((await bearer(b, 'DELETE', `/v1/webhooks/${created.id}`)).statusCode).toBe(404)
    const res = await bearer(a, 'DELETE', `/v1/webhooks/${created.id}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect((await bearer(a, 'GET', '/v1/webhooks')).json().webhooks).toEqual([])
  })

  it('webhook URLs follow the URL rules of §5 (HTTPS, public address) by default', async () => {
    const created = (await strict.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: { name: 'W' } })).json()
    const auth = { authorization: `Bearer ${created.api_key}` }
    for (const url of ['http://hooks.example/x', 'https://127.0.0.1/x', 'https://10.0.0.1/x']) {
      const res = await strict.app.inject({ method: 'POST', url: '/v1/webhooks', headers: auth, payload: { url } })
      expect(res.statusCode, url).toBe(400)
      expect(res.json().error.code, url).toBe('invalid_request')
    }
  })
})

// ---------------------------------------------------------- decisions.md §6

describe('decisions.md §6: URLs the service serves', () => {
  it('GET /healthz 200; GET /readyz 200', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200)
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200)
  })

  it('GET /docs serves the API documentation', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs' })
    const final = res.statusCode === 302 ? await t.app.inject({ method: 'GET', url: res.headers.location as string }) : res
    expect(final.statusCode).toBe(200)
    expect(final.headers['content-type']).toMatch(/text\/html/)
  })

  it('GET /icons/<unknown> is a 404 with the error body', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/icons/${'0'.repeat(64)}.png` })
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toEqual(expect.any(String))
  })

  it('GET /sdk/herald.js and /sdk/sw.js serve the browser SDK and service worker, pointed at {base_url}', async () => {
    for (const [url, marker] of [['/sdk/herald.js', 'globalThis.Herald = Herald'], ['/sdk/sw.js', "addEventListener('push'"]]) {
      const res = await t.app.inject({ method: 'GET', url })
      expect(res.statusCode, url).toBe(200)
      expect(res.headers['content-type'], url).toBe('text/javascript; charset=utf-8')
      expect(res.headers['access-control-allow-origin'], url).toBe('*')
      expect(res.headers['cache-control'], url).toMatch(/max-age=\d+/)
      expect(res.headers.etag, url).toEqual(expect.any(String))
      expect(res.body, url).toContain(marker)
      expect(res.body, url).toContain(`'${t.ctx.config.publicUrl}'`)
      expect(res.body, url).not.toContain('__HERALD_BASE_URL__')
    }
  })
  it('GET /dashboard serves the dashboard: HTML under a strict CSP, revalidated, with every script and stylesheet it names', async () => {
    for (const url of ['/dashboard', '/dashboard/']) {
      const res = await t.app.inject({ method: 'GET', url })
      expect(res.statusCode, url).toBe(200)
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
      expect(res.headers['cache-control']).toBe('no-cache')
      const csp = String(res.headers['content-security-policy'])
      for (const directive of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"]) {
        expect(csp, directive).toContain(directive)
      }
      expect(csp).toMatch(/img-src 'self' https: data:/)
      expect(csp).not.toContain('unsafe')
      // No inline script: every <script> has a src on this origin.
      const scripts = [...res.body.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)]
      expect(scripts.length).toBeGreaterThan(0)
      for (const [, attrs, content] of scripts) {
        expect(attrs).toMatch(/src="\/dashboard\//)
        expect(content.trim()).toBe('')
      }
      for (const [, asset] of res.body.matchAll(/(?:src|href)="(\/dashboard\/[^"]+)"/g)) {
        const file = await t.app.inject({ method: 'GET', url: asset })
        expect(file.statusCode, asset).toBe(200)
        expect(file.headers['content-security-policy'], asset).toBe(res.headers['content-security-policy'])
      }
    }
    const app = await t.app.inject({ method: 'GET', url: '/dashboard/js/app.js' })
    expect(app.headers['content-type']).toBe('text/javascript; charset=utf-8')
    expect((await t.app.inject({ method: 'GET', url: '/dashboard/nope.js' })).statusCode).toBe(404)
  })
})

// ---------------------------------------------------------- OpenAPI

describe('GET /openapi.json documents every endpoint of the contract', () => {
  // Method, path and the statuses a client can get, from api.md §4/§7 and decisions.md §1-3.
  const AUTH = ['401', '429']
  const expected: [string, string, string[]][] = [
    ['get', '/v1/groups', ['200', ...AUTH]],
    ['post', '/v1/groups', ['201', '400', ...AUTH, '403', '409']],
    ['patch', '/v1/groups/{id}', ['200', '400', ...AUTH, '404', '409']],
    ['delete', '/v1/groups/{id}', ['200', ...AUTH, '404']],
    ['post', '/v1/groups/{id}/subscribers', ['200', '400', ...AUTH, '404']],
    ['delete', '/v1/groups/{id}/subscribers/{sid}', ['200', ...AUTH, '404']],
    ['post', '/v1/send', ['200', '202', '400', ...AUTH, '403', '404']],
    ['post', '/v1/subscribe', ['201', '400', '403', '404', '429']],
    ['post', '/v1/unsubscribe', ['200', '400', '404', '429']],
    ['post', '/v1/events', ['202']],
    ['get', '/v1/me', ['200', ...AUTH]],
    ['get', '/v1/vapid-public-key', ['200', '400', '404']],
    ['get', '/v1/subscribers', ['200', '400', ...AUTH]],
    ['get', '/v1/subscribers/{sid}', ['200', ...AUTH, '404']],
    ['delete', '/v1/subscribers/{sid}', ['200', ...AUTH, '404']],
    ['delete', '/v1/subscribers/by-endpoint', ['200', '400', ...AUTH]],
    ['delete', '/v1/subscribers/by-external-id/{external_id}', ['200', '400', ...AUTH]],
    ['get', '/v1/broadcasts', ['200', '400', ...AUTH]],
    ['get', '/v1/broadcasts/{id}', ['200', ...AUTH, '404']],
    ['delete', '/v1/broadcasts/{id}', ['200', ...AUTH, '404', '409']],
    ['post', '/v1/broadcasts/{id}/stop', ['200', ...AUTH, '404', '409']],
    ['post', '/admin/v1/projects', ['201', '400', '401']],
    ['get', '/admin/v1/projects', ['200', '400', '401']],
    ['get', '/admin/v1/projects/{id}', ['200', '401', '404']],
    ['patch', '/admin/v1/projects/{id}', ['200', '400', '401', '404']],
    ['post', '/admin/v1/projects/{id}/api-keys', ['201', '400', '401', '404']],
    ['delete', '/admin/v1/projects/{id}/api-keys/{key_id}', ['200', '401', '404']],
    ['get', '/healthz', ['200']],
    ['get', '/readyz', ['200', '503']],
    ['get', '/icons/{file}', ['200', '404']],
  ]
  // The webhook routes live in src/webhooks, another helper's files at the time this was written.
  const webhooks: [string, string, string[]][] = [
    ['post', '/v1/webhooks', ['201', '400', ...AUTH]],
    ['get', '/v1/webhooks', ['200', '400', ...AUTH]],
    ['delete', '/v1/webhooks/{id}', ['200', ...AUTH, '404']],
  ]

  let doc: { paths: Record<string, Record<string, { responses?: Record<string, unknown>; security?: unknown[] }>> }
  beforeAll(async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' })
    expect(res.statusCode).toBe(200)
    doc = res.json()
  })

  it.each(expected)('%s %s documents %j', (method, path, statuses) => {
    const op = doc.paths[path]?.[method]
    expect(op, `${method} ${path}`).toBeDefined()
    expect(Object.keys(op!.responses ?? {}).sort()).toEqual(expect.arrayContaining(statuses))
  })

  it.each(webhooks)('%s %s is present', (method, path) => {
    expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined()
  })

  it.each([
    ['post', '/v1/webhooks', ['201', '400', '401', '403', '429']],
    ['get', '/v1/webhooks', ['200', '400', '401', '429']],
    ['delete', '/v1/webhooks/{id}', ['200', '401', '404', '429']],
  ] as const)('%s %s documents its error statuses %j', (method, path, statuses) => {
    expect(Object.keys(doc.paths[path]?.[method]?.responses ?? {})).toEqual(expect.arrayContaining([...statuses]))
  })

  it('the broadcast view, single and listed, documents its progress fields (issue 11)', () => {
    type Schema = { properties: Record<string, { properties?: Record<string, unknown>; anyOf?: unknown[] }>; required: string[] }
    const content = (op: unknown) => (op as { responses: Record<string, { content: { 'application/json': { schema: unknown } } }> }).responses['200'].content['application/json'].schema
    const single = content(doc.paths['/v1/broadcasts/{id}'].get) as Schema
    const listed = (content(doc.paths['/v1/broadcasts'].get) as { properties: { broadcasts: { items: Schema } } }).properties.broadcasts.items
    for (const schema of [single, listed]) {
      expect(schema.required).toEqual(expect.arrayContaining(['pending', 'retrying', 'failures', 'by_push_service', 'last_error', 'next_attempt_at']))
      // skipped (templates) and capped (frequency caps), issue 24, and vapid_key_mismatch, issue 23: added after the three reasons there were.
      expect(Object.keys(schema.properties.failures.properties!)).toEqual(['gone', 'rejected', 'unreachable', 'skipped', 'capped', 'vapid_key_mismatch'])
      expect(Object.keys(schema.properties.by_push_service.properties!)).toEqual(['fcm', 'mozilla', 'apple', 'wns', 'other'])
      // issue 25: shown and the funnel, on the single and the listed view.
      expect(schema.required).toEqual(expect.arrayContaining(['shown', 'funnel']))
      expect(Object.keys(schema.properties.funnel.properties!)).toEqual(['audience', 'sent', 'delivered', 'cannot_report_shown', 'shown', 'clicked', 'clicked_by_action', 'dismissed', 'rates'])
      expect(Object.keys((schema.properties.funnel.properties!.rates as { properties: object }).properties)).toEqual(['delivered', 'shown', 'click_through', 'click_through_shown'])
    }
  })

  it('subscribe and unsubscribe document the X-Service-Project header beside ?project=', () => {
    for (const path of ['/v1/subscribe', '/v1/unsubscribe']) {
      const params = (doc.paths[path]!.post as { parameters?: { in: string; name: string }[] }).parameters ?? []
      // ?project= is a query parameter (the `project` security scheme stays in components, unused: decisions.md).
      expect(params, path).toEqual(expect.arrayContaining([expect.objectContaining({ in: 'header', name: 'x-service-project' })]))
    }
    const schemes = (doc as unknown as { components: { securitySchemes: Record<string, unknown> } }).components.securitySchemes
    expect(schemes.project).toMatchObject({ type: 'apiKey', in: 'query', name: 'project' })
  })

  it('bearer routes declare apiKey (or session) security; browser routes are public (the project id is no credential)', () => {
    for (const [method, path] of expected) {
      const op = doc.paths[path]![method]!
      if (path.startsWith('/admin/')) expect(op.security, path).toEqual([{ adminToken: [] }])
      else if (['/v1/subscribe', '/v1/unsubscribe', '/v1/events', '/v1/vapid-public-key'].includes(path)) expect(op.security, path).toEqual([])
      else if (path.startsWith('/v1/')) expect(op.security, path).toEqual([{ apiKey: [] }, { session: [] }])
    }
  })
})
