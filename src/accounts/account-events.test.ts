// Account events in the audit log (issue 22, review notes): sign-ins (and a
// failed one for a known account), sign-outs, password changes and resets are
// recorded in every project the account is a member of, and in no other; an
// unknown email records nothing. Session answers carrying the CSRF token are
// never cached (Cache-Control: no-store).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { MemoryRateLimiter } from '../platform/http/rate-limit.ts'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { addMember, signIn, PASSWORD } from '../../test/support/members.ts'

const IP = '203.0.113.9'
const UA = 'account-events-test/1.0'
let t: TestApp
let shop: TestProject
let blog: TestProject
let other: TestProject
let annId: string

beforeAll(async () => {
  // The requests below speak for a proxy at 127.0.0.1 that forwards the client's address.
  t = await createTestApp({ HERALD_TRUST_PROXY: '127.0.0.1' })
  shop = await t.project({ name: 'Shop' })
  blog = await t.project({ name: 'Blog' })
  other = await t.project({ name: 'Other' })
  annId = await addMember(t, shop.id, 'ann@example.com', 'owner')
  await addMember(t, blog.id, 'ann@example.com', 'viewer')
  await addMember(t, other.id, 'zed@example.com', 'owner')
})
afterAll(async () => {
  await t.close()
})
beforeEach(() => {
  t.ctx.rateLimiter = new MemoryRateLimiter()
})

let seen = ''
/** Entries about accounts written since the last call, as [project, action, actor_type, actor_id, target_id, details]. */
async function newEntries() {
  const rows = (await t.ctx.db.query<{ id: string; project_id: string; action: string; actor_type: string; actor_id: string | null; target_id: string; details: Record<string, unknown>; ip: string | null; user_agent: string | null }>(
    "SELECT * FROM audit_log WHERE id > $1 AND (action LIKE 'session.%' OR action LIKE 'account.%') ORDER BY project_id, id",
    [seen],
  )).rows
  const all = (await t.ctx.db.query<{ id: string }>('SELECT max(id) AS id FROM audit_log')).rows[0]
  seen = all.id ?? ''
  return rows
}

const headers = { 'x-forwarded-for': IP, 'user-agent': UA }
const both = (action: string, details: Record<string, unknown> = {}, actor: { actor_type: string; actor_id: string | null } = { actor_type: 'user', actor_id: annId }) =>
  [shop.id, blog.id].map((project_id) => ({ project_id, action, target_id: annId, ip: IP, user_agent: UA, details, ...actor })).sort((a, b) => a.project_id.localeCompare(b.project_id))

describe('what is recorded, and where', () => {
  it('a sign-in, in each project of the account and in no other', async () => {
    await newEntries()
    await signIn(t, 'ann@example.com', PASSWORD, {}, IP)
    const rows = await newEntries()
    // signIn sends its own user agent: compare the rest.
    expect(rows.map(({ project_id, action, actor_type, actor_id, target_id, ip }) => ({ project_id, action, actor_type, actor_id, target_id, ip }))).toEqual(
      both('session.sign_in').map(({ project_id, action, actor_type, actor_id, target_id, ip }) => ({ project_id, action, actor_type, actor_id, target_id, ip })),
    )
  })

  it('a wrong password for a known account is recorded; an unknown email records nothing', async () => {
    await newEntries()
    const wrong = await t.app.inject({ method: 'POST', url: '/v1/session', headers, payload: { email: 'ann@example.com', password: 'not the password' } })
    expect(wrong.statusCode).toBe(401)
    expect(await newEntries()).toMatchObject(both('session.sign_in_failed'))
    const unknown = await t.app.inject({ method: 'POST', url: '/v1/session', headers, payload: { email: 'nobody@example.com', password: 'not the password' } })
    expect(unknown.statusCode).toBe(401)
    expect(await newEntries()).toEqual([])
  })

  it('signing out, and signing out everywhere', async () => {
    const a = await signIn(t, 'ann@example.com')
    const b = await signIn(t, 'ann@example.com')
    await newEntries()
    expect((await t.app.inject({ method: 'DELETE', url: '/v1/session', headers: { ...a.headers, ...headers } })).statusCode).toBe(200)
    expect(await newEntries()).toMatchObject(both('session.sign_out'))
    expect((await t.app.inject({ method: 'DELETE', url: '/v1/sessions', headers: { ...b.headers, ...headers } })).statusCode).toBe(200)
    expect(await newEntries()).toMatchObject(both('session.sign_out_everywhere', { sessions_ended: expect.any(Number) }))
  })

  it('a password change (with how many other sessions it ended), never the password', async () => {
    const s = await signIn(t, 'ann@example.com')
    await signIn(t, 'ann@example.com')
    await newEntries()
    const res = await t.app.inject({ method: 'POST', url: '/v1/session/password', headers: { ...s.headers, ...headers }, payload: { current_password: PASSWORD, new_password: 'changed passphrase one' } })
    expect(res.statusCode).toBe(200)
    const rows = await newEntries()
    expect(rows).toMatchObject(both('account.password_change', { other_sessions_ended: 1 }))
    expect(JSON.stringify(rows)).not.toContain('changed passphrase one')
  })

  it('a reset link made by the operator (actor operator) and its use (the account, with the sessions it ended)', async () => {
    await signIn(t, 'ann@example.com', 'changed passphrase one')
    await newEntries()
    const made = await t.app.inject({ method: 'POST', url: '/admin/v1/users/password-reset', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...headers }, payload: { email: 'ann@example.com' } })
    expect(made.statusCode).toBe(201)
    const token = made.json().reset_url.split('/').pop()
    const linkRows = await newEntries()
    expect(linkRows).toMatchObject(both('account.password_reset_link', { expires_at: made.json().expires_at }, { actor_type: 'operator', actor_id: null }))
    expect(JSON.stringify(linkRows)).not.toContain(token)
    expect((await t.app.inject({ method: 'POST', url: '/v1/password-reset', headers, payload: { token, password: PASSWORD } })).statusCode).toBe(200)
    const used = await newEntries()
    expect(used).toHaveLength(2)
    expect(used).toMatchObject(both('account.password_reset', {}, { actor_type: 'user', actor_id: annId }))
    expect(used[0].details.sessions_ended).toBeGreaterThanOrEqual(1)
  })

  it('owners read them through GET /v1/audit-log', async () => {
    const s = await signIn(t, 'ann@example.com')
    const res = await t.app.inject({ method: 'GET', url: '/v1/audit-log?action=session.', headers: s.cookie })
    expect(res.statusCode).toBe(200)
    expect(res.json().entries[0]).toMatchObject({ action: 'session.sign_in', actor: { type: 'user', id: annId, label: 'ann@example.com' } })
  })
})

describe('Cache-Control: no-store on answers that carry the CSRF token', () => {
  it('POST, GET and PATCH /v1/session', async () => {
    const s = await signIn(t, 'ann@example.com')
    expect(s.res.headers['cache-control']).toBe('no-store')
    const got = await t.app.inject({ method: 'GET', url: '/v1/session', headers: s.cookie })
    expect(got.json().csrf_token).toBe(s.csrf)
    expect(got.headers['cache-control']).toBe('no-store')
    const patched = await t.app.inject({ method: 'PATCH', url: '/v1/session', headers: s.headers, payload: { project: blog.id } })
    expect(patched.json().csrf_token).toBe(s.csrf)
    expect(patched.headers['cache-control']).toBe('no-store')
  })
})
