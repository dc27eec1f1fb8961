// Changing a password (issue 22, finding 7): it needs the current password
// (counted like a sign-in), ends every other session of the account, renews
// this one, and is refused for a weak new password.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { MemoryRateLimiter } from '../platform/http/rate-limit.ts'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { addMember, cookieValue, signIn, PASSWORD, type SignedIn } from '../../test/support/members.ts'
import { awayFromWindowEdge } from '../../test/support/rate-window.ts'
import { LOGIN_ATTEMPTS_PER_ACCOUNT, LOGIN_WINDOW_MS } from './login-limit.ts'

let t: TestApp
let p: TestProject
const NEW_PASSWORD = 'a brand new passphrase'

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

const me = (headers: Record<string, string>) => t.app.inject({ method: 'GET', url: '/v1/me', headers })
const change = (s: SignedIn, payload: Record<string, unknown>, ip = '127.0.0.1') =>
  t.app.inject({ method: 'POST', url: '/v1/session/password', headers: { ...s.headers, 'x-forwarded-for': ip }, payload })

describe('POST /v1/session/password', () => {
  it('ends every other session of the account: the other one gets 401 on its next request; this one goes on renewed', async () => {
    await addMember(t, p.id, 'ann@example.com', 'owner')
    const here = await signIn(t, 'ann@example.com')
    const there = await signIn(t, 'ann@example.com')
    expect((await me(there.cookie)).statusCode).toBe(200)

    const res = await change(here, { current_password: PASSWORD, new_password: NEW_PASSWORD })
    expect(res.statusCode).toBe(200)
    expect(res.headers['cache-control']).toBe('no-store')

    const stale = await me(there.cookie)
    expect(stale.statusCode).toBe(401)
    expect(stale.json().error.code).toBe('invalid_session')
    // The session that changed it is renewed: a new cookie and CSRF token work, the old id is gone too.
    const renewed = cookieValue(res)
    expect(renewed).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(renewed).not.toBe(here.id)
    expect((await me({ cookie: `herald_session=${renewed}` })).statusCode).toBe(200)
    expect((await me(here.cookie)).statusCode).toBe(401)
    const csrf = res.json().csrf_token
    expect(csrf).not.toBe(here.csrf)
    const write = await t.app.inject({ method: 'PATCH', url: '/v1/session', headers: { cookie: `herald_session=${renewed}`, 'x-csrf-token': csrf }, payload: { project: p.id } })
    expect(write.statusCode).toBe(200)

    // The old password no longer signs in; the new one does.
    const old = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { email: 'ann@example.com', password: PASSWORD } })
    expect(old.statusCode).toBe(401)
    await signIn(t, 'ann@example.com', NEW_PASSWORD)
    // Hashed at the process's cost (NODE_ENV=test: N = 2^12; production's 2^15 is pinned in passwords.test.ts).
    const stored = await t.ctx.db.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE email = $1', ['ann@example.com'])
    expect(stored.rows[0].password_hash).toMatch(/^scrypt\$4096\$/)
  })

  it('a wrong current password is 401 invalid_credentials, changes nothing and ends no session', async () => {
    await addMember(t, p.id, 'bea@example.com', 'editor')
    const here = await signIn(t, 'bea@example.com')
    const there = await signIn(t, 'bea@example.com')
    const res = await change(here, { current_password: 'not the password', new_password: NEW_PASSWORD })
    expect(res.statusCode).toBe(401)
    expect(res.json().error.code).toBe('invalid_credentials')
    expect(res.headers['set-cookie']).toBeUndefined()
    expect((await me(here.cookie)).statusCode).toBe(200)
    expect((await me(there.cookie)).statusCode).toBe(200)
    await signIn(t, 'bea@example.com', PASSWORD)
  })

  it('counts against the account\'s sign-in budget: past it, 429 even with the right password', async () => {
    await awayFromWindowEdge(LOGIN_WINDOW_MS, 10_000)
    await addMember(t, p.id, 'cid@example.com', 'viewer')
    const s = await signIn(t, 'cid@example.com')
    // The sign-in above spent one attempt of the account's budget.
    for (let i = 1; i < LOGIN_ATTEMPTS_PER_ACCOUNT; i++) {
      expect((await change(s, { current_password: `wrong guess ${i}`, new_password: NEW_PASSWORD }, `10.9.0.${i}`)).statusCode).toBe(401)
    }
    const limited = await change(s, { current_password: PASSWORD, new_password: NEW_PASSWORD }, '10.9.1.1')
    expect(limited.statusCode).toBe(429)
    expect(limited.json().error.code).toBe('rate_limited')
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0)
    // And the sign-in shares it.
    const signInRes = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { email: 'cid@example.com', password: PASSWORD }, headers: { 'x-forwarded-for': '10.9.2.1' } })
    expect(signInRes.statusCode).toBe(429)
  })

  it('refuses a weak new password with 400 weak_password and keeps the old one', async () => {
    await addMember(t, p.id, 'dan.smith@example.com', 'viewer')
    const s = await signIn(t, 'dan.smith@example.com')
    for (const weak of ['dan.smith@example.com', 'Dan.Smith2024!', 'Password123', 'qwertyuiop', 'ababababab']) {
      const res = await change(s, { current_password: PASSWORD, new_password: weak })
      expect(res.statusCode, weak).toBe(400)
      expect(res.json().error.code).toBe('weak_password')
      expect(res.json().error.issues[0].path).toBe('new_password')
    }
    const short = await change(s, { current_password: PASSWORD, new_password: 'short' })
    expect(short.statusCode).toBe(400)
    expect((await me(s.cookie)).statusCode).toBe(200)
    await signIn(t, 'dan.smith@example.com', PASSWORD)
  })

  it('needs the session and its CSRF token', async () => {
    await addMember(t, p.id, 'eve@example.com', 'viewer')
    const s = await signIn(t, 'eve@example.com')
    const noCsrf = await t.app.inject({ method: 'POST', url: '/v1/session/password', headers: s.cookie, payload: { current_password: PASSWORD, new_password: NEW_PASSWORD } })
    expect(noCsrf.statusCode).toBe(403)
    expect(noCsrf.json().error.code).toBe('csrf_token_invalid')
    const byKey = await t.app.inject({ method: 'POST', url: '/v1/session/password', headers: p.auth, payload: { current_password: PASSWORD, new_password: NEW_PASSWORD } })
    expect(byKey.statusCode).toBe(401)
    await signIn(t, 'eve@example.com', PASSWORD)
  })
})
