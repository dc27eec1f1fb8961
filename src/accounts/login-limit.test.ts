// Sign-in attempts are limited per account and per IP, and the limit lifts
// when its window ends (a clock the test moves), so nobody is locked out for good.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { createTestApp, type TestApp } from '../../test/support/app.ts'
import { addMember, PASSWORD } from '../../test/support/members.ts'
import { MemoryRateLimiter } from '../platform/http/rate-limit.ts'
import { LOGIN_ATTEMPTS_PER_ACCOUNT, LOGIN_ATTEMPTS_PER_IP, LOGIN_WINDOW_MS } from './login-limit.ts'

let t: TestApp
beforeAll(async () => {
  // inject's requests come from 127.0.0.1: trusted as the proxy, its X-Forwarded-For stands for the client's address.
  t = await createTestApp({ HERALD_TRUST_PROXY: '127.0.0.1' })
  const p = await t.project()
  await addMember(t, p.id, 'eve@example.com', 'viewer')
})
afterAll(async () => {
  await t.close()
})
beforeEach(() => {
  t.ctx.rateLimiter = new MemoryRateLimiter()
  vi.useFakeTimers({ toFake: ['Date'] })
  // The start of a window, so the test's attempts all fall in one.
  vi.setSystemTime(Math.ceil(Date.now() / LOGIN_WINDOW_MS) * LOGIN_WINDOW_MS + 1000)
})
afterEach(() => {
  vi.useRealTimers()
})

const attempt = (email: string, password: string, ip: string) =>
  t.app.inject({ method: 'POST', url: '/v1/session', payload: { email, password }, headers: { 'x-forwarded-for': ip } })

describe('per account', () => {
  it(`after ${LOGIN_ATTEMPTS_PER_ACCOUNT} attempts on one email, from any IPs, the next is 429, even with the right password; the window's end lifts it`, async () => {
    for (let i = 0; i < LOGIN_ATTEMPTS_PER_ACCOUNT; i++) expect((await attempt('eve@example.com', 'wrong password', `10.2.0.${i}`)).statusCode).toBe(401)
    const refused = await attempt('eve@example.com', PASSWORD, '10.2.1.1')
    expect(refused.statusCode).toBe(429)
    expect(refused.json().error.code).toBe('rate_limited')
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
    // Another account from the same IPs is not held back.
    expect((await attempt('other@example.com', 'wrong password', '10.2.0.1')).statusCode).toBe(401)
    vi.setSystemTime(Date.now() + LOGIN_WINDOW_MS)
    expect((await attempt('eve@example.com', PASSWORD, '10.2.1.1')).statusCode).toBe(200)
  })

  it('counts an unknown email too (the limit says nothing about which emails exist)', async () => {
    for (let i = 0; i < LOGIN_ATTEMPTS_PER_ACCOUNT; i++) await attempt('ghost@example.com', 'wrong password', `10.3.0.${i}`)
    expect((await attempt('ghost@example.com', 'wrong password', '10.3.1.1')).statusCode).toBe(429)
  })
})

describe('per IP', () => {
  it(`after ${LOGIN_ATTEMPTS_PER_IP} attempts from one IP over many emails, that IP is refused, others are not; the window's end lifts it`, async () => {
    for (let i = 0; i < LOGIN_ATTEMPTS_PER_IP; i++) expect((await attempt(`u${i}@example.com`, 'wrong password', '10.4.0.1')).statusCode).toBe(401)
    expect((await attempt('eve@example.com', PASSWORD, '10.4.0.1')).statusCode).toBe(429)
    expect((await attempt('eve@example.com', PASSWORD, '10.4.0.2')).statusCode).toBe(200)
    vi.setSystemTime(Date.now() + LOGIN_WINDOW_MS)
    expect((await attempt('eve@example.com', PASSWORD, '10.4.0.1')).statusCode).toBe(200)
  })
})
