// Herald's fan-out, measured end to end: one broadcast to N subscribers through
// `herald serve` (its own process), pushed to the bench push service.
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { openDatabase } from '../src/platform/db/database.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { createProject } from '../src/projects/projects.service.ts'
import { updateProject } from '../src/projects/projects.store.ts'
import { bulkSubscribe } from '../test/support/delivery.ts'
import type { TestSubscription } from '../test/support/push-service.ts'
import { percentile, sleep, startHerald, type BenchCert, type BenchPushService } from './support.ts'

export type Storage = 'embedded' | 'postgres'

export interface FanoutResult {
  storage: Storage
  subscribers: number
  pushesPerSecond: number
  firstPushMs: number
  /** From POST /v1/send returning (202) to the push service receiving the first push. */
  firstPushAfterReturnMs: number
  p50Ms: number
  p99Ms: number
  lastPushMs: number
  peakRssMb: number
  /** Herald's CPU (every thread) from POST /v1/send to the last push, per push, in µs. */
  cpuPerPushMicros: number
  /** The same, of Herald's main thread alone (the event loop: HTTP, TLS, and the embedded database unless it has a thread of its own). */
  mainThreadCpuPerPushMicros: number
  delivered: number
  /** What the push service received: duplicates, missing and rejected are 0, or the bench fails. */
  check: { duplicates: number; missing: number; rejected: number; verified: number }
  small: { p50Ms: number; p99Ms: number; runs: number }
  vapid: { publicKey: string; privateKey: string }
  /** Seconds spent creating the database and inserting the subscribers (SQL, not the API). */
  seedSeconds: number
}

/** Production refuses a public URL that is not https; nothing in a bench fetches it. */
const BENCH_PUBLIC_URL = 'https://herald.localhost'
// 32+ characters: production refuses a shorter operator token (platform/production-settings.ts).
const ADMIN = `bench-admin-${randomBytes(16).toString('hex')}`
const UNLIMITED = { monthly_pushes: 1_000_000_000, subscribers: 100_000_000, requests_per_minute: 10_000_000 }

interface Prepared {
  env: Record<string, string>
  projectId: string
  apiKey: string
  vapid: { publicKey: string; privateKey: string }
  cleanup(): Promise<void>
}

/**
 * The personalized case (issue 24): two variables (a tag every subscriber
 * has, and the send's data) and two languages besides the default fields,
 * for subscribers a third French, a third Brazilian, a third without locale.
 */
const personalizedSend = {
  notification: { title: 'Hi {{ tags.first_name | default: "there" }}', body: 'Order {{ data.order_id }} ships today, with a body of a sentence or two.', url: '/bench/{{data.order_id}}' },
  data: { order_id: 'A-1234' },
  localized: {
    fr: { title: 'Bonjour {{ tags.first_name }}', body: 'La commande {{ data.order_id }} part aujourd’hui, avec une phrase ou deux.' },
    pt: { title: 'Olá {{ tags.first_name }}', body: 'O pedido {{ data.order_id }} sai hoje, com uma ou duas frases.' },
  },
}

/** A fresh database with one project holding every subscription (with a first_name tag and a locale for the personalized case). */
async function prepare(storage: Storage, subscriptions: TestSubscription[], serverUrl: string | undefined, personalized = false): Promise<Prepared> {
  let env: Record<string, string>
  let cleanup: () => Promise<void>
  let databaseUrl: string | null = null
  let dataDir: string | null = null
  if (storage === 'postgres') {
    if (!serverUrl) throw new Error('postgres storage needs DATABASE_URL')
    const name = `herald_bench_${randomBytes(4).toString('hex')}`
    const admin = new pg.Client({ connectionString: serverUrl })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${name}`)
    await admin.end()
    const url = new URL(serverUrl)
    url.pathname = `/${name}`
    databaseUrl = url.toString()
    env = { DATABASE_URL: databaseUrl }
    cleanup = async () => {
      const client = new pg.Client({ connectionString: serverUrl })
      await client.connect()
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await client.end()
    }
  } else {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-data-'))
    env = { HERALD_DATA_DIR: dataDir }
    cleanup = async () => fs.rmSync(dataDir!, { recursive: true, force: true })
  }
  // The embedded database opens in one process at a time: fill it, close it, then start Herald on it.
  const db = await openDatabase({ databaseUrl, dataDir })
  await migrate(db)
  const created = await createProject(db, { name: 'bench', plan: 'max' })
  await updateProject(db, created.project.id, { limits: UNLIMITED })
  const fakePush = { createSubscription: (() => { let i = 0; return () => subscriptions[i++] })() }
  await bulkSubscribe(db, created.project.id, fakePush as never, subscriptions.length)
  if (personalized) {
    await db.query(
      `UPDATE subscribers SET tags = jsonb_build_object('first_name', 'Sub' || right(id, 5)),
              locale = (ARRAY['fr-FR', 'pt-BR', NULL])[1 + abs(hashtext(id)) % 3]
        WHERE project_id = $1`,
      [created.project.id],
    )
  }
  await db.close()
  return {
    env,
    projectId: created.project.id,
    apiKey: created.apiKey,
    vapid: { publicKey: created.project.vapid_public, privateKey: created.project.vapid_private },
    cleanup,
  }
}

async function post(url: string, key: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: res.status, json: (await res.json()) as Record<string, unknown> }
}

async function waitForPushes(push: BenchPushService, n: number, timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const progress = await push.count()
    if (progress.count >= n) return (await push.stats()).arrivals
    if (Date.now() > deadline) throw new Error(`only ${progress.count} of ${n} pushes arrived; rejected ${progress.rejectedCount}: ${JSON.stringify(progress.rejected)}`)
    await sleep(n > 100 ? 200 : 5)
  }
}

const notification = { title: 'Benchmark', body: 'A notification of ordinary size, with a body of a sentence or two.', url: '/bench' }

export async function benchFanout(options: {
  storage: Storage
  subscriptions: TestSubscription[]
  push: BenchPushService
  cert: BenchCert
  delayMs: number
  serverUrl?: string
  port: number
  smallRuns: number
  heraldEnv?: Record<string, string>
  /** Send with two variables and two languages (issue 24) instead of the plain notification. */
  personalized?: boolean
}): Promise<FanoutResult> {
  const { push, subscriptions } = options
  const n = subscriptions.length
  const seedStart = Date.now()
  const prepared = await prepare(options.storage, subscriptions, options.serverUrl, options.personalized)
  const seedSeconds = (Date.now() - seedStart) / 1000
  const body = options.personalized ? { target: { type: 'all' }, ...personalizedSend } : { target: { type: 'all' }, notification }
  const herald = await startHerald(
    {
      ...prepared.env,
      NODE_ENV: 'production',
      HERALD_ADMIN_TOKEN: ADMIN,
      HERALD_PUBLIC_URL: BENCH_PUBLIC_URL,
      HERALD_ALLOW_PRIVATE_ENDPOINTS: 'true',
      NODE_EXTRA_CA_CERTS: options.cert.certFile,
      ...options.heraldEnv,
    },
    options.port,
  )
  try {
    await push.reset()
    const cpuBefore = herald.cpuMicros()
    const mainBefore = herald.mainThreadCpuMicros()
    const start = Date.now()
    const sent = await post(`${herald.url}/v1/send`, prepared.apiKey, body)
    const returned = Date.now() - start
    if (sent.status !== 202) throw new Error(`send failed: ${sent.status} ${JSON.stringify(sent.json)}`)
    const arrivals = (await waitForPushes(push, n, 30 * 60_000)).map((at) => at - start).sort((a, b) => a - b)
    const last = arrivals[arrivals.length - 1]
    // BENCH_BUCKETS=1: pushes received per 250 ms from the send (where a ramp or a stall shows); BENCH_BUCKETS=25: per 25 ms.
    if (process.env.BENCH_BUCKETS) {
      const width = Number(process.env.BENCH_BUCKETS) > 1 ? Number(process.env.BENCH_BUCKETS) : 250
      const buckets: number[] = []
      for (const at of arrivals) buckets[Math.floor(at / width)] = (buckets[Math.floor(at / width)] ?? 0) + 1
      console.log(`  per ${width} ms: ${Array.from(buckets, (count) => count ?? 0).join(' ')}`)
    }
    const cpuPerPushMicros = (herald.cpuMicros() - cpuBefore) / n
    const mainThreadCpuPerPushMicros = (herald.mainThreadCpuMicros() - mainBefore) / n
    // Herald has answered every push by now; the broadcast records it a moment later.
    let state: Record<string, unknown> = {}
    for (let i = 0; i < 100; i++) {
      state = (await (await fetch(`${herald.url}/v1/broadcasts/${sent.json.broadcast_id}`, { headers: { authorization: `Bearer ${prepared.apiKey}` } })).json()) as Record<string, unknown>
      if (state.status === 'sent') break
      await sleep(100)
    }
    // Every subscription exactly once, nothing refused, and the sampled pushes decrypted and verified.
    const received = await push.stats()
    const check = { duplicates: received.count - received.distinct, missing: n - received.distinct, rejected: received.rejectedCount, verified: received.verified }
    if (check.duplicates !== 0 || check.missing !== 0 || check.rejected !== 0 || check.verified === 0) {
      throw new Error(`fan-out not clean: ${JSON.stringify(check)} ${JSON.stringify(received.rejected)}`)
    }

    // Small broadcasts: 10 subscribers, from POST /v1/send returning to the push service accepting the 10th push.
    const small = await post(`${herald.url}/admin/v1/projects`, ADMIN, { name: 'small', plan: 'max' })
    const smallKey = small.json.api_key as string
    for (const sub of await push.createSubscriptions(10)) {
      await fetch(`${herald.url}/v1/subscribe?project=${small.json.id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(sub) })
    }
    const latencies: number[] = []
    for (let run = 0; run < options.smallRuns; run++) {
      await push.reset()
      const res = await post(`${herald.url}/v1/send`, smallKey, body)
      const returned = Date.now()
      if (res.status !== 202) throw new Error(`small send failed: ${res.status}`)
      const times = await waitForPushes(push, 10, 30_000)
      // Accepted = answered 201, which the push service does delayMs after the push arrives.
      latencies.push(Math.max(...times) + options.delayMs - returned)
    }
    latencies.sort((a, b) => a - b)

    return {
      storage: options.storage,
      subscribers: n,
      pushesPerSecond: n / (last / 1000),
      firstPushMs: arrivals[0],
      firstPushAfterReturnMs: arrivals[0] - returned,
      p50Ms: percentile(arrivals, 50),
      p99Ms: percentile(arrivals, 99),
      lastPushMs: last,
      peakRssMb: herald.peakRssMb(),
      cpuPerPushMicros,
      mainThreadCpuPerPushMicros,
      delivered: Number(state.delivered ?? 0),
      check,
      small: { p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), runs: latencies.length },
      vapid: prepared.vapid,
      seedSeconds,
    }
  } finally {
    await herald.stop()
    await prepared.cleanup()
  }
}
