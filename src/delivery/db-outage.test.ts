// The worker side of a database outage, cut for real through a TCP relay
// between the worker and PostgreSQL (the API keeps its own connection): the
// job worker and the webhook dispatcher each say once that the database is
// away and once that it is back (not a line per poll), resume by themselves,
// and fan-out and webhooks finish with exact counts. A cut while a batch's
// pushes are at the push service must not send that batch again: its outcome
// is saved once the database is back. PostgreSQL only (the embedded database
// lives in the process and cannot be cut).
import pino from 'pino'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, testConfig, type TestApp, type TestProject } from '../../test/support/app.ts'
import { testDbMode } from '../../test/support/database.ts'
import { bulkSubscribe, send, sleep, waitForBroadcast, type Browser } from '../../test/support/delivery.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { startTcpRelay, type TcpRelay } from '../../test/support/tcp-relay.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.ts'
import { openDatabase, type Database } from '../platform/db/database.ts'
import { Metrics } from '../platform/metrics/metrics.ts'
import { createWorker, type BackgroundWorker } from '../worker.ts'

const SUBSCRIBERS = 120
const env = {
  HERALD_FANOUT_BATCH_SIZE: '40',
  HERALD_WORKER_CONCURRENCY: '2',
  // Longer than any cut here: the worker keeps its jobs through it.
  HERALD_JOB_LEASE_MS: '20000',
  HERALD_SCHEDULER_INTERVAL_MS: '100',
  HERALD_ENCRYPT_THREADS: '0',
  HERALD_WEBHOOK_RETRY_BASE_MS: '5',
}

interface LogLine {
  level: number
  msg: string
  kind?: string
}

describe.skipIf(testDbMode() !== 'postgres')('the worker through a database outage', () => {
  let t: TestApp
  let push: PushService
  let receiver: WebhookReceiver
  let relay: TcpRelay
  let workerDb: Database
  let delivery: BackgroundWorker
  let project: TestProject
  let browsers: Browser[]
  let hook: string
  const logs: LogLine[] = []

  beforeAll(async () => {
    // Each push is answered after 400 ms: a cut can fall while a batch's pushes are out.
    push = await startPushService({ delayMs: 400 })
    receiver = await startWebhookReceiver()
    t = await createTestApp(env)
    const url = new URL(t.database.url!)
    relay = await startTcpRelay(url.hostname, Number(url.port || 5432))
    workerDb = await openDatabase({ databaseUrl: relay.urlFor(t.database.url!), dataDir: null, poolSize: 5 })
    const log = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line)) })
    delivery = createWorker({ config: testConfig(env), db: workerDb, rateLimiter: t.ctx.rateLimiter, log, metrics: new Metrics(workerDb) })
    await delivery.start()
  })
  afterAll(async () => {
    relay.heal()
    await delivery.stop()
    await workerDb.close()
    await relay.close()
    await t.close()
    await push.close()
    await receiver.close()
  })
  beforeEach(async () => {
    push.reset()
    logs.length = 0
    project = await t.project({ plan: 'max' })
    browsers = await bulkSubscribe(t.database.db, project.id, push, SUBSCRIBERS)
    hook = `/hook-${project.id}`
    const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: project.auth, payload: { url: receiver.url + hook, events: ['delivered'] } })
    expect(res.statusCode).toBe(201)
  })

  function lines(text: string): LogLine[] {
    return logs.filter((l) => l.msg.includes(text))
  }

  /** Every subscriber pushed exactly once, the broadcast's counts exact, each delivered event's webhook sent and done. */
  async function expectExactlyOnce(broadcastId: string): Promise<void> {
    const done = await waitForBroadcast(t, project, broadcastId, undefined, 30_000)
    expect(done).toMatchObject({ status: 'sent', audience: SUBSCRIBERS, delivered: SUBSCRIBERS, failed: 0 })
    const perSubscription = new Map<string, number>()
    for (const r of push.received) perSubscription.set(r.subscriptionId, (perSubscription.get(r.subscriptionId) ?? 0) + 1)
    expect(perSubscription.size).toBe(SUBSCRIBERS)
    expect(browsers.every((b) => perSubscription.get(new URL(b.endpoint).pathname.slice('/push/'.length)) === 1)).toBe(true)
    const events = await t.database.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM events WHERE broadcast_id = $1 AND type = 'delivered'`,
      [broadcastId],
    )
    expect(events.rows[0].n).toBe(SUBSCRIBERS)
    // Webhooks: at least once per event, and nothing left to send.
    for (let waited = 0; ; waited += 50) {
      const ids = new Set(receiver.on(hook).map((r) => r.headers['webhook-id']))
      const left = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries')
      if (ids.size === SUBSCRIBERS && left.rows[0].n === 0) break
      if (waited > 15_000) throw new Error(`webhooks: ${ids.size} of ${SUBSCRIBERS} events, ${left.rows[0].n} rows left`)
      await sleep(50)
    }
  }

  /** One line each way per loop, and no warning per poll while the database was away. */
  function expectOutageLoggedOnce(loops: Array<'job worker' | 'webhook dispatcher'>): void {
    for (const who of loops) {
      expect(lines(`${who}: cannot reach the database`), who).toHaveLength(1)
      expect(lines(`${who}: database reachable again`), who).toHaveLength(1)
    }
    expect(logs.filter((l) => l.kind === 'claim')).toHaveLength(0)
    expect(lines('claiming webhook deliveries failed')).toHaveLength(0)
  }

  it('an idle worker says once that the database is away and once that it is back, then sends what was sent meanwhile', async () => {
    relay.reset()
    // A send accepted by the API during the outage: its wake-up never reaches the worker.
    const id = await send(t, project, { target: { type: 'all' }, notification: { title: 'Meanwhile', body: 'x' } })
    await sleep(3_000)
    expect(push.requests).toBe(0)
    const during = logs.filter((l) => l.level >= 40)
    expect(during.map((l) => l.msg)).toHaveLength(2)
    relay.heal()
    await expectExactlyOnce(id)
    expectOutageLoggedOnce(['job worker', 'webhook dispatcher'])
  })

  it('a cut while a batch is at the push service sends none of it twice, and every count is exact', async () => {
    const id = await send(t, project, { target: { type: 'all' }, notification: { title: 'Cut', body: 'x' } })
    // The first batch's pushes are out (answered in 400 ms): cut before its outcome can be saved.
    for (let waited = 0; push.requests < 1; waited += 5) {
      if (waited > 10_000) throw new Error('no push reached the push service')
      await sleep(5)
    }
    relay.reset()
    await sleep(2_500)
    expect(push.count).toBeGreaterThan(0)
    const warnings = logs.filter((l) => l.level >= 40)
    relay.heal()
    await expectExactlyOnce(id)
    // The dispatcher polls while idle, so it always notices; the job worker's
    // slots may all be busy saving their batches (then it does not claim, and says nothing).
    expect(lines('webhook dispatcher: cannot reach the database')).toHaveLength(1)
    expect(lines('job worker: database reachable again')).toHaveLength(lines('job worker: cannot reach the database').length)
    expect(lines('job worker: cannot reach the database').length).toBeLessThanOrEqual(1)
    expect(warnings.length).toBeLessThanOrEqual(4)
  })
})
