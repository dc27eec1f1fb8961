// Sessions (issue 13): the cookie and its flags, the id stored hashed, idle
// and absolute expiry on a clock the test sets, signing out here and
// everywhere, and CSRF on every state-changing request made with the cookie.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { MemoryRateLimiter } from '../platform/http/rate-limit.ts'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { addMember, cookieValue, signIn, PASSWORD } from '../../test/support/members.ts'
import { hashToken } from './tokens.ts'

let t: TestApp
let p: TestProject
let q: TestProject
const HOUR = 3_600_000

beforeAll(async () => {
  t = await createTestApp()
  p = await t.project({ name: 'Shop' })
  q = await t.project({ name: 'Blog' })
  await addMember(t, p.id, 'ann@example.com', 'owner')
  await addMember(t, q.id, 'ann@example.com', 'viewer')
})
afterAll(async () => {
  await t.close()
})
// Sign-in limits are login-limit.test.ts's subject: here each test starts with fresh counters.
beforeEach(() => {
  t.ctx.rateLimiter = new MemoryRateLimiter()
})
afterEach(() => {
  vi.useRealTimers()
})

const me = (headers: Record<string, string>) => t.app.inject({ method: 'GET', url: '/v1/me', headers })

describe('signing in', () => {
  it('sets an HttpOnly, SameSite=Lax cookie on /v1, not Secure on http://localhost, and answers who is signed in', async () => {
    const s = await signIn(t, 'Ann@Example.com ')
    const header = String([s.res.headers['set-cookie']].flat()[0])
    expect(header).toMatch(/^herald_session=[A-Za-z0-9_-]{43}; Path=\/v1; Max-Age=\d+; HttpOnly; SameSite=Lax$/)
    expect(s.body).toMatchObject({
      user: { email: 'ann@example.com' },
      project: { id: p.id, name: 'Shop', role: 'owner' },
      projects: [{ id: p.id, role: 'owner' }, { id: q.id, role: 'viewer' }],
      csrf_token: expect.any(String),
    })
    expect(s.body.permissions).toContain('members:manage')
    expect(s.res.body).not.toContain(s.id)
  })

  it('is read back when sent through inject\'s cookies option (light-my-request with cookie@1, docs/dependencies.md)', async () => {
    const s = await signIn(t, 'ann@example.com')
    // light-my-request writes the Cookie header with the cookie package's stringifySetCookie: cookie@1 must do what cookie@2 did.
    const res = await t.app.inject({ method: 'GET', url: '/v1/me', cookies: { herald_session: s.id } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual((await me(s.cookie)).json())
    // And a path that does not match the cookie's is left out, as RFC 6265 says.
    const other = await t.app.inject({ method: 'GET', url: '/v1/me', cookies: [{ name: 'herald_session', value: s.id, path: '/admin' }] })
    expect(other.statusCode).toBe(401)
  })

  it('is Secure when the public URL is https', async () => {
    const secure = await createTestApp({ HERALD_PUBLIC_URL: 'https://push.example.com' })
    try {
      const project = await secure.project()
      await addMember(secure, project.id, 'sec@example.com', 'viewer')
      const s = await signIn(secure, 'sec@example.com')
      expect(String([s.res.headers['set-cookie']].flat()[0])).toMatch(/; HttpOnly; SameSite=Lax; Secure$/)
    } finally {
      await secure.close()
    }
  })

  it('is Secure in production even on an http://localhost public URL (issue 22, finding 8)', async () => {
    const production = await createTestApp({ NODE_ENV: 'production', HERALD_LOG_LEVEL: 'silent', HERALD_PUBLIC_URL: 'http://localhost:3000' })
    try {
      const project = await production.project()
      await addMember(production, project.id, 'prod@example.com', 'viewer')
      const s = await signIn(production, 'prod@example.com')
      expect(String([s.res.headers['set-cookie']].flat()[0])).toMatch(/; HttpOnly; SameSite=Lax; Secure$/)
    } finally {
      await production.close()
    }
  })

  it('stores the cookie id only as its SHA-256', async () => {
    const s = await signIn(t, 'ann@example.com')
    const rows = (await t.ctx.db.query<{ id_hash: string }>('SELECT id_hash FROM sessions')).rows.map((r) => r.id_hash)
    expect(rows).toContain(hashToken(s.id))
    expect(JSON.stringify((await t.ctx.db.query('SELECT * FROM sessions')).rows)).not.toContain(s.id)
  })

  it('refuses a wrong password and an unknown email alike, 401 invalid_credentials', async () => {
    for (const payload of [{ email: 'ann@example.com', password: 'wrong password!' }, { email: 'nobody@example.com', password: PASSWORD }]) {
      const res = await t.app.inject({ method: 'POST', url: '/v1/session', payload, headers: { 'x-forwarded-for': '10.0.0.9' } })
      expect(res.statusCode).toBe(401)
      expect(res.json().error.code).toBe('invalid_credentials')
      expect(res.headers['set-cookie']).toBeUndefined()
    }
  })

  it('acts in the project asked for; one the user is not a member of is 404 project_not_found', async () => {
    const s = await signIn(t, 'ann@example.com', PASSWORD, { project: q.id })
    expect(s.body.project).toMatchObject({ id: q.id, role: 'viewer' })
    const other = await t.project()
    const res = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { email: 'ann@example.com', password: PASSWORD, project: other.id } })
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toBe('project_not_found')
  })
})

describe('using the session on bearer routes', () => {
  it('reads the current project; X-Herald-Project picks another of the user\'s, a foreign one is 404', async () => {
    const s = await signIn(t, 'ann@example.com')
    expect((await me(s.cookie)).json().project.id).toBe(p.id)
    expect((await me({ ...s.cookie, 'x-herald-project': q.id })).json().project.id).toBe(q.id)
    const other = await t.project()
    const res = await me({ ...s.cookie, 'x-herald-project': other.id })
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toBe('project_not_found')
  })

  it('PATCH /v1/session switches the current project', async () => {
    const s = await signIn(t, 'ann@example.com')
    const res = await t.app.inject({ method: 'PATCH', url: '/v1/session', headers: s.headers, payload: { project: q.id } })
    expect(res.json().project).toMatchObject({ id: q.id, role: 'viewer' })
    expect((await me(s.cookie)).json().project.id).toBe(q.id)
  })

  it('a garbage or unknown cookie is 401 invalid_session', async () => {
    for (const cookie of ['herald_session=garbage', `herald_session=${'A'.repeat(43)}`]) {
      const res = await me({ cookie })
      expect(res.statusCode).toBe(401)
      expect(res.json().error.code).toBe('invalid_session')
    }
  })
})

describe('CSRF', () => {
  it('a state-changing request with the cookie needs X-CSRF-Token: none or a wrong one is 403, the right one passes', async () => {
    const s = await signIn(t, 'ann@example.com')
    const post = (headers: Record<string, string>) => t.app.inject({ method: 'POST', url: '/v1/groups', headers, payload: { name: `g${Math.random()}` } })
    for (const headers of [s.cookie, { ...s.cookie, 'x-csrf-token': 'wrong' }, { ...s.cookie, 'x-csrf-token': `${s.csrf.slice(0, -1)}${s.csrf.endsWith('A') ? 'B' : 'A'}` }]) {
      const res = await post(headers)
      expect(res.statusCode).toBe(403)
      expect(res.json().error.code).toBe('csrf_token_invalid')
    }
    expect((await t.ctx.db.query('SELECT 1 FROM groups WHERE project_id = $1', [p.id])).rows).toHaveLength(0)
    expect((await post(s.headers)).statusCode).toBe(201)
    // Another session's token is not this one's.
    const other = await signIn(t, 'ann@example.com')
    expect((await post({ ...s.cookie, 'x-csrf-token': other.csrf })).statusCode).toBe(403)
  })

  it('also guards the session routes that change something', async () => {
    const s = await signIn(t, 'ann@example.com')
    for (const [method, url] of [['DELETE', '/v1/session'], ['DELETE', '/v1/sessions'], ['PATCH', '/v1/session']] as const) {
      const res = await t.app.inject({ method, url, headers: s.cookie, payload: method === 'PATCH' ? { project: q.id } : undefined })
      expect(res.statusCode, `${method} ${url}`).toBe(403)
    }
    expect((await me(s.cookie)).statusCode).toBe(200)
  })

  it('an API key request needs no token, also when a cookie comes along', async () => {
    const s = await signIn(t, 'ann@example.com')
    const res = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: { ...p.auth, ...s.cookie }, payload: { name: 'by key' } })
    expect(res.statusCode).toBe(201)
  })
})

describe('expiry and signing out', () => {
  it('ends after the idle time without use, and is kept alive by use', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const s = await signIn(t, 'ann@example.com')
    vi.setSystemTime(Date.now() + 11 * HOUR)
    expect((await me(s.cookie)).statusCode).toBe(200)
    vi.setSystemTime(Date.now() + 11 * HOUR)
    expect((await me(s.cookie)).statusCode).toBe(200)
    vi.setSystemTime(Date.now() + 12 * HOUR + 1000)
    const res = await me(s.cookie)
    expect(res.statusCode).toBe(401)
    expect(res.json().error.code).toBe('invalid_session')
  })

  it('ends 14 days after sign-in however much it is used', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const s = await signIn(t, 'ann@example.com')
    const started = Date.now()
    for (let at = 10 * HOUR; at < 14 * 24 * HOUR; at += 10 * HOUR) {
      vi.setSystemTime(started + at)
      expect((await me(s.cookie)).statusCode).toBe(200)
    }
    vi.setSystemTime(started + 14 * 24 * HOUR + 1000)
    expect((await me(s.cookie)).statusCode).toBe(401)
  })

  it('DELETE /v1/session ends this session and clears the cookie', async () => {
    const s = await signIn(t, 'ann@example.com')
    const other = await signIn(t, 'ann@example.com')
    const res = await t.app.inject({ method: 'DELETE', url: '/v1/session', headers: s.headers })
    expect(res.statusCode).toBe(200)
    expect(String([res.headers['set-cookie']].flat()[0])).toMatch(/^herald_session=; Path=\/v1; Max-Age=0/)
    expect(cookieValue(res)).toBe('')
    expect((await me(s.cookie)).statusCode).toBe(401)
    expect((await me(other.cookie)).statusCode).toBe(200)
  })

  it('DELETE /v1/sessions ends every session of the user, and nobody else\'s', async () => {
    await addMember(t, p.id, 'bob@example.com', 'editor')
    const sessions = [await signIn(t, 'ann@example.com'), await signIn(t, 'ann@example.com')]
    const bob = await signIn(t, 'bob@example.com')
    expect((await t.app.inject({ method: 'DELETE', url: '/v1/sessions', headers: sessions[0].headers })).statusCode).toBe(200)
    for (const s of sessions) expect((await me(s.cookie)).statusCode).toBe(401)
    expect((await me(bob.cookie)).statusCode).toBe(200)
  })

  it('a removed member\'s session loses the project at once', async () => {
    const carl = await addMember(t, p.id, 'carl@example.com', 'viewer')
    const s = await signIn(t, 'carl@example.com')
    expect((await me(s.cookie)).statusCode).toBe(200)
    const owner = await signIn(t, 'ann@example.com')
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/members/${carl}`, headers: owner.headers })).statusCode).toBe(200)
    expect((await me(s.cookie)).statusCode).toBe(404)
  })
})

describe('no CORS on the session routes', () => {
  it('a preflight from another site gets no Access-Control-Allow-Origin', async () => {
    const res = await t.app.inject({
      method: 'OPTIONS',
      url: '/v1/session',
      headers: { origin: 'https://evil.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    })
    expect(res.headers['access-control-allow-origin']).toBeUndefined()
  })
})
