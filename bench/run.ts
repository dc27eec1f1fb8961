// `npm run bench`: Herald's figures on this machine, printed.
//
//   npm run bench -- [--subscribers 50000 | 20000,200000,1000000] [--delay 50] [--storage embedded|postgres|both]
//                    [--baseline 20000] [--small-runs 20] [--neighbour] [--only fanout|api|beacons|webhooks|import|stats] [--events 20000]
//                    [--no-personalized] [--no-backup] [--once] [--beacon-rate 5000] [--beacon-seconds 10] [--beacon-connections 50]
//
// Several sizes give one fan-out per size and storage mode and a table at the
// end (time, pushes/s, ratio to web-push, CPU per push of every thread and of
// the main thread, send returned → first push, peak RSS); web-push runs once,
// on --baseline of the subscriptions. --neighbour runs a busy loop (one core's
// worth of CPU) in another process throughout, Herald and web-push alike.
//
// Fan-out: one broadcast to N subscribers of a local HTTPS push service that
// answers after --delay ms and verifies and decrypts 1% of pushes; then the
// same subscriptions pushed with `web-push` (keep-alive, 50 in flight) for the
// ratio; then the same broadcast with two variables and two languages, rendered
// per subscriber (issue 24), for its cost per push beside the plain one. API: POST /v1/subscribe, POST /v1/send and the POST /v1/events
// beacon, requests per second, and GET /v1/me alone and during a garbage flood
// of the beacon. Beacons: shown against clicked at --beacon-rate per second, Herald's CPU per beacon (bench/beacons.ts). Webhooks: deliveries per second of --events events (bench/webhooks.ts).
// Storage defaults to both modes when DATABASE_URL is set. BENCH_HERALD_LOG=file
// appends the Herald process's log there (with HERALD_LOG_LEVEL=debug: a line per batch).
import { spawn } from 'node:child_process'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { benchApi } from './api.ts'
import { benchBeacons } from './beacons.ts'
import { benchImportExport } from './import-export.ts'
import { benchStats } from './stats.ts'
import { benchFanout, type FanoutResult, type Storage } from './fanout.ts'
import { BenchPushService, buildHerald, fmt, makeCert, ROOT, startNeighbour } from './support.ts'
import type { TestSubscription } from '../test/support/push-service.ts'
import { benchWebPush, type BaselineResult } from './webpush-baseline.ts'

const { values } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '50000' },
    delay: { type: 'string', default: '50' },
    storage: { type: 'string' },
    baseline: { type: 'string' },
    'small-runs': { type: 'string', default: '20' },
    only: { type: 'string' },
    events: { type: 'string', default: '20000' },
    'no-personalized': { type: 'boolean', default: false },
    'no-backup': { type: 'boolean', default: false },
    once: { type: 'boolean', default: false },
    'beacon-rate': { type: 'string', default: '5000' },
    'beacon-seconds': { type: 'string', default: '10' },
    'beacon-connections': { type: 'string' },
    neighbour: { type: 'boolean', default: false },
  },
})

/** HERALD_* variables given to the bench are passed on to the Herald it starts (to compare settings). */
function benchEnv(): Record<string, string> {
  return Object.fromEntries(Object.entries(process.env).filter(([k, v]) => k.startsWith('HERALD_') && v !== undefined)) as Record<string, string>
}

/** --subscribers 20000,200000,1000000: one fan-out per size and storage mode, in one table. */
const sizes = values.subscribers.split(',').map((size) => Number(size.replace(/_/g, '')))
if (sizes.some((size) => !Number.isInteger(size) || size <= 0)) throw new Error(`--subscribers: positive integers, comma-separated (got ${values.subscribers})`)
const n = Math.max(...sizes)
/** web-push's run: --baseline subscriptions (default 20,000 or fewer): its rate does not depend on the audience's size. */
const baselineCount = Math.min(n, Number(values.baseline ?? 20_000))
const delayMs = Number(values.delay)
const serverUrl = process.env.DATABASE_URL
const storages: Storage[] =
  values.storage === 'both' ? ['embedded', 'postgres'] : values.storage ? [values.storage as Storage] : serverUrl ? ['embedded', 'postgres'] : ['embedded']

buildHerald()
console.log(`Herald benchmark: ${storages.join(' + ')} storage, node ${process.version}, ${process.platform}, ` +
  `Herald run ${{ source: 'from src/ under tsx (BENCH_HERALD=source)', build: 'from the build of npm run build, dist/ (BENCH_HERALD=build)' }[process.env.BENCH_HERALD ?? ''] ?? 'as npm start runs it (scripts/start.mjs)'}`)
// The machine, and its load as each run starts: a figure taken while other work loads the cores is not a figure.
console.log(`Machine: ${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${os.availableParallelism()} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB; load average ${loadNow()} at the start`)

/** The 1-minute load average, for the lines that say when a run started. */
function loadNow(): string {
  return os.loadavg()[0].toFixed(2)
}

if (values.only === undefined || values.only === 'fanout') {
  const cert = await makeCert()
  const push = await BenchPushService.start(delayMs, 0.01, cert)
  // --neighbour: one CPU-bound process (a busy loop, one core's worth) beside Herald and web-push alike, for the ratio under contention.
  const neighbour = values.neighbour ? startNeighbour() : null
  console.log(
    `\nFan-out: ${sizes.map(fmt).join(', ')} subscribers, push service HTTPS on ${push.url}, answers after ${delayMs} ms, verifies 1%` +
      (neighbour ? '; a CPU-bound neighbour process runs throughout (--neighbour)' : ''),
  )
  const results: FanoutResult[] = []
  let baselineSubscriptions: TestSubscription[] = []
  for (const n of sizes) {
    // Past 200,000 the subscriptions share 1,024 key pairs (the push service's memory); Herald's work per push is the same.
    const subscriptions = await push.createSubscriptions(n, n > 200_000)
    if (baselineSubscriptions.length < Math.min(n, baselineCount)) baselineSubscriptions = subscriptions.slice(0, baselineCount)
    for (const storage of storages) {
      const loadAtStart = loadNow()
      const result = await benchFanout({ storage, subscriptions, push, cert, delayMs, serverUrl, port: 0, smallRuns: Number(values['small-runs']), heraldEnv: benchEnv() })
      results.push(result)
      console.log(
        `  herald (${storage}, ${fmt(n)}; load ${loadAtStart} at its start): ${fmt(result.pushesPerSecond)} pushes/s; from send: first push ${fmt(result.firstPushMs)} ms (${fmt(result.firstPushAfterReturnMs)} ms after it returned), ` +
          `p50 ${fmt(result.p50Ms)} ms, p99 ${fmt(result.p99Ms)} ms, last ${fmt(result.lastPushMs)} ms; ` +
          `peak RSS ${result.peakRssMb} MB; CPU ${fmt(result.cpuPerPushMicros)} µs/push (all threads), main thread ${fmt(result.mainThreadCpuPerPushMicros)} µs/push; delivered ${fmt(result.delivered)}; ` +
          `duplicates ${result.check.duplicates}, missing ${result.check.missing}, rejected ${result.check.rejected}, decrypted and verified ${fmt(result.check.verified)}; seeded in ${result.seedSeconds.toFixed(1)} s`,
      )
      if (result.small.runs > 0) {
        console.log(
          `  herald (${storage}): 10-subscriber broadcast, POST /v1/send returned → 10th push accepted: ` +
            `p50 ${fmt(result.small.p50Ms)} ms, p99 ${fmt(result.small.p99Ms)} ms over ${result.small.runs} sends`,
        )
      }
    }
    if (!values['no-personalized'] && n <= 50_000) {
      for (const plain of results.filter((r) => r.subscribers === n)) {
        const storage = plain.storage
        const result = await benchFanout({ storage, subscriptions, push, cert, delayMs, serverUrl, port: 0, smallRuns: Number(values['small-runs']), heraldEnv: benchEnv(), personalized: true })
        console.log(
          `  herald (${storage}), two variables + two languages: ${fmt(result.pushesPerSecond)} pushes/s (plain: ${fmt(plain.pushesPerSecond)}); ` +
            `CPU ${fmt(result.cpuPerPushMicros)} µs/push (plain: ${fmt(plain.cpuPerPushMicros)}, +${fmt(result.cpuPerPushMicros - plain.cpuPerPushMicros)}); ` +
            `peak RSS ${result.peakRssMb} MB; 10-subscriber p50 ${fmt(result.small.p50Ms)} ms; delivered ${fmt(result.delivered)}, verified ${fmt(result.check.verified)}`,
        )
      }
    }
  }
  const baselineLoad = loadNow()
  const baseline: BaselineResult = await benchWebPush({
    subscriptions: baselineSubscriptions,
    push,
    cert,
    vapid: results[0].vapid,
    payload: JSON.stringify({ v: 1, title: 'Benchmark', body: 'A notification of ordinary size, with a body of a sentence or two.', url: '/bench' }),
  })
  const neighbourCpu = neighbour ? await neighbour.stop() : null
  console.log(`  web-push (keep-alive agent, 50 in flight; load ${baselineLoad} at its start): ${fmt(baseline.pushesPerSecond)} pushes/s (${fmt(baseline.pushes)} pushes in ${baseline.seconds.toFixed(1)} s, ${baseline.failed} failed); CPU ${fmt(baseline.cpuPerPushMicros)} µs/push`)
  if (neighbourCpu !== null) console.log(`  neighbour: ${neighbourCpu.toFixed(0)}% of a core on average while it ran`)
  console.log(`\n  | storage | subscribers | time | Herald pushes/s | web-push pushes/s | ratio | CPU µs/push (all threads) | main thread µs/push | send returned → first push | peak RSS | duplicates / missing / verified |`)
  console.log(`  |---|---|---|---|---|---|---|---|---|---|---|`)
  for (const r of results) {
    console.log(
      `  | ${r.storage} | ${fmt(r.subscribers)} | ${(r.lastPushMs / 1000).toFixed(1)} s | ${fmt(r.pushesPerSecond)} | ${fmt(baseline.pushesPerSecond)} | **${(r.pushesPerSecond / baseline.pushesPerSecond).toFixed(2)}×** | ` +
        `${fmt(r.cpuPerPushMicros)} | ${fmt(r.mainThreadCpuPerPushMicros)} | ${fmt(r.firstPushAfterReturnMs)} ms | ${r.peakRssMb} MB | ${r.check.duplicates} / ${r.check.missing} / ${fmt(r.check.verified)} |`,
    )
  }
  await push.close()
}

if (values.only === undefined || values.only === 'api') {
  for (const storage of storages) await benchApi(storage, serverUrl)
}

if (values.only === undefined || values.only === 'beacons') {
  for (const storage of storages) await benchBeacons({ storage, serverUrl, rate: Number(values['beacon-rate']), seconds: Number(values['beacon-seconds']), connections: values['beacon-connections'] ? Number(values['beacon-connections']) : undefined })
}

if (values.only === undefined || values.only === 'webhooks') {
  // Webhook delivery throughput: bench/webhooks.ts, run as it is on its own, per storage mode.
  for (const storage of storages) {
    console.log(`\nWebhooks (${storage} storage):`)
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/webhooks.ts'), '--storage', storage, '--events', values.events], { stdio: 'inherit' })
    await new Promise((resolve) => child.once('exit', resolve))
  }
}

if (values.only === undefined || values.only === 'import') {
  // --no-backup: import and export only (herald backup and restore of a million take as long again); --once: no second import.
  for (const storage of storages) await benchImportExport(storage, serverUrl, n, { backup: !values['no-backup'], again: !values.once })
}

if (values.only === undefined || values.only === 'stats') {
  // GET /v1/stats over a year of 10 million events, and what the rollup adds to the writes (bench/stats.ts).
  for (const storage of storages) await benchStats(storage, serverUrl)
}
