// Whose X-Forwarded-For is believed (issue 22, finding 2). Over real HTTP on
// loopback, since what matters is the socket's address: without
// HERALD_TRUST_PROXY a forged header neither resets the per-IP sign-in limit
// nor reaches the audit log; with 127.0.0.1 named as the proxy it is believed;
// with another proxy named, the header from 127.0.0.1 is not.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../../test/support/app.ts'
import { LOGIN_ATTEMPTS_PER_IP, LOGIN_WINDOW_MS, loginIpKey } from '../../accounts/login-limit.ts'
import { MemoryRateLimiter } from './rate-limit.ts'

interface Listening { t: TestApp; base: string; project: TestProject }

/** A Herald listening on loopback with this environment, for the describe block it is called in. */
function listening(env: Record<string, string>): Listening {
  const it = {} as Listening
  beforeAll(async () => {
    it.t = await createTestApp(env)
    it.project = await it.t.project()
    await it.t.app.listen({ port: 0, host: '127.0.0.1' })
    const address = it.t.app.server.address()
    if (address === null || typeof address === 'string') throw new Error('not listening on a port')
    it.base = `http://127.0.0.1:${address.port}`
  })
  beforeEach(() => {
    it.t.ctx.rateLimiter = new MemoryRateLimiter()
  })
  afterAll(async () => {
    await it.t.close()
  })
  return it
}

/** A wrong password for an unknown email (one email each, so only the IP's budget matters): the status. */
async function signInFrom(h: Listening, forwardedFor: string, n: number): Promise<number> {
  const res = await fetch(`${h.base}/v1/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor },
    body: JSON.stringify({ email: `guess${n}@example.com`, password: 'wrong password' }),
  })
  await res.arrayBuffer()
  return res.status
}

/**
 * Spends one address's sign-in budget in the app's own limiter, as
 * LOGIN_ATTEMPTS_PER_IP failed attempts from it would (each real attempt costs
 * a scrypt, far too slow 50 times over on a shared machine).
 */
async function spendSignInBudget(h: Listening, ip: string): Promise<void> {
  for (let i = 0; i < LOGIN_ATTEMPTS_PER_IP; i++) await h.t.ctx.rateLimiter.hit(loginIpKey(ip), LOGIN_ATTEMPTS_PER_IP, LOGIN_WINDOW_MS)
}

/** Creates a group with a forged X-Forwarded-For and answers the IP the audit log recorded for it. */
async function auditedIp(h: Listening, forwardedFor: string): Promise<string | null> {
  const name = `Fans ${Math.random()}`
  const created = await fetch(`${h.base}/v1/groups`, {
    method: 'POST',
    headers: { ...h.project.auth, 'content-type': 'application/json', 'x-forwarded-for': forwardedFor },
    body: JSON.stringify({ name }),
  })
  expect(created.status).toBe(201)
  const log = await fetch(`${h.base}/v1/audit-log?action=group.create`, { headers: h.project.auth })
  const { entries } = await log.json() as { entries: Array<{ ip: string | null; details: { name: string } }> }
  return entries.find((entry) => entry.details.name === name)!.ip
}

describe('without HERALD_TRUST_PROXY (the default)', () => {
  const h = listening({})

  it('a forged X-Forwarded-For does not reset the per-IP sign-in limit', async () => {
    await spendSignInBudget(h, '127.0.0.1')
    // The attempt came from 127.0.0.1, whatever the header says: refused.
    expect(await signInFrom(h, '198.51.100.7', 1)).toBe(429)
    expect(await signInFrom(h, '198.51.100.8', 2)).toBe(429)
  })

  it('nor is an attempt counted against the forged address', async () => {
    await spendSignInBudget(h, '198.51.100.7')
    expect(await signInFrom(h, '198.51.100.7', 3)).toBe(401)
  })

  it('the audit log records the socket\'s address, not the forged one', async () => {
    expect(await auditedIp(h, '203.0.113.9')).toBe('127.0.0.1')
  })
})

describe('HERALD_TRUST_PROXY=127.0.0.1 (Herald behind a proxy on this machine)', () => {
  const h = listening({ HERALD_TRUST_PROXY: '127.0.0.1' })

  it('believes the header: the limit is the forwarded address\'s, and another forwarded address still signs in', async () => {
    await spendSignInBudget(h, '203.0.113.5')
    expect(await signInFrom(h, '203.0.113.5', 1)).toBe(429)
    expect(await signInFrom(h, '203.0.113.6', 2)).toBe(401)
  })

  it('the audit log records the forwarded address', async () => {
    expect(await auditedIp(h, '203.0.113.9')).toBe('203.0.113.9')
  })

  it('only the last hop is believed: the one before it was not said by a trusted proxy', async () => {
    expect(await auditedIp(h, '192.0.2.1, 198.51.100.4')).toBe('198.51.100.4')
  })
})

describe('HERALD_TRUST_PROXY naming a chain of proxies', () => {
  const h = listening({ HERALD_TRUST_PROXY: '127.0.0.1, 10.0.0.0/8' })

  it('walks back to the first address that is not a trusted proxy', async () => {
    // The client forged 192.0.2.1; 198.51.100.4 reached the proxy at 10.1.2.3, which reached 127.0.0.1.
    expect(await auditedIp(h, '192.0.2.1, 198.51.100.4, 10.1.2.3')).toBe('198.51.100.4')
  })
})

describe('HERALD_TRUST_PROXY naming another proxy', () => {
  const h = listening({ HERALD_TRUST_PROXY: '10.0.0.1,192.168.0.0/16' })

  it('the header from 127.0.0.1 is not believed, by the audit log or the sign-in limit', async () => {
    expect(await auditedIp(h, '203.0.113.9')).toBe('127.0.0.1')
    await spendSignInBudget(h, '127.0.0.1')
    expect(await signInFrom(h, '198.51.100.7', 1)).toBe(429)
  })
})
