// /v1/api-keys (issue 13): owners and admins manage the project's keys from
// the dashboard (a session) or a script (a full-scope key). The secret is in
// the create answer only; lists show a short prefix; revocation is immediate;
// another project's key ids are 404; last_used_at is written at most once a
// minute. Which roles and scopes reach these routes is test/roles.test.ts's
// matrix; the sweep over every route is test/security.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { addMember, signIn, type SignedIn } from '../../test/support/members.ts'
import { newId } from '../platform/ids.ts'
import { lookupPrefix } from './api-keys.ts'

let t: TestApp
let a: TestProject
let b: TestProject
let owner: SignedIn
let olgaId: string

beforeAll(async () => {
  t = await createTestApp()
  a = await t.project({ name: 'Shop A', plan: 'plus' })
  b = await t.project({ name: 'Blog B', plan: 'plus' })
  olgaId = await addMember(t, a.id, 'olga@example.com', 'owner')
  owner = await signIn(t, 'olga@example.com', undefined, { project: a.id })
})
afterAll(async () => {
  await t.close()
})

const keys = (headers: Record<string, string>) => t.app.inject({ method: 'GET', url: '/v1/api-keys', headers })
const create = (headers: Record<string, string>, payload?: object) => t.app.inject({ method: 'POST', url: '/v1/api-keys', headers, payload })
const revoke = (headers: Record<string, string>, id: string) => t.app.inject({ method: 'DELETE', url: `/v1/api-keys/${id}`, headers })
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
const countKeys = async (projectId: string) =>
  (await t.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1', [projectId])).rows[0].n

describe('/v1/api-keys with an owner\'s session', () => {
  it('creates a key (201), shown once; it works at once, within its scope', async () => {
    const res = await create(owner.headers, { name: 'Newsletter sender', scope: 'send' })
    expect(res.statusCode).toBe(201)
    const key = res.json()
    expect(key).toEqual({
      id: expect.stringMatching(/^key_[0-9a-z]{26}$/),
      name: 'Newsletter sender',
      prefix: key.api_key.slice(0, 14),
      scope: 'send',
      created_at: expect.any(Number),
      last_used_at: null,
      created_by: { type: 'user', id: olgaId, email: 'olga@example.com' },
      api_key: expect.stringMatching(/^hk_live_[0-9A-Za-z]{32}$/),
    })
    const send = await t.app.inject({ method: 'POST', url: '/v1/send', headers: bearer(key.api_key), payload: { target: { type: 'all' }, notification: { title: 'Hi', body: 'There' } } })
    expect(send.statusCode).toBe(202)
    expect((await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${send.json().broadcast_id}`, headers: bearer(key.api_key) })).statusCode).toBe(200)
    for (const url of ['/v1/groups', '/v1/subscribers', '/v1/webhooks', '/v1/api-keys']) {
      const refused = await t.app.inject({ method: 'GET', url, headers: bearer(key.api_key) })
      expect(refused.statusCode, url).toBe(403)
      expect(refused.json(), url).toEqual({ error: { code: 'insufficient_scope', message: expect.any(String) } })
    }
  })

  it('lists the keys that work, oldest first, never the key, its hash or its whole lookup prefix', async () => {
    const made = (await create(owner.headers, { name: 'Listed' })).json()
    const res = await keys(owner.cookie)
    expect(res.statusCode).toBe(200)
    const listed = res.json().api_keys
    expect(listed[0]).toEqual({ id: a.apiKeyId, name: 'default', prefix: a.apiKey.slice(0, 14), scope: 'full', created_at: expect.any(Number), last_used_at: null, created_by: { type: 'operator', id: null, email: null } })
    expect(listed.at(-1)).toEqual({ id: made.id, name: 'Listed', prefix: made.prefix, scope: 'full', created_at: made.created_at, last_used_at: null, created_by: { type: 'user', id: olgaId, email: 'olga@example.com' } })
    const hashes = (await t.ctx.db.query<{ hash: string }>('SELECT hash FROM api_keys WHERE project_id = $1', [a.id])).rows.map((row) => row.hash)
    for (const secret of [made.api_key, a.apiKey, lookupPrefix(made.api_key)!, lookupPrefix(a.apiKey)!, ...hashes]) expect(res.body).not.toContain(secret)
    expect(res.body).not.toContain('hash')
  })

  it('revokes a key: its next request is 401, and it leaves the list', async () => {
    const made = (await create(owner.headers, { name: 'Short-lived' })).json()
    expect((await t.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(made.api_key) })).statusCode).toBe(200)
    const res = await revoke(owner.headers, made.id)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    const after = await t.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(made.api_key) })
    expect(after.statusCode).toBe(401)
    expect(after.json().error.code).toBe('invalid_api_key')
    expect((await keys(owner.cookie)).json().api_keys.map((k: { id: string }) => k.id)).not.toContain(made.id)
    // Revoking again answers as the first time: the key is revoked either way.
    expect((await revoke(owner.headers, made.id)).statusCode).toBe(200)
  })

  it('a bare POST makes an unnamed full key; a bad body is 400 with issues and creates nothing', async () => {
    const bare = await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: owner.headers })
    expect(bare.statusCode).toBe(201)
    expect(bare.json()).toMatchObject({ name: null, scope: 'full' })
    const before = await countKeys(a.id)
    for (const payload of [{ scope: 'admin' }, { scope: null }, { name: '' }, { name: 'k'.repeat(129) }, { name: 'x', extra: 1 }]) {
      const res = await create(owner.headers, payload)
      expect(res.statusCode, JSON.stringify(payload)).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
      expect(res.json().error.issues.length).toBeGreaterThan(0)
    }
    expect(await countKeys(a.id)).toBe(before)
  })

  it('a session without its CSRF token creates and revokes nothing', async () => {
    const before = await countKeys(a.id)
    const res = await create(owner.cookie, { name: 'forged' })
    expect(res.statusCode).toBe(403)
    expect(res.json().error.code).toBe('csrf_token_invalid')
    const del = await revoke(owner.cookie, a.apiKeyId)
    expect(del.statusCode).toBe(403)
    expect(await countKeys(a.id)).toBe(before)
    expect((await t.app.inject({ method: 'GET', url: '/v1/me', headers: a.auth })).statusCode).toBe(200)
  })
})

describe('who may manage keys', () => {
  it('an admin may; an editor and a viewer get 403 insufficient_role', async () => {
    await addMember(t, a.id, 'adam@example.com', 'admin')
    await addMember(t, a.id, 'eddie@example.com', 'editor')
    const admin = await signIn(t, 'adam@example.com', undefined, { project: a.id })
    const editor = await signIn(t, 'eddie@example.com', undefined, { project: a.id })
    expect((await keys(admin.cookie)).statusCode).toBe(200)
    const made = await create(admin.headers, { name: 'by admin' })
    expect(made.statusCode).toBe(201)
    for (const res of [await keys(editor.cookie), await create(editor.headers, {}), await revoke(editor.headers, made.json().id)]) {
      expect(res.statusCode).toBe(403)
      expect(res.json().error.code).toBe('insufficient_role')
    }
    expect((await t.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(made.json().api_key) })).statusCode).toBe(200)
  })

  it('a full key may manage keys, and may revoke itself: that answer is 200, the next request 401', async () => {
    const own = (await create(owner.headers, { name: 'rotating' })).json()
    const spare = (await create(bearer(own.api_key), { name: 'made by a key', scope: 'groups' })).json()
    expect(spare.scope).toBe('groups')
    const res = await revoke(bearer(own.api_key), own.id)
    expect(res.statusCode).toBe(200)
    expect((await keys(bearer(own.api_key))).statusCode).toBe(401)
    expect((await t.app.inject({ method: 'GET', url: '/v1/groups', headers: bearer(spare.api_key) })).statusCode).toBe(200)
  })
})

describe('another project\'s keys', () => {
  it('are 404 api_key_not_found, like an unknown id, and keep working; B\'s list never shows A\'s', async () => {
    for (const id of [a.apiKeyId, newId('key'), 'not-a-key-id']) {
      const res = await revoke(b.auth, id)
      expect(res.statusCode, id).toBe(404)
      expect(res.json(), id).toEqual({ error: { code: 'api_key_not_found', message: expect.any(String) } })
    }
    // A's owner on B's key, by id: the same 404, and B's key is untouched.
    expect((await revoke(owner.headers, b.apiKeyId)).json().error.code).toBe('api_key_not_found')
    expect((await t.app.inject({ method: 'GET', url: '/v1/me', headers: a.auth })).statusCode).toBe(200)
    expect((await t.app.inject({ method: 'GET', url: '/v1/me', headers: b.auth })).statusCode).toBe(200)
    const list = await keys(b.auth)
    expect(list.json().api_keys.map((k: { id: string }) => k.id)).toEqual([b.apiKeyId])
    const aIds = (await t.ctx.db.query<{ id: string }>('SELECT id FROM api_keys WHERE project_id = $1', [a.id])).rows.map((row) => row.id)
    for (const id of aIds) expect(list.body).not.toContain(id)
  })
})

describe('scope on the operator\'s POST /admin/v1/projects/:id/api-keys', () => {
  const operator = { authorization: `Bearer ${ADMIN_TOKEN}` }

  it('creates a key with a scope, lists it, and the key is refused outside it (403 insufficient_scope)', async () => {
    const created = await t.project({ name: 'Scoped' })
    const url = `/admin/v1/projects/${created.id}/api-keys`
    const add = await t.app.inject({ method: 'POST', url, headers: operator, payload: { name: 'sender', scope: 'send' } })
    expect(add.statusCode).toBe(201)
    expect(add.json()).toMatchObject({ name: 'sender', scope: 'send' })
    const auth = { authorization: `Bearer ${add.json().api_key}` }
    const list = (await t.app.inject({ method: 'GET', url, headers: operator })).json()
    expect(list.api_keys.map((k: { name: string; scope: string }) => [k.name, k.scope])).toEqual([['default', 'full'], ['sender', 'send']])
    expect((await t.app.inject({ method: 'GET', url: '/v1/broadcasts', headers: auth })).statusCode).toBe(200)
    const groups = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: auth, payload: { name: 'Not mine' } })
    expect(groups.statusCode).toBe(403)
    expect(groups.json()).toEqual({ error: { code: 'insufficient_scope', message: expect.any(String) } })
    expect((await t.ctx.db.query('SELECT id FROM groups WHERE project_id = $1', [created.id])).rows).toEqual([])
  })

  it('refuses an unknown scope with 400 invalid_request naming the field, creating no key', async () => {
    const created = await t.project()
    for (const scope of ['admin', 'FULL', '', null, 1]) {
      const res = await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${created.id}/api-keys`, headers: operator, payload: { scope } })
      expect(res.statusCode, String(scope)).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
      expect(res.json().error.issues[0].path).toBe('scope')
    }
    const list = (await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${created.id}/api-keys`, headers: operator })).json()
    expect(list.api_keys).toHaveLength(1)
  })

})

describe('last_used_at', () => {
  const lastUsed = async (id: string) =>
    (await t.ctx.db.query<{ last_used_at: Date | null }>('SELECT last_used_at FROM api_keys WHERE id = $1', [id])).rows[0].last_used_at
  const setLastUsed = (id: string, secondsAgo: number) =>
    t.ctx.db.query(`UPDATE api_keys SET last_used_at = now() - $2::int * interval '1 second' WHERE id = $1`, [id, secondsAgo])

  it('is set by the first request, then written at most once a minute', async () => {
    const made = (await create(owner.headers, { name: 'tracked' })).json()
    expect(await lastUsed(made.id)).toBeNull()
    // A request that fails (here a 404) is still a use of the key: it shows the key is deployed somewhere.
    await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${newId('bdc')}`, headers: bearer(made.api_key) })
    expect(await lastUsed(made.id)).toBeInstanceOf(Date)

    await setLastUsed(made.id, 30)
    const thirtySecondsAgo = (await lastUsed(made.id))!.getTime()
    await t.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(made.api_key) })
    expect((await lastUsed(made.id))!.getTime()).toBe(thirtySecondsAgo)

    await setLastUsed(made.id, 120)
    const before = (await lastUsed(made.id))!.getTime()
    await t.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(made.api_key) })
    const after = (await lastUsed(made.id))!.getTime()
    expect(after - before).toBeGreaterThan(100_000)
    const listed = (await keys(owner.cookie)).json().api_keys.find((k: { id: string }) => k.id === made.id)
    expect(listed.last_used_at).toBe(after)
  })

  it('a wrong key with a real prefix is not a use', async () => {
    const made = (await create(owner.headers, { name: 'untouched' })).json()
    const wrong = made.api_key.slice(0, -1) + (made.api_key.endsWith('A') ? 'B' : 'A')
    expect((await t.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(wrong) })).statusCode).toBe(401)
    expect(await lastUsed(made.id)).toBeNull()
  })
})
