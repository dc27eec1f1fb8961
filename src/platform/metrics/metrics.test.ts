// /metrics end to end: scraped through the real app (operator token), the
// worker role's health app and HERALD_METRICS_PORT's listener, parsed with a
// Prometheus text-format parser, after real broadcasts through the local push
// service and real webhook deliveries to a receiver on localhost.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from '../../../test/support/app.ts'
import { startPushService, type PushService } from '../../../test/support/push-service.ts'
import { send, subscribeBrowser, waitForBroadcast } from '../../../test/support/delivery.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../../../test/support/webhook-receiver.ts'
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.ts'
import { Scrape } from '../../../test/support/prometheus.ts'
import { buildHealthApp } from '../http/health-app.ts'
import { enqueue } from '../jobs/queue.ts'
import { JobWorker, RetryLater } from '../jobs/worker.ts'
import { startMetricsServer } from './metrics-http.ts'
import { Metrics } from './metrics.ts'
import { startWorkerProcess } from '../../../test/support/worker-process.ts'
import { freePort } from '../../../test/support/browser.ts'

let t: TestApp
let push: PushService
let other: PushService
let receiver: WebhookReceiver
let project: TestProject
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

beforeAll(async () => {
  push = await startPushService()
  other = await startPushService()
  receiver = await startWebhookReceiver()
  t = await createTestApp(
    {
      // Batches of two: a handful of subscribers spans several batch jobs.
      HERALD_FANOUT_BATCH_SIZE: '2',
      HERALD_PUSH_RETRY_BASE_MS: '100',
      HERALD_ENCRYPT_THREADS: '0',
      HERALD_SCHEDULER_INTERVAL_MS: '50',
      HERALD_WEBHOOK_RETRY_BASE_MS: '5',
    },
    { worker: true },
  )
})
afterAll(async () => {
  await t.close()
  await push.close()
  await other.close()
  await receiver.close()
})
beforeEach(async () => {
  push.reset()
  other.reset()
  project = await t.project({ plan: 'plus' })
})

const notification = { title: 'Sale', body: 'Everything must go' }

async function scrape(): Promise<Scrape> {
  const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: admin })
  expect(res.statusCode).toBe(200)
  return new Scrape(res.body)
}

/** Polls the scrape until check passes (counters move after the answers that cause them). */
async function scrapeUntil(check: (s: Scrape) => boolean, timeoutMs = 10_000): Promise<Scrape> {
  const start = Date.now()
  for (;;) {
    const s = await scrape()
    if (check(s)) return s
    if (Date.now() - start > timeoutMs) throw new Error('metrics did not reach the expected values')
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

describe('GET /metrics on the main port', () => {
  it('answers the operator token with the Prometheus text format, and 401 without it', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: admin })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/)
    const s = new Scrape(res.body)
    // Default metrics: memory and event-loop delay.
    expect(s.value('herald_process_resident_memory_bytes')).toBeGreaterThan(0)
    expect(s.family('herald_nodejs_eventloop_lag_p99_seconds')?.type).toBe('GAUGE')
    expect(s.family('herald_pushes_total')?.type).toBe('COUNTER')
    expect(s.family('herald_push_duration_seconds')?.type).toBe('HISTOGRAM')
    expect(s.family('herald_http_request_duration_seconds')?.type).toBe('HISTOGRAM')
    // The database pool, and the backlogs of a process that runs a worker.
    expect(s.labels('herald_db_connections').map((l) => l.state).sort()).toEqual(['idle', 'in_use'])
    expect(s.family('herald_db_waiting_requests')?.type).toBe('GAUGE')
    expect(s.value('herald_db_connections', { state: 'in_use' })).toBeGreaterThanOrEqual(0)
    expect(s.family('herald_jobs_waiting')?.type).toBe('GAUGE')
    expect(s.family('herald_webhook_deliveries_waiting')?.metrics).toHaveLength(1)
    expect(s.family('herald_webhook_deliveries_oldest_waiting_age_seconds')?.type).toBe('GAUGE')

    for (const headers of [{}, { authorization: 'Bearer nope-nope-nope-nope' }, { authorization: `Bearer ${project.apiKey}` }]) {
      const refused = await t.app.inject({ method: 'GET', url: '/metrics', headers })
      expect(refused.statusCode).toBe(401)
      expect(refused.json()).toEqual({ error: { code: 'invalid_admin_token', message: expect.any(String) } })
    }
  })

  it('counts the pushes a push service received, by outcome, with their latency and the jobs that sent them', async () => {
    const [ok1, ok2, dead, flaky] = await Promise.all([1, 2, 3, 4].map(() => subscribeBrowser(t, project, push)))
    push.fail(dead.endpoint, { status: 410 })
    push.fail(flaky.endpoint, { status: 500, times: 1 })
    const before = await scrape()
    const id = await send(t, project, { target: { type: 'all' }, notification })
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 3, failed: 1 })
    const after = await scrape()
    const delta = (name: string, labels: Record<string, string> = {}) => after.value(name, labels) - before.value(name, labels)

    // The local push service is on 127.0.0.1: push service "other".
    expect(push.requests).toBe(5)
    expect(delta('herald_pushes_total')).toBe(push.requests)
    expect(delta('herald_pushes_total', { push_service: 'other', outcome: 'delivered' })).toBe(3)
    expect(delta('herald_pushes_total', { push_service: 'other', outcome: 'failed', reason: 'gone' })).toBe(1)
    expect(delta('herald_pushes_total', { push_service: 'other', outcome: 'retried', reason: 'server_error' })).toBe(1)
    expect(delta('herald_pushes_total', { push_service: 'fcm' })).toBe(0)
    expect(delta('herald_push_duration_seconds', { push_service: 'other' })).toBe(5)
    const buckets = after.samples('herald_push_duration_seconds_bucket').filter((m) => m.labels?.push_service === 'other')
    expect(buckets.find((m) => m.labels?.le === '+Inf')?.value).toBe(String(after.value('herald_push_duration_seconds', { push_service: 'other' })))

    expect(delta('herald_jobs_claimed_total', { kind: 'fanout_broadcast' })).toBe(1)
    // Four subscribers in batches of two: two batches and the empty one that ends the chain (or not, when the second is short).
    expect(delta('herald_jobs_claimed_total', { kind: 'push_batch' })).toBeGreaterThanOrEqual(2)
    expect(delta('herald_jobs_claimed_total', { kind: 'push_retry' })).toBe(1)

    expect(delta('herald_http_requests_total', { method: 'POST', route: '/v1/send', status: '202' })).toBe(1)
    expect(delta('herald_http_request_duration_seconds', { method: 'POST', route: '/v1/send' })).toBe(1)
    expect([ok1, ok2]).toHaveLength(2)
  })

  it('shows a failing push service as retries, then a failure (unreachable) once its TTL is spent', async () => {
    const down = await subscribeBrowser(t, project, other)
    other.fail(down.endpoint, { status: 503 })
    const before = await scrape()
    const id = await send(t, project, { target: { type: 'all' }, notification, ttl: 1 })
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 0, failed: 1 })
    const after = await scrape()
    const delta = (labels: Record<string, string>) => after.value('herald_pushes_total', labels) - before.value('herald_pushes_total', labels)
    expect(other.requests).toBeGreaterThanOrEqual(2)
    expect(delta({})).toBe(other.requests)
    expect(delta({ outcome: 'failed', reason: 'unreachable' })).toBe(1)
    expect(delta({ outcome: 'retried', reason: 'server_error' })).toBe(other.requests - 1)
    expect(delta({ outcome: 'delivered' })).toBe(0)
  })

  it('labels API requests by route pattern, never by the URL with its ids', async () => {
    const id = `brd_${'x'.repeat(24)}`
    expect((await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: project.auth })).statusCode).toBe(404)
    expect((await t.app.inject({ method: 'GET', url: `/v1/no-such-route/${id}` })).statusCode).toBe(404)
    const s = await scrape()
    expect(s.value('herald_http_requests_total', { method: 'GET', route: '/v1/broadcasts/:id', status: '404' })).toBeGreaterThanOrEqual(1)
    expect(s.value('herald_http_requests_total', { route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1)
    const routes = s.labels('herald_http_requests_total').map((l) => l.route)
    expect(routes.some((route) => route.includes(id) || route.includes(project.id))).toBe(false)
  })

  it('counts webhook deliveries by outcome as they are attempted', async () => {
    const hook = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: project.auth, payload: { url: `${receiver.url}/metrics-hook` } })
    expect(hook.statusCode).toBe(201)
    receiver.fail('/metrics-hook', { status: 500 }, 1)
    const before = await scrape()
    await subscribeBrowser(t, project, push)
    const id = await send(t, project, { target: { type: 'all' }, notification })
    await waitForBroadcast(t, project, id)
    await receiver.waitFor('/metrics-hook', 2)
    const delta = (s: Scrape, labels: Record<string, string>) => s.value('herald_webhook_deliveries_total', labels) - before.value('herald_webhook_deliveries_total', labels)
    const after = await scrapeUntil((s) => delta(s, { outcome: 'delivered' }) >= 1)
    expect(delta(after, { outcome: 'failed', reason: 'retry' })).toBe(1)
    expect(delta(after, { outcome: 'delivered' })).toBe(1)
  })
})

describe('the other ways to scrape', () => {
  it("the worker role's health app serves /metrics behind the operator token", async () => {
    const health = await buildHealthApp(t.ctx, () => true)
    try {
      const res = await health.inject({ method: 'GET', url: '/metrics', headers: admin })
      expect(res.statusCode).toBe(200)
      const s = new Scrape(res.body)
      expect(s.family('herald_jobs_claimed_total')?.type).toBe('COUNTER')
      expect(s.family('herald_jobs_waiting')?.type).toBe('GAUGE')
      expect(s.value('herald_process_resident_memory_bytes')).toBeGreaterThan(0)
      expect((await health.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401)
    } finally {
      await health.close()
    }
  })

  it('HERALD_METRICS_PORT: /metrics without a token, and nothing else', async () => {
    const server = await startMetricsServer(t.ctx.metrics, '127.0.0.1', 0)
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/metrics`)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
      const s = new Scrape(await res.text())
      expect(s.family('herald_pushes_total')?.type).toBe('COUNTER')
      expect(s.value('herald_process_resident_memory_bytes')).toBeGreaterThan(0)
      expect((await fetch(`http://127.0.0.1:${server.port}/v1/me`)).status).toBe(404)
      expect((await fetch(`http://127.0.0.1:${server.port}/metrics`, { method: 'POST' })).status).toBe(404)
    } finally {
      await server.close()
    }
  })

  it('shows jobs waiting by kind, and how long the oldest has been due', async () => {
    // A job of a kind no worker here runs: it waits.
    await t.database.db.query(`INSERT INTO jobs (kind, payload, run_at) VALUES ('metrics_test_kind', '{}', now() - interval '90 seconds')`)
    try {
      const s = await scrape()
      expect(s.value('herald_jobs_waiting', { kind: 'metrics_test_kind' })).toBe(1)
      expect(s.value('herald_jobs_oldest_waiting_age_seconds', { kind: 'metrics_test_kind' })).toBeGreaterThanOrEqual(89)
    } finally {
      await t.database.db.query(`DELETE FROM jobs WHERE kind = 'metrics_test_kind'`)
    }
  })
})

describe('job counters', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await createTestDatabase()
  })
  afterAll(async () => {
    await database.drop()
  })

  it('count jobs claimed, put back to run again, and failed for good', async () => {
    const metrics = new Metrics(database.db)
    let runs = 0
    const worker = new JobWorker(
      database.db,
      {
        // First run asks to wait, second fails (its last attempt).
        fire_broadcast: async () => {
          runs++
          if (runs === 1) throw new RetryLater(10)
          throw new Error('broken on purpose')
        },
      },
      { pollIntervalMs: 20, metrics },
    )
    await worker.start()
    try {
      await enqueue(database.db, 'fire_broadcast', { broadcast_id: 'brd_metrics' }, { maxAttempts: 1 })
      const start = Date.now()
      while ((await metrics.jobsFailed.get()).values.length === 0) {
        if (Date.now() - start > 10_000) throw new Error('the job did not fail in time')
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    } finally {
      await worker.stop()
    }
    const s = new Scrape(await metrics.text())
    expect(s.value('herald_jobs_claimed_total', { kind: 'fire_broadcast' })).toBe(2)
    expect(s.value('herald_jobs_retried_total', { kind: 'fire_broadcast' })).toBe(1)
    expect(s.value('herald_jobs_failed_total', { kind: 'fire_broadcast' })).toBe(1)
  })
})

describe.skipIf(!process.env.DATABASE_URL || process.env.HERALD_TEST_DB !== 'postgres')('herald serve --role worker with HERALD_METRICS_PORT', () => {
  it('serves /metrics without a token on that port, and behind the token on PORT', async () => {
    const port = await freePort()
    const worker = startWorkerProcess(t.database.url!, { HERALD_METRICS_PORT: String(port) })
    try {
      await worker.ready
      const open = await fetch(`http://127.0.0.1:${port}/metrics`)
      expect(open.status).toBe(200)
      const s = new Scrape(await open.text())
      expect(s.family('herald_jobs_waiting')?.type).toBe('GAUGE')
      expect(s.value('herald_process_resident_memory_bytes')).toBeGreaterThan(0)
      expect((await fetch(`${worker.healthUrl}/metrics`)).status).toBe(401)
      const withToken = await fetch(`${worker.healthUrl}/metrics`, { headers: admin })
      expect(withToken.status).toBe(200)
      expect(new Scrape(await withToken.text()).family('herald_jobs_claimed_total')?.type).toBe('COUNTER')
      expect(worker.output()).toContain(`Metrics on http://127.0.0.1:${port}/metrics`)
    } finally {
      await worker.kill()
    }
  }, 60_000)
})
