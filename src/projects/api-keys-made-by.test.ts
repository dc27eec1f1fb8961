// Who made an API key (issue 22, review notes): each key records its maker
// (a member, a key or the operator) and the views show it; removing a member
// keeps the keys they made working (they belong to the project's
// integrations), and the removal's answer and audit entry list those keys so
// an owner can revoke them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { addMember, signIn, type SignedIn } from '../../test/support/members.ts'

let t: TestApp
let p: TestProject
let q: TestProject
let owner: SignedIn
let ownerId: string

beforeAll(async () => {
  t = await createTestApp()
  p = await t.project({ name: 'Shop', plan: 'plus' })
  q = await t.project({ name: 'Blog', plan: 'plus' })
  ownerId = await addMember(t, p.id, 'olga@example.com', 'owner')
  owner = await signIn(t, 'olga@example.com')
})
afterAll(async () => {
  await t.close()
})

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
const makeKey = (headers: Record<string, string>, name: string) => t.app.inject({ method: 'POST', url: '/v1/api-keys', headers, payload: { name } })

describe('created_by', () => {
  it('a member, a full key and the operator each show as the maker, in the create answer and the lists', async () => {
    const bySession = (await makeKey(owner.headers, 'by olga')).json()
    expect(bySession.created_by).toEqual({ type: 'user', id: ownerId, email: 'olga@example.com' })
    const byKey = (await makeKey(p.auth, 'by key')).json()
    expect(byKey.created_by).toEqual({ type: 'key', id: p.apiKeyId, email: null })
    const byOperator = (await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${p.id}/api-keys`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { name: 'by operator' } })).json()
    expect(byOperator.created_by).toEqual({ type: 'operator', id: null, email: null })

    const listed = (await t.app.inject({ method: 'GET', url: '/v1/api-keys', headers: owner.cookie })).json().api_keys
    const makers = Object.fromEntries(listed.map((k: { name: string; created_by: unknown }) => [k.name, k.created_by]))
    expect(makers).toEqual({
      default: { type: 'operator', id: null, email: null },
      'by olga': bySession.created_by,
      'by key': byKey.created_by,
      'by operator': byOperator.created_by,
    })
  })

  it('a key made before Herald recorded its maker shows created_by null', async () => {
    const made = (await makeKey(p.auth, 'old key')).json()
    await t.ctx.db.query('UPDATE api_keys SET created_by_type = NULL, created_by_id = NULL WHERE id = $1', [made.id])
    const listed = (await t.app.inject({ method: 'GET', url: '/v1/api-keys', headers: p.auth })).json().api_keys
    expect(listed.find((k: { id: string }) => k.id === made.id).created_by).toBeNull()
  })

  it('is in the OpenAPI document of the key views', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    const schema = doc.paths['/v1/api-keys'].get.responses['200'].content['application/json'].schema
    const item = schema.properties.api_keys.items
    const resolved = item.$ref ? doc.components.schemas[item.$ref.split('/').pop()] : item
    expect(Object.keys(resolved.properties)).toContain('created_by')
    expect(resolved.required).toContain('created_by')
  })
})

describe('removing a member who made keys', () => {
  it('keeps their keys working and lists the active ones in the answer and the audit entry; revoked and other members\' keys are not listed', async () => {
    const adaId = await addMember(t, p.id, 'ada@example.com', 'admin')
    await addMember(t, q.id, 'ada@example.com', 'admin')
    const ada = await signIn(t, 'ada@example.com', undefined, { project: p.id })
    const kept = (await makeKey(ada.headers, 'ada deploy')).json()
    const revoked = (await makeKey(ada.headers, 'ada old')).json()
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/api-keys/${revoked.id}`, headers: ada.headers })).statusCode).toBe(200)
    // Her key in another project is that project's business.
    const elsewhere = (await makeKey({ ...ada.headers, 'x-herald-project': q.id }, 'ada blog')).json()
    expect(elsewhere.created_by.id).toBe(adaId)

    const res = await t.app.inject({ method: 'DELETE', url: `/v1/members/${adaId}`, headers: owner.headers })
    expect(res.statusCode).toBe(200)
    // The key's view as lists show it: never the key itself.
    const { api_key: secret, ...keptView } = kept
    expect(res.json()).toEqual({ ok: true, active_api_keys: [keptView] })
    expect(res.body).not.toContain(secret)

    const entry = (await t.ctx.db.query<{ details: Record<string, unknown> }>("SELECT details FROM audit_log WHERE project_id = $1 AND action = 'member.remove' AND target_id = $2", [p.id, adaId])).rows[0]
    expect(entry.details).toEqual({ email: 'ada@example.com', role: 'admin', invites_revoked: 0, active_api_keys: [kept.id] })

    // The key keeps working, and the list still says who made it.
    expect((await t.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(kept.api_key) })).statusCode).toBe(200)
    const listed = (await t.app.inject({ method: 'GET', url: '/v1/api-keys', headers: owner.cookie })).json().api_keys
    expect(listed.find((k: { id: string }) => k.id === kept.id).created_by).toEqual({ type: 'user', id: adaId, email: 'ada@example.com' })
  })

  it('a member who made no key: the answer lists none', async () => {
    const vic = await addMember(t, p.id, 'vic@example.com', 'viewer')
    const res = await t.app.inject({ method: 'DELETE', url: `/v1/members/${vic}`, headers: owner.headers })
    expect(res.json()).toEqual({ ok: true, active_api_keys: [] })
  })
})
