// Password hashing (issue 13): scrypt with a salt per user, never stored in
// clear, a wrong password refused, and sign-in taking as long for an unknown
// email as for a known one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_TOKEN, createTestApp, type TestApp } from '../../test/support/app.ts'
import { addMember, PASSWORD } from '../../test/support/members.ts'
import { hashPassword, passwordMatches, passwordProblem, SCRYPT_PARAMS, scryptCost } from './passwords.ts'

describe('hashPassword / passwordMatches', () => {
  it('stores scrypt with its parameters and a fresh salt each time', async () => {
    const [a, b] = [await hashPassword(PASSWORD), await hashPassword(PASSWORD)]
    expect(a).toMatch(new RegExp(`^scrypt\\$${SCRYPT_PARAMS.N}\\$8\\$1\\$[A-Za-z0-9_-]{22}\\$[A-Za-z0-9_-]{43}$`))
    expect(a).not.toBe(b)
    expect(a).not.toContain(PASSWORD)
    expect(await passwordMatches(PASSWORD, a)).toBe(true)
    expect(await passwordMatches(PASSWORD, b)).toBe(true)
  })

  it('hashes at N = 2^15 in production and development; only NODE_ENV=test hashes cheaper (2^12), and any N verifies', async () => {
    expect(SCRYPT_PARAMS.N).toBe(2 ** 15)
    expect(scryptCost('production')).toBe(2 ** 15)
    expect(scryptCost('development')).toBe(2 ** 15)
    expect(scryptCost('test')).toBe(2 ** 12)
    const cheap = await hashPassword(PASSWORD, scryptCost('test'))
    expect(cheap).toMatch(/^scrypt\$4096\$8\$1\$/)
    expect(await passwordMatches(PASSWORD, cheap)).toBe(true)
    expect(await passwordMatches(`${PASSWORD}!`, cheap)).toBe(false)
  })

  it('refuses a wrong password, one a character off, and a malformed hash', async () => {
    const stored = await hashPassword(PASSWORD)
    expect(await passwordMatches('correct horse batterY', stored)).toBe(false)
    expect(await passwordMatches(`${PASSWORD} `, stored)).toBe(false)
    expect(await passwordMatches(PASSWORD, 'plain')).toBe(false)
    expect(await passwordMatches(PASSWORD, stored.replace(/\$[^$]+$/, '$AAAA'))).toBe(false)
  })
})

describe('passwordProblem: the rule for a new password (issue 22)', () => {
  const email = 'carol.smith@example.com'
  it('refuses the email, its name part with only digits or symbols around it, common passwords and too few distinct characters', () => {
    for (const weak of [
      'carol.smith@example.com', 'Carol.Smith@Example.com', 'carol.smith', 'carol.smith2024', '!!carol.smith!!',
      'password123', 'Password123', 'pass word 123', 'QWERTYUIOP', '1234567890', 'aaaaaaaaaaaa', 'abababababab', 'abcabcabcabc',
    ]) expect(passwordProblem(weak, email), weak).not.toBeNull()
  })
  it('refuses fewer than 10 or more than 256 characters, counted as characters (not bytes)', () => {
    expect(passwordProblem('Tr0ub4dor', email)).toMatch(/at least 10/)
    expect(passwordProblem('x'.repeat(200) + 'y'.repeat(57), email)).toMatch(/at most 256/)
    expect(passwordProblem('ünïcödé-pässwörd', email)).toBeNull()
    expect(passwordProblem('é'.repeat(5) + 'abcde', email)).toBeNull()
  })
  it('accepts a passphrase, one that merely contains the name among words, and a random string', () => {
    for (const fine of [PASSWORD, 'carol likes long walks', 'x7#Lq9!vPz2m', 'tr0ub4dour&3 horse']) expect(passwordProblem(fine, email), fine).toBeNull()
  })
})

describe('in the database and over HTTP', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
    const p = await t.project()
    await addMember(t, p.id, 'dora@example.com', 'editor')
  })
  afterAll(async () => {
    await t.close()
  })

  it('the users table holds no password in clear, only the scrypt hash', async () => {
    const rows = (await t.ctx.db.query<{ password_hash: string }>('SELECT * FROM users')).rows
    expect(JSON.stringify(rows)).not.toContain(PASSWORD)
    // The test app runs under NODE_ENV=test: its routes hash at that process's cost.
    expect(rows[0].password_hash).toMatch(new RegExp(`^scrypt\\$${scryptCost(t.ctx.config.env)}\\$`))
    expect(t.ctx.config.env).toBe('test')
    expect(await passwordMatches(PASSWORD, rows[0].password_hash)).toBe(true)
  })

  it('an unknown email costs the same scrypt as a wrong password, so timing does not tell accounts apart', async () => {
    const time = async (email: string, i: number) => {
      const started = performance.now()
      const res = await t.app.inject({ method: 'POST', url: '/v1/session', payload: { email, password: 'wrong password' }, headers: { 'x-forwarded-for': `10.1.0.${i}` } })
      expect(res.statusCode).toBe(401)
      return performance.now() - started
    }
    const median = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]
    const known: number[] = []
    const unknown: number[] = []
    for (let i = 0; i < 5; i++) {
      known.push(await time('dora@example.com', i))
      unknown.push(await time(`nobody${i}@example.com`, i))
    }
    // Without the dummy check an unknown email answers in a millisecond or two; scrypt takes tens.
    expect(median(unknown)).toBeGreaterThan(median(known) * 0.5)
  })

  it('accepting an invite as a new user applies the same rule: 400 weak_password, and the invite stays open', async () => {
    const p = await t.project()
    const invite = await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${p.id}/members`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { email: 'erin@example.com', role: 'viewer' } })
    const token = invite.json().invite_url.split('/').pop()
    const weak = await t.app.inject({ method: 'POST', url: '/v1/invites/accept', payload: { token, password: 'erin@example.com' }, headers: { 'x-forwarded-for': '10.1.1.1' } })
    expect(weak.statusCode).toBe(400)
    expect(weak.json().error.code).toBe('weak_password')
    const fine = await t.app.inject({ method: 'POST', url: '/v1/invites/accept', payload: { token, password: PASSWORD }, headers: { 'x-forwarded-for': '10.1.1.1' } })
    expect(fine.statusCode).toBe(200)
  })
})
