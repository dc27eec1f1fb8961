// Password reset without e-mail (issue 22, finding 7): the operator makes a
// single-use link valid one hour; the page behind it sets a new password and
// every session of the account ends. Unknown, malformed, used, superseded and
// expired links all answer 404 password_reset_not_found.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { MemoryRateLimiter } from '../platform/http/rate-limit.ts'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { addMember, signIn, PASSWORD } from '../../test/support/members.ts'
import { hashToken } from './tokens.ts'
import { PASSWORD_RESET_LIFETIME_MS } from './passwords.service.ts'

let t: TestApp
let p: TestProject
const NEW_PASSWORD = 'a brand new passphrase'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

beforeAll(async () => {
  t = await createTestApp({ HERALD_PUBLIC_URL: 'https://push.example.com' })
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

const me = (headers: Record<string, string>) => t.app.inject({ method: 'GET', url: '/v1/me', headers })
const makeLink = (email: string) => t.app.inject({ method: 'POST', url: '/admin/v1/users/password-reset', headers: admin, payload: { email } })
const tokenOf = (url: string) => url.slice(url.lastIndexOf('/') + 1)
const inspect = (token: string) => t.app.inject({ method: 'POST', url: '/v1/password-reset/inspect', payload: { token } })
const reset = (token: string, password = NEW_PASSWORD) => t.app.inject({ method: 'POST', url: '/v1/password-reset', payload: { token, password } })

describe('the operator makes a reset link', () => {
  it('answers a one-hour link under the public URL; the token is stored only as its hash', async () => {
    const userId = await addMember(t, p.id, 'ann@example.com', 'owner')
    const res = await makeLink(' Ann@Example.com')
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toMatchObject({ user_id: userId, email: 'ann@example.com' })
    expect(body.reset_url).toMatch(/^https:\/\/push\.example\.com\/dashboard\/#\/reset\/[A-Za-z0-9_-]{43}$/)
    expect(body.expires_at - Date.now()).toBeGreaterThan(PASSWORD_RESET_LIFETIME_MS - 60_000)
    expect(body.expires_at - Date.now()).toBeLessThanOrEqual(PASSWORD_RESET_LIFETIME_MS)
    const rows = JSON.stringify((await t.ctx.db.query('SELECT * FROM password_resets WHERE user_id = $1', [userId])).rows)
    expect(rows).toContain(hashToken(tokenOf(body.reset_url)))
    expect(rows).not.toContain(tokenOf(body.reset_url))
  })

  it('an email with no account is 404 user_not_found; without the operator token, 401', async () => {
    const res = await makeLink('nobody@example.com')
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toBe('user_not_found')
    const anon = await t.app.inject({ method: 'POST', url: '/admin/v1/users/password-reset', headers: p.auth, payload: { email: 'ann@example.com' } })
    expect(anon.statusCode).toBe(401)
  })
})

describe('using the link', () => {
  it('sets the new password and ends every session of the account, nobody else\'s', async () => {
    await addMember(t, p.id, 'bea@example.com', 'editor')
    await addMember(t, p.id, 'bob@example.com', 'viewer')
    const sessions = [await signIn(t, 'bea@example.com'), await signIn(t, 'bea@example.com')]
    const bob = await signIn(t, 'bob@example.com')
    const token = tokenOf((await makeLink('bea@example.com')).json().reset_url)
    // Making the link locks nobody out: sessions go on until it is used.
    for (const s of sessions) expect((await me(s.cookie)).statusCode).toBe(200)

    const seen = await inspect(token)
    expect(seen.statusCode).toBe(200)
    expect(seen.json()).toMatchObject({ email: 'bea@example.com', expires_at: expect.any(Number) })
    expect(seen.headers['cache-control']).toBe('no-store')

    const res = await reset(token)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true, email: 'bea@example.com' })
    for (const s of sessions) {
      const after = await me(s.cookie)
      expect(after.statusCode).toBe(401)
      expect(after.json().error.code).toBe('invalid_session')
    }
    expect((await me(bob.cookie)).statusCode).toBe(200)
    expect((await t.app.inject({ method: 'POST', url: '/v1/session', payload: { email: 'bea@example.com', password: PASSWORD } })).statusCode).toBe(401)
    await signIn(t, 'bea@example.com', NEW_PASSWORD)
    // Hashed at the process's cost (NODE_ENV=test: N = 2^12; production's 2^15 is pinned in passwords.test.ts).
    const stored = await t.ctx.db.query<{ password_hash: string }>('SELECT password_hash FROM users WHERE email = $1', ['bea@example.com'])
    expect(stored.rows[0].password_hash).toMatch(/^scrypt\$4096\$/)
  })

  it('is single use: the second use and a look afterwards are 404 password_reset_not_found', async () => {
    await addMember(t, p.id, 'cid@example.com', 'viewer')
    const token = tokenOf((await makeLink('cid@example.com')).json().reset_url)
    expect((await reset(token)).statusCode).toBe(200)
    for (const res of [await reset(token, 'yet another passphrase'), await inspect(token)]) {
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('password_reset_not_found')
    }
    await signIn(t, 'cid@example.com', NEW_PASSWORD)
  })

  it('two uses racing: one sets the password, the other is 404', async () => {
    await addMember(t, p.id, 'race@example.com', 'viewer')
    const token = tokenOf((await makeLink('race@example.com')).json().reset_url)
    const answers = await Promise.all([reset(token, 'first racing passphrase'), reset(token, 'second racing passphrase')])
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 404])
  })

  it('expires after an hour', async () => {
    await addMember(t, p.id, 'dan@example.com', 'viewer')
    vi.useFakeTimers({ toFake: ['Date'] })
    const token = tokenOf((await makeLink('dan@example.com')).json().reset_url)
    vi.setSystemTime(Date.now() + PASSWORD_RESET_LIFETIME_MS - 60_000)
    expect((await inspect(token)).statusCode).toBe(200)
    vi.setSystemTime(Date.now() + 61_000)
    for (const res of [await inspect(token), await reset(token)]) {
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('password_reset_not_found')
    }
    vi.useRealTimers()
    await signIn(t, 'dan@example.com', PASSWORD)
  })

  it('a newer link ends the older one', async () => {
    await addMember(t, p.id, 'eli@example.com', 'viewer')
    const first = tokenOf((await makeLink('eli@example.com')).json().reset_url)
    const second = tokenOf((await makeLink('eli@example.com')).json().reset_url)
    expect((await reset(first)).json().error.code).toBe('password_reset_not_found')
    expect((await reset(second)).statusCode).toBe(200)
  })

  it('unknown and malformed tokens are 404 password_reset_not_found; an invite token is not a reset token', async () => {
    const invite = (await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${p.id}/members`, headers: admin, payload: { email: 'new@example.com', role: 'viewer' } })).json()
    for (const token of ['A'.repeat(43), 'not a token', 'x', `${'A'.repeat(42)}!`, tokenOf(invite.invite_url)]) {
      for (const res of [await inspect(token), await reset(token)]) {
        expect(res.statusCode, token).toBe(404)
        expect(res.json().error.code).toBe('password_reset_not_found')
      }
    }
    const empty = await reset('')
    expect(empty.statusCode).toBe(400)
    expect(empty.json().error.code).toBe('invalid_request')
  })

  it('a weak new password is 400 weak_password and the link stays usable', async () => {
    await addMember(t, p.id, 'fay@example.com', 'viewer')
    const token = tokenOf((await makeLink('fay@example.com')).json().reset_url)
    const weak = await reset(token, 'password123')
    expect(weak.statusCode).toBe(400)
    expect(weak.json().error.code).toBe('weak_password')
    expect((await reset(token)).statusCode).toBe(200)
  })
})
