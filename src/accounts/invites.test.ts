// Invites and members (issue 13): the operator's first owner, links valid 72
// hours and once, stored hashed; an existing account accepts signed in;
// owners invite, change roles, remove; the last owner stays.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { addMember, signIn, tokenOf, PASSWORD, type SignedIn } from '../../test/support/members.ts'
import { MemoryRateLimiter } from '../platform/http/rate-limit.ts'
import { hashToken } from './tokens.ts'

let t: TestApp
let p: TestProject
let owner: SignedIn
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
const HOUR = 3_600_000

beforeAll(async () => {
  t = await createTestApp()
  p = await t.project({ name: 'Shop' })
})
afterAll(async () => {
  await t.close()
})
beforeEach(() => {
  t.ctx.rateLimiter = new MemoryRateLimiter()
})
afterEach(() => {
  vi.useRealTimers()
})

const inspect = (token: string) => t.app.inject({ method: 'POST', url: '/v1/invites/inspect', payload: { token } })
const accept = (token: string, password = PASSWORD) => t.app.inject({ method: 'POST', url: '/v1/invites/accept', payload: { token, password } })
const operatorInvite = (email: string, role = 'owner', project = p.id) =>
  t.app.inject({ method: 'POST', url: `/admin/v1/projects/${project}/members`, headers: admin, payload: { email, role } })

describe('the operator makes the first owner', () => {
  it('POST /admin/v1/projects/:id/members answers a link; accepting it sets the password; the owner signs in', async () => {
    const res = await operatorInvite('olga@example.com')
    expect(res.statusCode).toBe(201)
    const invite = res.json()
    expect(invite).toMatchObject({ email: 'olga@example.com', role: 'owner', project_id: p.id, invite_url: expect.stringMatching(/^http:\/\/localhost:3000\/dashboard\/#\/invite\/[A-Za-z0-9_-]{43}$/) })
    const token = tokenOf(invite.invite_url)
    expect((await inspect(token)).json()).toEqual({ email: 'olga@example.com', project: { id: p.id, name: 'Shop' }, role: 'owner', expires_at: invite.expires_at })
    expect((await accept(token)).json()).toEqual({ ok: true, user_id: invite.user_id, email: 'olga@example.com', project_id: p.id, role: 'owner' })
    owner = await signIn(t, 'olga@example.com')
    expect(owner.body.project).toMatchObject({ id: p.id, role: 'owner' })
  })

  it('an unknown project is 404; a bad role or email is 400', async () => {
    expect((await operatorInvite('x@example.com', 'owner', 'prj_nope')).statusCode).toBe(404)
    expect((await operatorInvite('x@example.com', 'god')).statusCode).toBe(400)
    expect((await operatorInvite('not an email')).statusCode).toBe(400)
  })

  it('stores the token only as its hash', async () => {
    const token = tokenOf((await operatorInvite('hash@example.com', 'viewer')).json().invite_url)
    const rows = (await t.ctx.db.query('SELECT * FROM invites')).rows
    expect(JSON.stringify(rows)).not.toContain(token)
    expect(rows.map((r) => r.token_hash)).toContain(hashToken(token))
  })
})

describe('an invite link', () => {
  it('works once: a second acceptance is 404 invite_not_found', async () => {
    const token = tokenOf((await operatorInvite('once@example.com', 'viewer')).json().invite_url)
    expect((await accept(token)).statusCode).toBe(200)
    const again = await accept(token, 'another password 1')
    expect(again.statusCode).toBe(404)
    expect(again.json().error.code).toBe('invite_not_found')
    expect((await inspect(token)).statusCode).toBe(404)
    // The first password stands.
    await signIn(t, 'once@example.com')
  })

  it('works for 72 hours and not after', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const early = tokenOf((await operatorInvite('early@example.com', 'viewer')).json().invite_url)
    const late = tokenOf((await operatorInvite('late@example.com', 'viewer')).json().invite_url)
    vi.setSystemTime(Date.now() + 72 * HOUR - 60_000)
    expect((await accept(early)).statusCode).toBe(200)
    vi.setSystemTime(Date.now() + 2 * 60_000)
    const res = await accept(late)
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toBe('invite_not_found')
  })

  it('refuses a password under 10 characters, and a garbage token', async () => {
    const token = tokenOf((await operatorInvite('short@example.com', 'viewer')).json().invite_url)
    expect((await accept(token, 'short')).statusCode).toBe(400)
    expect((await accept('garbage')).statusCode).toBe(404)
    expect((await accept(token)).statusCode).toBe(200)
  })

  it('for an email that has a password already: accepting takes no password (409 invite_sign_in_required), only the signed-in account', async () => {
    const other = await t.project({ name: 'Blog' })
    const token = tokenOf((await operatorInvite('olga@example.com', 'editor', other.id)).json().invite_url)
    expect((await inspect(token)).json()).not.toHaveProperty('password_set')
    for (const password of ['taking over this account', PASSWORD]) {
      const res = await accept(token, password)
      expect(res.statusCode).toBe(409)
      expect(res.json().error.code).toBe('invite_sign_in_required')
    }
    const s = await signIn(t, 'olga@example.com')
    const joined = await t.app.inject({ method: 'POST', url: '/v1/invites/accept', headers: s.headers, payload: { token } })
    expect(joined.json()).toEqual({ ok: true, user_id: s.body.user.id, email: 'olga@example.com', project_id: other.id, role: 'editor' })
    expect((await signIn(t, 'olga@example.com')).body.projects.map((x: { id: string }) => x.id)).toEqual([p.id, other.id])
  })
})

describe('owners manage members', () => {
  let vera: string
  it('invite from the dashboard → a link; the invitee joins with that role', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/members/invites', headers: owner.headers, payload: { email: 'Vera@Example.com', role: 'viewer' } })
    expect(res.statusCode).toBe(201)
    expect((await accept(tokenOf(res.json().invite_url))).statusCode).toBe(200)
    const s = await signIn(t, 'vera@example.com')
    expect(s.body.project).toMatchObject({ id: p.id, role: 'viewer' })
    vera = s.body.user.id
    const again = await t.app.inject({ method: 'POST', url: '/v1/members/invites', headers: owner.headers, payload: { email: 'vera@example.com', role: 'admin' } })
    expect(again.statusCode).toBe(409)
    expect(again.json().error.code).toBe('member_exists')
  })

  it('lists members and open invites; an invite can be revoked', async () => {
    const open = (await t.app.inject({ method: 'POST', url: '/v1/members/invites', headers: owner.headers, payload: { email: 'pending@example.com', role: 'editor' } })).json()
    const list = (await t.app.inject({ method: 'GET', url: '/v1/members', headers: owner.cookie })).json()
    expect(list.members).toContainEqual(expect.objectContaining({ email: 'vera@example.com', role: 'viewer' }))
    expect(list.invites).toContainEqual(expect.objectContaining({ id: open.id, email: 'pending@example.com', role: 'editor' }))
    expect(JSON.stringify(list)).not.toContain(tokenOf(open.invite_url))
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/members/invites/${open.id}`, headers: owner.headers })).statusCode).toBe(200)
    expect((await accept(tokenOf(open.invite_url))).statusCode).toBe(404)
  })

  it('changes a role and removes a member', async () => {
    const changed = await t.app.inject({ method: 'PATCH', url: `/v1/members/${vera}`, headers: owner.headers, payload: { role: 'editor' } })
    expect(changed.json()).toMatchObject({ user_id: vera, role: 'editor' })
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/members/${vera}`, headers: owner.headers })).statusCode).toBe(200)
    const gone = await t.app.inject({ method: 'DELETE', url: `/v1/members/${vera}`, headers: owner.headers })
    expect(gone.statusCode).toBe(404)
    expect(gone.json().error.code).toBe('member_not_found')
  })

  it('the last owner can be neither demoted nor removed (409 last_owner); with a second owner, both can', async () => {
    const me = owner.body.user.id
    for (const res of [
      await t.app.inject({ method: 'PATCH', url: `/v1/members/${me}`, headers: owner.headers, payload: { role: 'admin' } }),
      await t.app.inject({ method: 'DELETE', url: `/v1/members/${me}`, headers: owner.headers }),
    ]) {
      expect(res.statusCode).toBe(409)
      expect(res.json().error.code).toBe('last_owner')
    }
    const second = await addMember(t, p.id, 'second@example.com', 'owner')
    const demoted = await t.app.inject({ method: 'PATCH', url: `/v1/members/${second}`, headers: owner.headers, payload: { role: 'admin' } })
    expect(demoted.statusCode).toBe(200)
    await t.app.inject({ method: 'PATCH', url: `/v1/members/${second}`, headers: owner.headers, payload: { role: 'owner' } })
    const s = await signIn(t, 'second@example.com')
    expect((await t.app.inject({ method: 'PATCH', url: `/v1/members/${me}`, headers: s.headers, payload: { role: 'viewer' } })).statusCode).toBe(200)
    const last = await t.app.inject({ method: 'DELETE', url: `/v1/members/${second}`, headers: s.headers })
    expect(last.json().error.code).toBe('last_owner')
  })

  it('two owners demoting each other at once leave one owner', async () => {
    const q = await t.project()
    const x = await addMember(t, q.id, 'x@example.com', 'owner')
    const y = await addMember(t, q.id, 'y@example.com', 'owner')
    const [sx, sy] = [await signIn(t, 'x@example.com'), await signIn(t, 'y@example.com')]
    const results = await Promise.all([
      t.app.inject({ method: 'PATCH', url: `/v1/members/${y}`, headers: sx.headers, payload: { role: 'viewer' } }),
      t.app.inject({ method: 'PATCH', url: `/v1/members/${x}`, headers: sy.headers, payload: { role: 'viewer' } }),
    ])
    // The loser is 409 last_owner (it read its role first) or 403 (it was already demoted).
    const [first, second] = results.map((r) => r.statusCode).sort()
    expect(first).toBe(200)
    expect([403, 409]).toContain(second)
    const owners = (await t.ctx.db.query("SELECT user_id FROM memberships WHERE project_id = $1 AND role = 'owner'", [q.id])).rows
    expect(owners).toHaveLength(1)
  })
})
