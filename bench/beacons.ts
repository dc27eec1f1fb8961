// Shown beacons against click beacons (issue 25, docs/funnel.md): beacons
// offered at a fixed rate (default 5,000 per second, autocannon's
// overallRate) to POST /v1/events of `herald serve` in its own process, one
// kind at a time, for the same broadcast. Printed per kind: the rate
// achieved, the latency, and the CPU time of Herald's process (all its
// threads: with the embedded database that includes the database's work;
// with PostgreSQL the server's own processes are not counted) per beacon
// recorded, and what the database holds after (events rows, the counts).
//
//   npm run bench -- --only beacons [--beacon-rate 5000] [--beacon-seconds 10] [--beacon-connections 50] [--storage embedded|postgres|both]
import { randomBytes } from 'node:crypto'
import os from 'node:os'
import autocannon from 'autocannon'
import type { Storage } from './fanout.ts'
import { benchStorage, fmt, startHerald } from './support.ts'

/**
 * Default connections. autocannon is a closed loop per connection: more let a
 * slow transaction hold the offered rate back less (PostgreSQL reached twice
 * the rate with 200), but on a loaded machine with the embedded database 200
 * only queue requests in Herald's one thread (clicks fell below 200/s).
 */
export const BEACON_CONNECTIONS = 50
const BENCH_PUBLIC_URL = 'https://herald.localhost'
const ADMIN = `bench-admin-${randomBytes(16).toString('hex')}`

export interface BeaconBenchOptions {
  storage: Storage
  serverUrl: string | undefined
  /** Beacons offered per second (all connections together). */
  rate: number
  seconds: number
  /** Default BEACON_CONNECTIONS. */
  connections?: number
}

interface KindResult {
  kind: 'clicked' | 'shown'
  offered: number
  recorded: number
  perSecond: number
  p50Ms: number
  p99Ms: number
  cpuMicrosPerBeacon: number
  errors: number
}

export async function benchBeacons(options: BeaconBenchOptions): Promise<void> {
  const { storage, serverUrl } = options
  const CONNECTIONS = options.connections ?? BEACON_CONNECTIONS
  const { env, cleanup } = await benchStorage(storage, serverUrl, 'beacons')
  const herald = await startHerald({ ...env, NODE_ENV: 'production', HERALD_ADMIN_TOKEN: ADMIN, HERALD_PUBLIC_URL: BENCH_PUBLIC_URL }, 0)
  try {
    const created = await fetch(`${herald.url}/admin/v1/projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'beacon-bench', plan: 'max' }),
    })
    const project = (await created.json()) as { id: string; api_key: string }
    await fetch(`${herald.url}/admin/v1/projects/${project.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ limits: { requests_per_minute: 100_000_000 } }),
    })
    const made = await fetch(`${herald.url}/v1/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${project.api_key}` },
      body: JSON.stringify({ target: { type: 'all' }, notification: { title: 'Hello', body: 'Bench' } }),
    })
    const { broadcast_id } = (await made.json()) as { broadcast_id: string }
    const load = os.loadavg().map((l) => l.toFixed(2)).join(', ')
    console.log(
      `\nBeacons (${storage} storage): ${fmt(options.rate)} beacons/s offered for ${options.seconds} s per kind over ${CONNECTIONS} connections, ` +
        `text/plain as sendBeacon sends them; load average before: ${load} (${os.cpus().length} cores, shared)`,
    )
    const results: KindResult[] = []
    // Clicks first, as today's baseline; each kind on a warm server (one second of it first, not counted).
    for (const kind of ['clicked', 'shown'] as const) {
      const body = JSON.stringify({ type: kind, broadcast_id })
      const run = (seconds: number) =>
        autocannon({
          url: `${herald.url}/v1/events?project=${project.id}`,
          connections: CONNECTIONS,
          duration: seconds,
          overallRate: options.rate,
          method: 'POST',
          headers: { 'content-type': 'text/plain' },
          body,
        })
      await run(1)
      const cpuBefore = herald.cpuMicros()
      const result = await run(options.seconds)
      const cpu = herald.cpuMicros() - cpuBefore
      const recorded = result['2xx']
      results.push({
        kind,
        offered: options.rate * options.seconds,
        recorded,
        perSecond: recorded / result.duration,
        p50Ms: result.latency.p50,
        p99Ms: result.latency.p99,
        cpuMicrosPerBeacon: recorded > 0 ? cpu / recorded : NaN,
        errors: result.non2xx + result.errors,
      })
    }
    for (const r of results) {
      console.log(
        `  ${r.kind.padEnd(7)}: ${fmt(r.perSecond)} beacons/s answered 202 (${fmt(r.recorded)} of ${fmt(r.offered)} offered), p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, ` +
          `${r.errors} errors; Herald CPU ${fmt(r.cpuMicrosPerBeacon)} µs per beacon`,
      )
    }
    const [clicked, shown] = results
    console.log(`  shown / clicked CPU per beacon: ${(shown.cpuMicrosPerBeacon / clicked.cpuMicrosPerBeacon).toFixed(2)}x`)
    const view = (await (await fetch(`${herald.url}/v1/broadcasts/${broadcast_id}`, { headers: { authorization: `Bearer ${project.api_key}` } })).json()) as { clicked: number; shown: number }
    console.log(`  the broadcast after: clicked ${fmt(view.clicked)}, shown ${fmt(view.shown)} (warm-up seconds included); load average after: ${os.loadavg().map((l) => l.toFixed(2)).join(', ')}`)
  } finally {
    await herald.stop()
    await cleanup()
  }
}
