// The per-project request limit (decisions.md §1, §2): the in-memory and
// Redis counters on their own, then through HTTP on a bearer route, a browser
// route and the events beacon, and what happens when Redis is down or hung.
import net from 'node:net'
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../../test/support/app.ts'
import { awayFromWindowEdge } from '../../../test/support/rate-window.ts'
import { subscription } from '../../subscribers/subscribers.fixtures.ts'
import { insertSentBroadcast } from '../../broadcasts/broadcasts.fixtures.ts'
import { BEACONS_PER_REQUEST } from '../../projects/project-auth.ts'
import { createRateLimiter, MemoryRateLimiter, REDIS_OPTIONS, RedisRateLimiter } from './rate-limit.ts'

const MINUTE = 60_000
/** A time at the very start of a window, so tests can step through it. */
const WINDOW_START = 29_000_000 * MINUTE

describe('MemoryRateLimiter', () => {
  it('allows exactly `limit` hits in a window and refuses the next, counting remaining down', async () => {
    const limiter = new MemoryRateLimiter()
    const seen = []
    for (let i = 0; i < 4; i++) seen.push(await limiter.hit('k', 3, MINUTE, WINDOW_START + i * 1000))
    expect(seen.map((r) => r.allowed)).toEqual([true, true, true, false])
    expect(seen.map((r) => r.remaining)).toEqual([2, 1, 0, 0])
    expect(seen.map((r) => r.limit)).toEqual([3, 3, 3, 3])
  })

  it('resetMs is the time left in the window: the whole window at its start, 1 ms at its last millisecond', async () => {
    const limiter = new MemoryRateLimiter()
    expect((await limiter.hit('a', 5, MINUTE, WINDOW_START)).resetMs).toBe(MINUTE)
    expect((await limiter.hit('a', 5, MINUTE, WINDOW_START + 12_345)).resetMs).toBe(MINUTE - 12_345)
    expect((await limiter.hit('a', 5, MINUTE, WINDOW_START + MINUTE - 1)).resetMs).toBe(1)
  })

  it('starts again in the next window: the last millisecond still counts, the first of the next does not', async () => {
    const limiter = new MemoryRateLimiter()
    for (let i = 0; i < 3; i++) await limiter.hit('k', 3, MINUTE, WINDOW_START + i)
    const last = await limiter.hit('k', 3, MINUTE, WINDOW_START + MINUTE - 1)
    expect(last.allowed).toBe(false)
    const next = await limiter.hit('k', 3, MINUTE, WINDOW_START + MINUTE)
    expect(next).toEqual({ allowed: true, limit: 3, remaining: 2, resetMs: MINUTE })
  })

  it('counts each key on its own', async () => {
    const limiter = new MemoryRateLimiter()
    for (let i = 0; i < 5; i++) await limiter.hit('busy', 2, MINUTE, WINDOW_START + i)
    expect(await limiter.hit('quiet', 2, MINUTE, WINDOW_START + 10)).toMatchObject({ allowed: true, remaining: 1 })
  })

  it('a limit of 0 refuses every request', async () => {
    const limiter = new MemoryRateLimiter()
    expect(await limiter.hit('k', 0, MINUTE, WINDOW_START)).toMatchObject({ allowed: false, remaining: 0 })
  })

  it('drops the counters of past windows, so memory holds only recent projects', async () => {
    const limiter = new MemoryRateLimiter()
    for (let i = 0; i < 100; i++) await limiter.hit(`prj:${i}`, 10, MINUTE, WINDOW_START + i)
    expect(limiter.size).toBe(100)
    // A minute later one project calls: the other 99 counters are from a past window and go.
    await limiter.hit('prj:new', 10, MINUTE, WINDOW_START + MINUTE + 500)
    expect(limiter.size).toBe(1)
    // Within the same window nothing is swept, and a later sweep keeps the current window's keys.
    await limiter.hit('prj:other', 10, MINUTE, WINDOW_START + MINUTE + 600)
    expect(limiter.size).toBe(2)
    await limiter.hit('prj:new', 10, MINUTE, WINDOW_START + 2 * MINUTE + 600)
    expect(limiter.size).toBe(1)
  })
})

// ---------------------------------------------------------------------------

describe('rate limit through HTTP (in-memory counters)', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
  })
  afterAll(async () => {
    await t.close()
  })
  beforeEach(() => awayFromWindowEdge())

  type Res = Awaited<ReturnType<TestApp['app']['inject']>>

  /** The RateLimit-* headers on a counted response, consistent with each other and with `limit`. */
  function expectRateLimitHeaders(res: Res, limit: number, remaining: number): void {
    expect(res.headers['ratelimit-limit']).toBe(String(limit))
    expect(res.headers['ratelimit-remaining']).toBe(String(remaining))
    expect(res.headers['ratelimit-policy']).toBe(`${limit};w=60`)
    const reset = Number(res.headers['ratelimit-reset'])
    expect(Number.isInteger(reset)).toBe(true)
    expect(reset).toBeGreaterThanOrEqual(1)
    expect(reset).toBeLessThanOrEqual(60)
  }

  function expectRateLimited(res: Res, limit: number): void {
    expect(res.statusCode).toBe(429)
    expect(res.json()).toEqual({ error: { code: 'rate_limited', message: expect.any(String) } })
    expectRateLimitHeaders(res, limit, 0)
    const retryAfter = Number(res.headers['retry-after'])
    expect(Number.isInteger(retryAfter)).toBe(true)
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(retryAfter).toBe(Number(res.headers['ratelimit-reset']))
  }

  const groups = (p: TestProject) => t.app.inject({ method: 'GET', url: '/v1/groups', headers: p.auth })
  const subscribe = (p: TestProject, body = subscription()) =>
    t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: body })
  const subscriberRows = async (p: TestProject) =>
    (await t.ctx.db.query('SELECT id FROM subscribers WHERE project_id = $1', [p.id])).rows.length

  it('bearer route (GET /v1/groups): 3 allowed with Remaining 2, 1, 0, the 4th is 429 rate_limited', async () => {
    const p = await t.project({ limits: { requests_per_minute: 3 } })
    for (const remaining of [2, 1, 0]) {
      const res = await groups(p)
      expect(res.statusCode).toBe(200)
      expect(res.headers['retry-after']).toBeUndefined()
      expectRateLimitHeaders(res, 3, remaining)
    }
    expectRateLimited(await groups(p), 3)
    // Still refused: refused requests count too, and nothing resets within the window.
    expectRateLimited(await groups(p), 3)
  })

  it('browser route (POST /v1/subscribe?project=): the 4th is 429, and creates no subscriber', async () => {
    const p = await t.project({ limits: { requests_per_minute: 3 } })
    for (const remaining of [2, 1, 0]) {
      const res = await subscribe(p)
      expect(res.statusCode).toBe(201)
      expectRateLimitHeaders(res, 3, remaining)
    }
    expect(await subscriberRows(p)).toBe(3)
    expectRateLimited(await subscribe(p), 3)
    expect(await subscriberRows(p)).toBe(3)
  })

  it('POST /v1/unsubscribe over the limit is 429 and leaves the subscriber active', async () => {
    const p = await t.project({ limits: { requests_per_minute: 1 } })
    const body = subscription()
    expect((await subscribe(p, body)).statusCode).toBe(201)
    const res = await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${p.id}`, payload: { endpoint: body.endpoint } })
    expectRateLimited(res, 1)
    const rows = await t.ctx.db.query<{ status: string }>('SELECT status FROM subscribers WHERE project_id = $1', [p.id])
    expect(rows.rows).toEqual([{ status: 'active' }])
  })

  it('a 429 on a write changes nothing: POST /v1/groups refused by the limit creates no group', async () => {
    const p = await t.project({ limits: { requests_per_minute: 1 } })
    expect((await groups(p)).statusCode).toBe(200)
    const res = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: p.auth, payload: { name: 'late' } })
    expectRateLimited(res, 1)
    expect((await t.ctx.db.query('SELECT id FROM groups WHERE project_id = $1', [p.id])).rows).toEqual([])
  })

  it('bearer and browser routes share one budget per project', async () => {
    const p = await t.project({ limits: { requests_per_minute: 3 } })
    expect((await groups(p)).statusCode).toBe(200)
    expect((await subscribe(p)).statusCode).toBe(201)
    expect((await groups(p)).statusCode).toBe(200)
    expectRateLimited(await subscribe(p), 3)
  })

  it('two projects have separate budgets', async () => {
    const a = await t.project({ limits: { requests_per_minute: 2 } })
    const b = await t.project({ limits: { requests_per_minute: 2 } })
    await groups(a)
    await groups(a)
    expectRateLimited(await groups(a), 2)
    const res = await groups(b)
    expect(res.statusCode).toBe(200)
    expectRateLimitHeaders(res, 2, 1)
    expect((await subscribe(b)).statusCode).toBe(201)
    expectRateLimited(await subscribe(a), 2)
  })

  it('the plan\'s number applies when the project has no override (free: 600 a minute)', async () => {
    const p = await t.project()
    const res = await groups(p)
    expectRateLimitHeaders(res, 600, 599)
  })

  it('requests refused before the limit is consulted (bad key, unknown project) count against nobody', async () => {
    const p = await t.project({ limits: { requests_per_minute: 2 } })
    for (let i = 0; i < 3; i++) {
      const bad = await t.app.inject({ method: 'GET', url: '/v1/groups', headers: { authorization: 'Bearer hk_live_nothing' } })
      expect(bad.statusCode).toBe(401)
      expect(bad.headers['ratelimit-limit']).toBeUndefined()
    }
    expectRateLimitHeaders(await groups(p), 2, 1)
  })

  it('POST /v1/events over the beacon budget still answers 202 { ok: true } and records nothing; beacons never spend the API budget', async () => {
    // Beacons have a bucket apart (issue 25: a send's shown beacons come in thousands): requests_per_minute × BEACONS_PER_REQUEST.
    const p = await t.project({ limits: { requests_per_minute: 1 } })
    const broadcastId = await insertSentBroadcast(t.ctx.db, p.id)
    const beacon = () => t.app.inject({
      method: 'POST',
      url: `/v1/events?project=${p.id}`,
      payload: { type: 'clicked', broadcast_id: broadcastId },
    })
    for (let i = 0; i < BEACONS_PER_REQUEST + 2; i++) {
      const res = await beacon()
      expect(res.statusCode).toBe(202)
      expect(res.json()).toEqual({ ok: true })
    }
    const counts = await t.ctx.db.query<{ clicked: number }>('SELECT clicked FROM broadcasts WHERE id = $1', [broadcastId])
    expect(counts.rows[0].clicked).toBe(BEACONS_PER_REQUEST)
    const events = await t.ctx.db.query('SELECT id FROM events WHERE broadcast_id = $1', [broadcastId])
    expect(events.rows).toHaveLength(BEACONS_PER_REQUEST)
    // The project's one API request a minute is still there, then spent.
    expect((await groups(p)).statusCode).toBe(200)
    expectRateLimited(await groups(p), 1)
  })
})

// ---------------------------------------------------------------------------

/** Deletes every key this test run wrote. */
async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  const keys = await redis.keys(pattern)
  if (keys.length > 0) await redis.del(...keys)
}

describe.runIf(process.env.REDIS_URL)('RedisRateLimiter (REDIS_URL)', () => {
  const redisUrl = process.env.REDIS_URL!
  const run = `test-${randomBytes(6).toString('hex')}`
  let admin: Redis
  beforeAll(() => {
    admin = new Redis(redisUrl)
  })
  afterAll(async () => {
    await deleteKeys(admin, `herald:rl:${run}*`)
    await admin.quit()
  })
  beforeEach(() => awayFromWindowEdge())

  /** A limiter on its own connection, once that connection is ready (hits before then fail by design). */
  async function connectedLimiter(): Promise<RedisRateLimiter> {
    const client = new Redis(redisUrl, REDIS_OPTIONS)
    await new Promise((resolve) => client.once('ready', resolve))
    return new RedisRateLimiter(client)
  }

  it('two limiters on separate connections share one count per key', async () => {
    const one = await connectedLimiter()
    const two = await connectedLimiter()
    try {
      const key = `${run}:shared`
      const seen = [
        await one.hit(key, 3, MINUTE),
        await two.hit(key, 3, MINUTE),
        await one.hit(key, 3, MINUTE),
        await two.hit(key, 3, MINUTE),
      ]
      expect(seen.map((r) => r.allowed)).toEqual([true, true, true, false])
      expect(seen.map((r) => r.remaining)).toEqual([2, 1, 0, 0])
      for (const r of seen) {
        expect(r.resetMs).toBeGreaterThan(0)
        expect(r.resetMs).toBeLessThanOrEqual(MINUTE)
      }
      // Another key is counted on its own.
      expect(await two.hit(`${run}:other`, 3, MINUTE)).toMatchObject({ allowed: true, remaining: 2 })
    } finally {
      await one.close()
      await two.close()
    }
  })

  it('takes the window from Redis\'s clock: API hosts whose clocks disagree by 90 s share one count', async () => {
    const one = await connectedLimiter()
    const two = await connectedLimiter()
    try {
      const key = `${run}:clocks`
      const first = await one.hit(key, 2, MINUTE)
      // This process's clock jumps 90 s ahead (another API host whose clock is off); Redis's does not.
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 90_000 })
      const second = await two.hit(key, 2, MINUTE)
      const third = await one.hit(key, 2, MINUTE)
      vi.useRealTimers()
      expect([first, second, third].map((r) => r.allowed)).toEqual([true, true, false])
      expect((await admin.keys(`herald:rl:${key}:*`)).length).toBe(1)
    } finally {
      vi.useRealTimers()
      await one.close()
      await two.close()
    }
  })

  it('the window\'s key expires on its own (no cleanup job needed)', async () => {
    const limiter = await connectedLimiter()
    try {
      await limiter.hit(`${run}:ttl`, 3, MINUTE)
      const [key] = await admin.keys(`herald:rl:${run}:ttl:*`)
      expect(key).toBe(`herald:rl:${run}:ttl:${Math.floor(Date.now() / MINUTE)}`)
      const ttl = await admin.pttl(key)
      expect(ttl).toBeGreaterThan(MINUTE)
      expect(ttl).toBeLessThanOrEqual(2 * MINUTE)
    } finally {
      await limiter.close()
    }
  })

  describe('through HTTP with REDIS_URL set', () => {
    // The app reaches Redis through a TCP relay that the last test tells to swallow everything.
    // (vitest runs describe bodies while collecting, even under runIf: nothing
    // here may read REDIS_URL before a hook, or a machine without it fails.)
    let target: URL
    let silent = false
    const sockets: net.Socket[] = []
    const relay = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 6379), target.hostname)
      sockets.push(client, upstream)
      client.on('data', (chunk) => {
        if (!silent) upstream.write(chunk)
      })
      upstream.on('data', (chunk) => {
        if (!silent) client.write(chunk)
      })
      client.on('error', () => undefined)
      upstream.on('error', () => undefined)
    })
    let t: TestApp
    const patterns: string[] = []
    beforeAll(async () => {
      target = new URL(redisUrl)
      await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
      t = await createTestApp({ REDIS_URL: `redis://127.0.0.1:${(relay.address() as net.AddressInfo).port}` })
      // The connection is made at start; wait until the limiter answers (headers appear).
      const probe = await t.project()
      patterns.push(`herald:rl:prj:${probe.id}:*`)
      for (let i = 0; i < 50; i++) {
        const res = await t.app.inject({ method: 'GET', url: '/v1/me', headers: probe.auth })
        if (res.headers['ratelimit-limit']) return
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      throw new Error('the Redis rate limiter never answered')
    })
    afterAll(async () => {
      for (const pattern of patterns) await deleteKeys(admin, pattern)
      await t?.close()
      for (const socket of sockets) socket.destroy()
      relay.close()
    })

    function projectKey(p: TestProject): string {
      patterns.push(`herald:rl:prj:${p.id}:*`)
      return `herald:rl:prj:${p.id}:${Math.floor(Date.now() / MINUTE)}`
    }

    it('counts in Redis: a count written there by another API process makes the first request here a 429', async () => {
      const p = await t.project({ limits: { requests_per_minute: 3 } })
      await admin.incrby(projectKey(p), 3)
      const res = await t.app.inject({ method: 'GET', url: '/v1/groups', headers: p.auth })
      expect(res.statusCode).toBe(429)
      expect(res.json().error.code).toBe('rate_limited')
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      expect(res.headers['ratelimit-remaining']).toBe('0')
    })

    it('requests served here are added to the count other processes see', async () => {
      const p = await t.project({ limits: { requests_per_minute: 5 } })
      const key = projectKey(p)
      await admin.incrby(key, 2)
      const res = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: subscription() })
      expect(res.statusCode).toBe(201)
      expect(res.headers['ratelimit-remaining']).toBe('2')
      expect(await admin.get(key)).toBe('3')
    })

    // Last in this block: it leaves the relay silent.
    it('a Redis that stops answering mid-connection: the next request waits at most commandTimeout, later ones not at all', async () => {
      const p = await t.project({ limits: { requests_per_minute: 1 } })
      projectKey(p)
      expect((await t.app.inject({ method: 'GET', url: '/v1/groups', headers: p.auth })).statusCode).toBe(200)
      expect((await t.app.inject({ method: 'GET', url: '/v1/groups', headers: p.auth })).statusCode).toBe(429)
      silent = true
      let started = Date.now()
      const first = await t.app.inject({ method: 'GET', url: '/v1/groups', headers: p.auth })
      expect(first.statusCode).toBe(200)
      expect(first.headers['ratelimit-limit']).toBeUndefined()
      expect(Date.now() - started).toBeGreaterThanOrEqual(REDIS_OPTIONS.commandTimeout - 50)
      expect(Date.now() - started).toBeLessThan(REDIS_OPTIONS.commandTimeout + 1_000)
      for (let i = 0; i < 3; i++) {
        started = Date.now()
        expect((await t.app.inject({ method: 'GET', url: '/v1/groups', headers: p.auth })).statusCode).toBe(200)
        expect(Date.now() - started).toBeLessThan(300)
      }
    })
  })
})

// ---------------------------------------------------------------------------

describe('Redis unreachable: requests are allowed (fail-open), promptly', () => {
  const sockets: net.Socket[] = []
  // Accepts connections and never answers: a hung Redis (or a black-holing middlebox).
  const hung = net.createServer((socket) => {
    sockets.push(socket)
  })
  let refused: TestApp
  let hanging: TestApp
  beforeAll(async () => {
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve))
    const port = (hung.address() as net.AddressInfo).port
    ;[refused, hanging] = await Promise.all([
      createTestApp({ REDIS_URL: 'redis://127.0.0.1:1' }),
      createTestApp({ REDIS_URL: `redis://127.0.0.1:${port}` }),
    ])
  })
  afterAll(async () => {
    await refused?.close()
    await hanging?.close()
    for (const socket of sockets) socket.destroy()
    hung.close()
  })

  /** Each request past the limit goes through, none waiting on Redis. */
  async function expectPromptAndAllowed(t: TestApp): Promise<void> {
    const p = await t.project({ limits: { requests_per_minute: 1 } })
    for (let i = 0; i < 5; i++) {
      const started = Date.now()
      const res = await t.app.inject({ method: 'GET', url: '/v1/groups', headers: p.auth })
      expect(res.statusCode).toBe(200)
      expect(Date.now() - started).toBeLessThan(300)
      // Nothing was counted, so no RateLimit-* headers claim otherwise.
      expect(res.headers['ratelimit-remaining']).toBeUndefined()
    }
    const sub = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: subscription() })
    expect(sub.statusCode).toBe(201)
  }

  it('nothing listens at REDIS_URL (connection refused)', async () => {
    await expectPromptAndAllowed(refused)
    // Later, when the client has backed off reconnecting for a while, requests are as prompt.
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    await expectPromptAndAllowed(refused)
  })

  it('something listens at REDIS_URL but never answers (a hung Redis)', async () => {
    await expectPromptAndAllowed(hanging)
  })

  it('a hit fails at once rather than waiting, and close() stops the reconnect loop', async () => {
    const client = new Redis('redis://127.0.0.1:1', REDIS_OPTIONS)
    client.on('error', () => undefined)
    const limiter = new RedisRateLimiter(client)
    const started = Date.now()
    await expect(limiter.hit('k', 1, MINUTE)).rejects.toThrow()
    expect(Date.now() - started).toBeLessThan(100)
    await limiter.close()
    let reconnects = 0
    client.on('reconnecting', () => reconnects++)
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(reconnects).toBe(0)
    expect(client.status).toBe('end')
  })

  it('createRateLimiter without a REDIS_URL counts in memory', () => {
    expect(createRateLimiter(null)).toBeInstanceOf(MemoryRateLimiter)
  })
})
