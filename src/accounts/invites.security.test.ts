// Invites against an attacker (issue 22): accepting is no password oracle and
// the sign-in budget still guards the password; a stale link never changes a
// membership; joining is audited with the change; inviting and opening a link
// reveal nothing about an existing account.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { addMember, signIn, tokenOf, PASSWORD, type SignedIn } from '../../test/support/members.ts'
import { MemoryRateLimiter } from '../platform/http/rate-limit.ts'
import { newId } from '../platform/ids.ts'
import { LOGIN_ATTEMPTS_PER_ACCOUNT, LOGIN_WINDOW_MS } from './login-limit.ts'
import { newToken } from './tokens.ts'

let t: TestApp
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

beforeAll(async () => {
  t = await createTestApp()
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

/** Accepts with a new account's password, or (password null) as the session in `headers`. */
const accept = (token: string, password: string | null = PASSWORD, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: '/v1/invites/accept', headers, payload: password === null ? { token } : { token, password } })
const invite = (by: SignedIn, email: string, role: string) =>
  t.app.inject({ method: 'POST', url: '/v1/members/invites', headers: by.headers, payload: { email, role } })
const roleOf = async (projectId: string, email: string) =>
  (await t.ctx.db.query<{ role: string }>('SELECT m.role FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.project_id = $1 AND u.email = $2', [projectId, email])).rows[0]?.role ?? null

/** A project with a signed-in owner. */
async function projectWithOwner(email: string): Promise<{ p: TestProject; owner: SignedIn }> {
  const p = await t.project()
  await addMember(t, p.id, email, 'owner')
  return { p, owner: await signIn(t, email, PASSWORD, { project: p.id }) }
}

/** An open invite as a version before issue 22 could leave it (made alongside others, never revoked); returns its token. */
async function legacyInvite(projectId: string, email: string, role: string): Promise<string> {
  const { token, hash } = newToken()
  await t.ctx.db.query('INSERT INTO invites (id, project_id, email, role, token_hash, invited_by, expires_at) VALUES ($1, $2, $3, $4, $5, NULL, $6)', [
    newId('inv'), projectId, email, role, hash, new Date(Date.now() + 3_600_000),
  ])
  return token
}

describe('accepting an invite is no password oracle', () => {
  it('26 password guesses through accept, the last one right, all answer alike and join nothing; sign-in keeps its budget of 10', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    // The start of a sign-in window, so every attempt below falls in one.
    vi.setSystemTime(Math.ceil(Date.now() / LOGIN_WINDOW_MS) * LOGIN_WINDOW_MS + 1000)
    const a = await t.project({ name: 'A' })
    await addMember(t, a.id, 'carol@a.test', 'editor')
    const { p: b, owner: mallory } = await projectWithOwner('mallory@b.test')
    const token = tokenOf((await invite(mallory, 'carol@a.test', 'viewer')).json().invite_url)

    const guesses = [...Array.from({ length: 25 }, (_, i) => `wrong guess number ${i}`), PASSWORD]
    const answers = new Set<string>()
    for (const guess of guesses) {
      const res = await accept(token, guess)
      answers.add(`${res.statusCode} ${res.body}`)
    }
    // One answer for every guess, right or wrong: nothing to learn from it.
    expect([...answers]).toHaveLength(1)
    const [only] = answers
    expect(only.startsWith('409 ')).toBe(true)
    expect(JSON.parse(only.slice(4)).error.code).toBe('invite_sign_in_required')
    expect(await roleOf(b.id, 'carol@a.test')).toBeNull()

    // Guessing goes through sign-in, and the account's budget holds there: the 11th attempt is 429 even with the right password.
    for (let i = 0; i < LOGIN_ATTEMPTS_PER_ACCOUNT; i++) {
      const res = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { email: 'carol@a.test', password: `wrong ${i}` } })
      expect(res.statusCode).toBe(401)
    }
    const limited = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { email: 'carol@a.test', password: PASSWORD } })
    expect(limited.statusCode).toBe(429)
    // The link still works for Carol herself, signed in (after the window).
    vi.setSystemTime(Date.now() + LOGIN_WINDOW_MS)
    const carol = await signIn(t, 'carol@a.test')
    expect((await accept(token, null, carol.headers)).statusCode).toBe(200)
    expect(await roleOf(b.id, 'carol@a.test')).toBe('viewer')
  }, 120_000) // a dozen scrypt hashes: slow on a busy machine

  it('accepting signed in needs that account: another account is 403 invite_wrong_account, no session 401, no CSRF token 403', async () => {
    const { p, owner } = await projectWithOwner('owner1@example.com')
    await addMember(t, (await t.project()).id, 'dan@example.com', 'viewer')
    const token = tokenOf((await invite(owner, 'dan@example.com', 'editor')).json().invite_url)
    const wrong = await accept(token, null, owner.headers)
    expect(wrong.statusCode).toBe(403)
    expect(wrong.json().error.code).toBe('invite_wrong_account')
    expect((await accept(token, null)).json().error.code).toBe('invalid_session')
    const dan = await signIn(t, 'dan@example.com')
    expect((await accept(token, null, dan.cookie)).json().error.code).toBe('csrf_token_invalid')
    expect(await roleOf(p.id, 'dan@example.com')).toBeNull()
    expect((await accept(token, null, dan.headers)).json()).toMatchObject({ ok: true, user_id: dan.body.user.id, role: 'editor' })
  })
})

describe('a stale invite never changes a membership', () => {
  it('viewer → admin by a second invite: the newer invite replaces the older, and an old link left open is 409 member_exists, the role kept', async () => {
    const { p, owner } = await projectWithOwner('owner2@example.com')
    const first = tokenOf((await invite(owner, 'vic@example.com', 'viewer')).json().invite_url)
    const second = (await invite(owner, 'vic@example.com', 'admin')).json()
    expect((await accept(first)).json().error.code).toBe('invite_not_found')
    expect((await accept(tokenOf(second.invite_url))).statusCode).toBe(200)
    expect(await roleOf(p.id, 'vic@example.com')).toBe('admin')

    // An invite an earlier version left open beside the one accepted.
    await addMember(t, p.id, 'val@example.com', 'viewer')
    const val = await signIn(t, 'val@example.com')
    const left = await legacyInvite(p.id, 'val@example.com', 'admin')
    const refused = await accept(left, null, val.headers)
    expect(refused.statusCode).toBe(409)
    expect(refused.json().error.code).toBe('member_exists')
    expect(await roleOf(p.id, 'val@example.com')).toBe('viewer')
  })

  it('joining revokes the email\'s other open invites to the project', async () => {
    const { p } = await projectWithOwner('owner3@example.com')
    const other = await legacyInvite(p.id, 'wes@example.com', 'admin')
    await addMember(t, p.id, 'wes@example.com', 'viewer')
    expect((await t.app.inject({ method: 'POST', url: '/v1/invites/inspect', payload: { token: other } })).statusCode).toBe(404)
  })

  it('a removed member does not rejoin by another open link', async () => {
    const { p, owner } = await projectWithOwner('owner4@example.com')
    const older = tokenOf((await invite(owner, 'rex@example.com', 'editor')).json().invite_url)
    const newer = (await invite(owner, 'rex@example.com', 'viewer')).json()
    const joined = await accept(tokenOf(newer.invite_url))
    expect(joined.statusCode).toBe(200)
    const rex = joined.json().user_id
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/members/${rex}`, headers: owner.headers })).statusCode).toBe(200)
    expect((await accept(older)).statusCode).toBe(404)
    // Also a link an earlier version left open: removal revokes it.
    await addMember(t, p.id, 'ria@example.com', 'viewer')
    const left = await legacyInvite(p.id, 'ria@example.com', 'owner')
    const ria = await signIn(t, 'ria@example.com')
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/members/${ria.body.user.id}`, headers: owner.headers })).statusCode).toBe(200)
    const back = await accept(left, null, ria.headers)
    expect(back.statusCode).toBe(404)
    expect(await roleOf(p.id, 'rex@example.com')).toBeNull()
    expect(await roleOf(p.id, 'ria@example.com')).toBeNull()
  })

  it('a removed owner does not come back through his own invite for a second address to demote the original owner', async () => {
    const { p, owner: olga } = await projectWithOwner('olga@shop.test')
    const mallory = await addMember(t, p.id, 'mallory@shop.test', 'owner')
    const asMallory = await signIn(t, 'mallory@shop.test', PASSWORD, { project: p.id })
    const own = tokenOf((await invite(asMallory, 'mallory+2@evil.test', 'owner')).json().invite_url)
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/members/${mallory}`, headers: olga.headers })).json()).toMatchObject({ ok: true })
    const back = await accept(own, 'mallory second account')
    expect(back.statusCode).toBe(404)
    expect(back.json().error.code).toBe('invite_not_found')
    expect(await roleOf(p.id, 'mallory+2@evil.test')).toBeNull()
    expect(await roleOf(p.id, 'olga@shop.test')).toBe('owner')
  })

  it('an owner demoted loses the invites he made; the operator\'s and other owners\' stay', async () => {
    const { p, owner: olga } = await projectWithOwner('olga@cafe.test')
    const mallory = await addMember(t, p.id, 'mallory@cafe.test', 'owner')
    const asMallory = await signIn(t, 'mallory@cafe.test', PASSWORD, { project: p.id })
    const his = tokenOf((await invite(asMallory, 'mallory+2@evil.test', 'owner')).json().invite_url)
    const hers = tokenOf((await invite(olga, 'zoe@cafe.test', 'editor')).json().invite_url)
    const operators = tokenOf((await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${p.id}/members`, headers: admin, payload: { email: 'yan@cafe.test', role: 'viewer' } })).json().invite_url)
    const demoted = await t.app.inject({ method: 'PATCH', url: `/v1/members/${mallory}`, headers: olga.headers, payload: { role: 'admin' } })
    expect(demoted.statusCode).toBe(200)
    expect((await accept(his, 'mallory second account')).statusCode).toBe(404)
    expect((await accept(hers)).statusCode).toBe(200)
    expect((await accept(operators)).statusCode).toBe(200)
  })
})

describe('joining is audited', () => {
  it('member.join: the user who joined, the role, the invite and who made it, with the request\'s address and user agent', async () => {
    const { p, owner } = await projectWithOwner('owner5@example.com')
    const made = (await invite(owner, 'jo@example.com', 'editor')).json()
    const res = await accept(tokenOf(made.invite_url), PASSWORD, { 'user-agent': 'invite-test' })
    const jo = res.json().user_id
    const rows = (await t.ctx.db.query('SELECT * FROM audit_log WHERE project_id = $1 AND action = $2', [p.id, 'member.join'])).rows.filter((r) => r.actor_id === jo)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({
      actor_type: 'user', actor_id: jo, target_type: 'user', target_id: jo, ip: expect.any(String), user_agent: 'invite-test',
      details: { email: 'jo@example.com', role: 'editor', invite_id: made.id, invited_by: owner.body.user.id },
    })
    const listed = await t.app.inject({ method: 'GET', url: `/v1/audit-log?action=member.join`, headers: owner.cookie })
    expect(listed.json().entries.map((e: { actor: { label: string } }) => e.actor.label)).toContain('jo@example.com')
  })

  it('in the same transaction: when the entry cannot be written, nobody joins and the link still works', async () => {
    const { p, owner } = await projectWithOwner('owner6@example.com')
    const token = tokenOf((await invite(owner, 'kim@example.com', 'viewer')).json().invite_url)
    await t.ctx.db.exec(`
      CREATE FUNCTION refuse_member_join() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.action = 'member.join' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER refuse_member_join BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_member_join();`)
    try {
      expect((await accept(token)).statusCode).toBe(500)
    } finally {
      await t.ctx.db.exec('DROP TRIGGER refuse_member_join ON audit_log; DROP FUNCTION refuse_member_join();')
    }
    expect(await roleOf(p.id, 'kim@example.com')).toBeNull()
    expect((await accept(token)).statusCode).toBe(200)
    expect(await roleOf(p.id, 'kim@example.com')).toBe('viewer')
  })
})

describe('inviting and opening a link reveal nothing about an existing account', () => {
  it('the answer to an invite carries no existing user_id and makes no account; new and existing emails answer alike', async () => {
    const a = await t.project()
    const carolId = await addMember(t, a.id, 'carol2@a.test', 'viewer')
    const { owner: mallory } = await projectWithOwner('mallory2@b.test')
    const existing = (await invite(mallory, 'carol2@a.test', 'viewer')).json()
    const fresh = (await invite(mallory, 'nobody@a.test', 'viewer')).json()
    expect(existing.user_id).not.toBe(carolId)
    expect(existing.user_id).toMatch(/^usr_/)
    expect(Object.keys(existing).sort()).toEqual(Object.keys(fresh).sort())
    // Inviting made no account for the new email (nothing to pre-claim until someone accepts).
    expect((await t.ctx.db.query('SELECT 1 FROM users WHERE email = $1', ['nobody@a.test'])).rows).toEqual([])
    // Opening either link: the same fields, no password_set.
    const inspect = async (url: string) => (await t.app.inject({ method: 'POST', url: '/v1/invites/inspect', payload: { token: tokenOf(url) } })).json()
    const [seenExisting, seenFresh] = [await inspect(existing.invite_url), await inspect(fresh.invite_url)]
    expect(seenExisting).not.toHaveProperty('password_set')
    expect(Object.keys(seenExisting).sort()).toEqual(Object.keys(seenFresh).sort())
    // A new email's account takes the id the invite answered.
    expect((await accept(tokenOf(fresh.invite_url))).json().user_id).toBe(fresh.user_id)
  })

  it('a pre-claimed account cannot use the real invite with the pre-claimer\'s password (the real invitee signs in, or the operator resets)', async () => {
    const a = await t.project({ name: 'A' })
    const { owner: mallory } = await projectWithOwner('mallory3@b.test')
    // Mallory invites the address he expects project A to invite, and sets its password himself.
    const claim = tokenOf((await invite(mallory, 'erin@a.test', 'viewer')).json().invite_url)
    expect((await accept(claim, 'mallory knows this one')).statusCode).toBe(200)
    const real = tokenOf((await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${a.id}/members`, headers: admin, payload: { email: 'erin@a.test', role: 'owner' } })).json().invite_url)
    // Project A's link takes no password: not Erin's new one, not Mallory's.
    for (const password of ['erin chooses this one', 'mallory knows this one']) expect((await accept(real, password)).json().error.code).toBe('invite_sign_in_required')
    expect(await roleOf(a.id, 'erin@a.test')).toBeNull()
  })
})
