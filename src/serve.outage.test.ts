// PostgreSQL going away under running Herald processes, for real: every
// connection of `serve --role worker|api` child processes goes through a TCP
// relay that the test cuts (reset: a server restart) and heals, or that
// silences only the LISTEN connection (a connection the network killed
// without a word). The processes must stay up, log the outage once, answer
// /readyz 503 then 200, and finish their work with exact counts.
// PostgreSQL only: the embedded database lives inside its one process.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../test/support/app.ts'
import { testDbMode } from '../test/support/database.ts'
import { startPushService, type PushService } from '../test/support/push-service.ts'
import { bulkSubscribe, send, sleep, waitForBroadcast } from '../test/support/delivery.ts'
import { startTcpRelay, type TcpRelay } from '../test/support/tcp-relay.ts'
import { startWorkerProcess, type WorkerProcess } from '../test/support/worker-process.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../test/support/webhook-receiver.ts'

const OUTAGE_MS = 3_000
const UNREACHABLE = /^database unreachable/
const REACHABLE_AGAIN = 'database reachable again'

const workerEnv = {
  HERALD_FANOUT_BATCH_SIZE: '100',
  HERALD_WORKER_CONCURRENCY: '2',
  HERALD_JOB_LEASE_MS: '1500',
  HERALD_SCHEDULER_INTERVAL_MS: '200',
  HERALD_ENCRYPT_THREADS: '1',
  HERALD_WEBHOOK_RETRY_BASE_MS: '50',
}

async function status(url: string): Promise<number> {
  return fetch(url, { signal: AbortSignal.timeout(5_000) }).then(
    (res) => res.status,
    () => 0,
  )
}

/** Polls url until it answers want, or fails after timeoutMs. */
async function waitForStatus(url: string, want: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last = 0
  while (Date.now() < deadline) {
    last = await status(url)
    if (last === want) return
    await sleep(100)
  }
  throw new Error(`${url} answered ${last}, not ${want}, for ${timeoutMs} ms`)
}

function alive(p: WorkerProcess): boolean {
  return p.child.exitCode === null && p.child.signalCode === null
}

function outageLines(p: WorkerProcess): { unreachable: number; back: number } {
  const messages = p.logs.map((l) => String(l.msg))
  return { unreachable: messages.filter((m) => UNREACHABLE.test(m)).length, back: messages.filter((m) => m === REACHABLE_AGAIN).length }
}

describe.skipIf(testDbMode() !== 'postgres')('a PostgreSQL outage under running processes', () => {
  let t: TestApp
  let push: PushService
  let receiver: WebhookReceiver
  let relay: TcpRelay
  let viaRelay: string
  const processes: WorkerProcess[] = []

  function start(env: Record<string, string> = {}, role: 'worker' | 'api' = 'worker'): WorkerProcess {
    const p = startWorkerProcess(viaRelay, { ...workerEnv, ...env }, role)
    processes.push(p)
    return p
  }

  beforeAll(async () => {
    push = await startPushService({ delayMs: 20 })
    receiver = await startWebhookReceiver()
    // The test's own API and its reads go straight to the server; the processes under test go through the relay.
    t = await createTestApp()
    const server = new URL(t.database.url!)
    relay = await startTcpRelay(server.hostname, Number(server.port || 5432))
    viaRelay = relay.urlFor(t.database.url!)
  })
  // A test that failed mid-outage leaves the next one a working database.
  afterEach(() => relay?.heal())
  afterAll(async () => {
    relay?.heal()
    await Promise.all(processes.map((p) => p.kill('SIGKILL')))
    await t?.close()
    await relay?.close()
    await push?.close()
    await receiver?.close()
  })

  async function project(subscribers: number): Promise<TestProject> {
    const created = await t.project({ plan: 'max' })
    await bulkSubscribe(t.database.db, created.id, push, subscribers)
    return created
  }

  function pushesPerSubscription(): Map<string, number> {
    const counts = new Map<string, number>()
    for (const r of push.received) counts.set(r.subscriptionId, (counts.get(r.subscriptionId) ?? 0) + 1)
    return counts
  }

  it('survives a restart, then a network cut, mid fan-out: workers and API stay up, /readyz says 503 then 200, each outage is logged once, pushes and webhooks complete', async () => {
    push.reset()
    const workers = [start(), start()]
    const api = start({}, 'api')
    const all = [...workers, api]
    await Promise.all(all.map((p) => p.ready))
    const health = all.map((p) => p.healthUrl!)
    for (const url of health) expect(await status(`${url}/readyz`), url).toBe(200)

    // The server restarts (connections reset, new ones refused), then the network is cut (every byte swallowed).
    for (const [round, cut] of [[1, () => relay.reset()], [2, () => relay.blackhole()]] as const) {
      push.reset()
      const audience = 1_000
      const p = await project(audience)
      const hook = `/round-${round}`
      const registered = await t.app.inject({
        method: 'POST',
        url: '/v1/webhooks',
        headers: p.auth,
        payload: { url: receiver.url + hook, events: ['delivered', 'failed'] },
      })
      expect(registered.statusCode).toBe(201)
      const id = await send(t, p, { target: { type: 'all' }, notification: { title: 'Outage', body: `round ${round}` } })
      await push.waitForCount(200, 30_000)
      cut()
      const cutAt = Date.now()
      // A cut-off database makes /readyz wait for its ping's timeout (2 s), so all at once.
      await Promise.all(health.map((url) => waitForStatus(`${url}/readyz`, 503, 10_000)))
      for (const url of health) expect(await status(`${url}/healthz`), url).toBe(200)
      await sleep(Math.max(0, OUTAGE_MS - (Date.now() - cutAt)))
      for (const w of all) expect(alive(w), w.output()).toBe(true)
      relay.heal()

      await Promise.all(health.map((url) => waitForStatus(`${url}/readyz`, 200, 15_000)))
      const done = await waitForBroadcast(t, p, id, undefined, 60_000)
      expect(done.status).toBe('sent')
      expect(done.delivered + done.failed).toBe(audience)
      expect(pushesPerSubscription().size).toBe(audience)
      // Every push's webhook arrives too (at least once: one sent but not recorded at the cut goes again).
      const hooked = () => new Set(receiver.on(hook).map((r) => (r.json as { subscriber_id: string }).subscriber_id)).size
      for (let waited = 0; hooked() < audience && waited < 30_000; waited += 100) await sleep(100)
      expect(hooked()).toBe(audience)
      for (const w of all) expect(alive(w), w.output()).toBe(true)

      // One line as the outage starts and one as it ends, per process: not one per retry.
      // The end is logged once the server has gone on answering for a moment (OUTAGE_SETTLE_MS), and reaches the pipe a little after.
      const logged = () => all.every((w) => outageLines(w).back >= round)
      for (let waited = 0; !logged() && waited < 10_000; waited += 100) await sleep(100)
      await sleep(300)
      for (const w of all) expect(outageLines(w), w.output()).toEqual({ unreachable: round, back: round })
    }
    await Promise.all(all.map((w) => w.kill('SIGKILL')))
  }, 120_000)

  it('keeps an idle worker, and one started during the outage, alive; both then work, and SIGTERM stops them with exit 0 and a log line', async () => {
    push.reset()
    const idle = start()
    await idle.ready
    // Let its start-up work settle, so it is idle when the database goes.
    await sleep(500)
    relay.reset()
    const late = start()
    await sleep(OUTAGE_MS + 500)
    // The late one takes a few seconds to load before it tries the database.
    for (let waited = 0; outageLines(late).unreachable === 0 && waited < 15_000; waited += 100) await sleep(100)
    for (const w of [idle, late]) expect(alive(w), w.output()).toBe(true)
    expect(outageLines(late).unreachable, late.output()).toBe(1)
    relay.heal()
    await late.ready
    await waitForStatus(`${late.healthUrl}/readyz`, 200, 15_000)

    const p = await project(50)
    const id = await send(t, p, { target: { type: 'all' }, notification: { title: 'After', body: 'the outage' } })
    const done = await waitForBroadcast(t, p, id, undefined, 30_000)
    expect(done).toMatchObject({ status: 'sent', audience: 50, delivered: 50, failed: 0 })
    for (const w of [idle, late]) {
      expect(alive(w), w.output()).toBe(true)
      expect(outageLines(w).unreachable, w.output()).toBe(1)
    }

    for (const w of [idle, late]) {
      w.child.kill('SIGTERM')
      expect(await w.exited, w.output()).toBe(0)
      const stopping = w.logs.find((l) => l.signal === 'SIGTERM' && String(l.msg).startsWith('stopping'))
      expect(stopping, w.output()).toBeDefined()
      expect(w.logs.some((l) => l.msg === 'stopped'), w.output()).toBe(true)
    }
  }, 60_000)

  it('replaces a LISTEN connection the network silenced, and finds the new work at once rather than at the next poll', async () => {
    push.reset()
    // A poll every minute: only a wake-up can explain a broadcast done within the 20 s below.
    const worker = start({ HERALD_SCHEDULER_INTERVAL_MS: '60000' })
    await worker.ready
    await sleep(500)
    // The job worker's and the webhook dispatcher's LISTEN connections go silent; the pool keeps working.
    expect(relay.blackholeMatching('LISTEN')).toBeGreaterThanOrEqual(1)

    const p = await project(20)
    const id = await send(t, p, { target: { type: 'all' }, notification: { title: 'Wake', body: 'up' } })
    const done = await waitForBroadcast(t, p, id, undefined, 20_000)
    expect(done).toMatchObject({ status: 'sent', delivered: 20, failed: 0 })
    expect(alive(worker)).toBe(true)
    await worker.kill()
  }, 60_000)
})
