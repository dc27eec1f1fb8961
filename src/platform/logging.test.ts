// What the log says (docs/decisions.md "Metrics and logs"): in pretty mode a
// send reads as two plain lines (started, finished) and no request line at
// info; in JSON mode every line is JSON; a push service in trouble is warned
// about once per origin per minute, never per push; no secret, endpoint or
// notification content is ever written.
import { Writable } from 'node:stream'
import pino from 'pino'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { buildApp } from '../app.ts'
import { createWorker } from '../worker.ts'
import { loadConfig } from './config.ts'
import { createContext, createLogger } from './context.ts'
import { testConfig, type TestApp, type TestProject } from '../../test/support/app.ts'
import { createTestDatabase } from '../../test/support/database.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { send, subscribeBrowser, waitForBroadcast, type Browser } from '../../test/support/delivery.ts'
import { createProject } from '../projects/projects.service.ts'
import { PushMetrics } from '../delivery/push-metrics.ts'
import type { PushOutcome } from '../delivery/push-client.ts'
import { Metrics } from './metrics/metrics.ts'

/** The lines a logger wrote, as written. */
function capture(): { stream: Writable; lines: string[] } {
  const lines: string[] = []
  let rest = ''
  const stream = new Writable({
    write(chunk, _encoding, done) {
      rest += chunk.toString()
      const parts = rest.split('\n')
      rest = parts.pop() ?? ''
      lines.push(...parts.filter((line) => line !== ''))
      done()
    },
  })
  return { stream, lines }
}

/** createTestApp's in-process Herald (API and worker), with a logger of the test's own. */
async function startHerald(env: Record<string, string>, stream: Writable): Promise<TestApp> {
  const database = await createTestDatabase()
  const config = testConfig({ HERALD_ENCRYPT_THREADS: '0', HERALD_PUSH_RETRY_BASE_MS: '50', ...env })
  const ctx = createContext(config, database.db, createLogger(config, stream))
  const app = await buildApp(ctx)
  const delivery = createWorker(ctx)
  await delivery.start()
  return {
    app,
    ctx,
    database,
    delivery,
    async project() {
      const created = await createProject(database.db, { name: 'Logs', plan: 'plus' })
      const project: TestProject = {
        id: created.project.id,
        apiKey: created.apiKey,
        apiKeyId: created.apiKeyId,
        vapidPublic: created.project.vapid_public,
        auth: { authorization: `Bearer ${created.apiKey}` },
      }
      return project
    },
    async close() {
      await app.close()
      await delivery.stop()
      await ctx.rateLimiter.close()
      await database.drop()
    },
  }
}

async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const start = Date.now()
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const notification = { title: 'Secret sale', body: 'Only for the log test' }

/** Nothing a log line may carry: the notification, endpoints' tokens, subscription keys, the API key. */
function expectNoSecrets(lines: string[], project: TestProject, browsers: Browser[]): void {
  const all = lines.join('\n')
  expect(all).not.toContain(notification.title)
  expect(all).not.toContain(notification.body)
  expect(all).not.toContain(project.apiKey)
  for (const browser of browsers) {
    expect(all).not.toContain(new URL(browser.endpoint).pathname)
    expect(all).not.toContain(browser.keys.p256dh)
    expect(all).not.toContain(browser.keys.auth)
  }
}

describe('logs', () => {
  let push: PushService
  beforeAll(async () => {
    push = await startPushService()
  })
  afterAll(async () => {
    await push.close()
  })

  it('pretty: a send reads as one line when it starts and one when it is done, with no request lines at info', async () => {
    const { stream, lines } = capture()
    const t = await startHerald({ HERALD_LOG_FORMAT: 'pretty', HERALD_LOG_LEVEL: 'info' }, stream)
    try {
      const project = await t.project()
      const browsers = [await subscribeBrowser(t, project, push), await subscribeBrowser(t, project, push)]
      const id = await send(t, project, { target: { type: 'all' }, notification })
      await waitForBroadcast(t, project, id)
      await until(() => lines.some((line) => line.includes(`broadcast ${id} sent`)), 'the finished line')

      const about = lines.filter((line) => line.includes(id))
      expect(about).toHaveLength(2)
      expect(about[0]).toMatch(new RegExp(`^\\[\\d\\d:\\d\\d:\\d\\d\\] INFO: broadcast ${id} sending to 2 subscribers `))
      expect(about[1]).toMatch(new RegExp(`INFO: broadcast ${id} sent: 2 delivered, 0 failed in \\d+\\.\\d s \\(\\d+ pushes/s\\)`))
      // Readable, not JSON; no request lines (Fastify's, or a line per API call) at info.
      for (const line of lines) expect(line.startsWith('{'), line).toBe(false)
      expect(lines.filter((line) => /incoming request|request completed|\/v1\/(send|subscribe)|batch sent/.test(line))).toEqual([])
      expectNoSecrets(lines, project, browsers)
    } finally {
      await t.close()
    }
  })

  it('json: every line is a JSON object, request lines only at debug, and a slow push service is warned about once per origin', async () => {
    const { stream, lines } = capture()
    const slow = await startPushService()
    // Batches of one: each push is its own batch and retry job, so the warning is tried many times.
    const t = await startHerald({ HERALD_LOG_FORMAT: 'json', HERALD_LOG_LEVEL: 'debug', HERALD_FANOUT_BATCH_SIZE: '1' }, stream)
    try {
      const project = await t.project()
      const browsers = await Promise.all([1, 2, 3].map(() => subscribeBrowser(t, project, slow)))
      for (const browser of browsers) slow.fail(browser.endpoint, { status: 503 })
      const id = await send(t, project, { target: { type: 'all' }, notification, ttl: 1 })
      expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', failed: 3 })
      await until(() => lines.some((line) => line.includes(`broadcast ${id} sent`)), 'the finished line')

      const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
      const send202 = records.filter((r) => r.route === '/v1/send' && r.status === 202)
      expect(send202).toHaveLength(1)
      expect(send202[0].level).toBe(20)
      expect(records.filter((r) => r.level === 30 && r.route !== undefined)).toEqual([])

      // Three pushes, each retried until the TTL ran out: many answers of 503, one warning.
      expect(slow.requests).toBeGreaterThanOrEqual(6)
      const origin = new URL(browsers[0].endpoint).origin
      const warnings = records.filter((r) => r.level === 40 && r.push_origin === origin)
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toMatchObject({ broadcast_id: id, status: 503 })
      expect(warnings[0].msg).toMatch(new RegExp(`^push service ${origin.replace(/[.]/g, '\\.')} answered 503 to \\d+ push(es)?: (retrying in \\d+\\.\\d s|given up)`))
      expectNoSecrets(lines, project, browsers)
    } finally {
      await t.close()
      await slow.close()
    }
  })
})

describe('the slow push service warning', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('is written once per origin per minute, counting the ones left out', () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(new Date('2026-11-23T12:00:00Z'))
    const { stream, lines } = capture()
    const log = pino({ level: 'info' }, stream)
    const noDb = { connections: () => ({ total: 1, inUse: 0, waiting: 0 }) }
    const pushMetrics = new PushMetrics(new Metrics(noDb as never), log)
    const a = new URL('https://fcm.googleapis.com/fcm/send/token-a')
    const b = new URL('https://updates.push.services.mozilla.com/wpush/v2/token-b')
    const retry: PushOutcome = { kind: 'retry', status: 429, retryAfterMs: 30_000 }
    const batch = () => {
      const tally = pushMetrics.tally()
      for (let i = 0; i < 50; i++) tally.add('fcm', retry, performance.now(), a)
      tally.add('mozilla', { kind: 'retry', status: null, retryAfterMs: null, error: 'UND_ERR_HEADERS_TIMEOUT' }, performance.now(), b)
      pushMetrics.record(tally, 'brd_window', 30_000)
    }
    const warnings = () => lines.map((line) => JSON.parse(line)).filter((r) => r.level === 40)

    batch()
    expect(warnings().map((w) => w.msg)).toEqual([
      'push service https://fcm.googleapis.com answered 429 Too Many Requests to 50 pushes: retrying in 30.0 s',
      'push service https://updates.push.services.mozilla.com did not answer (UND_ERR_HEADERS_TIMEOUT) to 1 push: retrying in 30.0 s',
    ])
    vi.setSystemTime(new Date('2026-11-23T12:00:59Z'))
    batch()
    batch()
    expect(warnings()).toHaveLength(2)
    vi.setSystemTime(new Date('2026-11-23T12:01:01Z'))
    batch()
    expect(warnings()).toHaveLength(4)
    expect(warnings().slice(2).map((w) => [w.push_origin, w.warnings_suppressed])).toEqual([
      ['https://fcm.googleapis.com', 2],
      ['https://updates.push.services.mozilla.com', 2],
    ])
    // The origin only: never an endpoint's path (its token).
    expect(lines.join('\n')).not.toContain('token-')
  })

  it('log settings: pretty by default on a terminal outside production, JSON otherwise, and a bad value stops the start', () => {
    expect(loadConfig({}, true).logFormat).toBe('pretty')
    expect(loadConfig({}, false).logFormat).toBe('json')
    expect(loadConfig({ NODE_ENV: 'production', HERALD_ADMIN_TOKEN: 'x'.repeat(16) }, true).logFormat).toBe('json')
    // Only NODE_ENV=test exactly is the test environment (it hashes passwords cheaper: accounts/passwords.ts scryptCost).
    expect(loadConfig({ NODE_ENV: 'production', HERALD_ADMIN_TOKEN: 'x'.repeat(16) }, true).env).toBe('production')
    for (const value of [undefined, 'development', 'Test', 'testing', 'staging']) {
      expect(loadConfig(value === undefined ? {} : { NODE_ENV: value }, true).env).toBe('development')
    }
    expect(loadConfig({ HERALD_LOG_FORMAT: 'json' }, true).logFormat).toBe('json')
    expect(loadConfig({ HERALD_LOG_FORMAT: 'pretty' }, false).logFormat).toBe('pretty')
    expect(() => loadConfig({ HERALD_LOG_FORMAT: 'fancy' })).toThrow(/HERALD_LOG_FORMAT/)
    expect(() => loadConfig({ HERALD_LOG_LEVEL: 'loud' })).toThrow(/HERALD_LOG_LEVEL/)
    expect(loadConfig({ HERALD_LOG_LEVEL: 'debug' }).logLevel).toBe('debug')
    expect(loadConfig({ HERALD_METRICS_PORT: '9464' }).metricsPort).toBe(9464)
    expect(loadConfig({}).metricsPort).toBeNull()
    expect(() => loadConfig({ HERALD_METRICS_PORT: 'nine' })).toThrow(/HERALD_METRICS_PORT/)
  })
})
