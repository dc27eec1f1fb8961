// What counting pushes for /metrics costs per push, standalone (no database,
// no network): `node --import tsx bench/push-metrics.ts`. A batch of 500
// pushes is tallied (one typed-array increment and one histogram observation
// each) and recorded (one counter inc per label set), against the same loop
// without metrics. Not part of `npm run bench`: it measures code, not a server.
import pino from 'pino'
import { PushMetrics } from '../src/delivery/push-metrics.ts'
import type { PushOutcome } from '../src/delivery/push-client.ts'
import { Metrics } from '../src/platform/metrics/metrics.ts'
import type { Database } from '../src/platform/db/database.ts'

const BATCH = 500
const BATCHES = 4_000
const SERVICES = ['fcm', 'mozilla', 'apple', 'wns', 'other']
const endpoint = new URL('https://fcm.googleapis.com/fcm/send/abc')
const outcomes: PushOutcome[] = [
  { kind: 'delivered', status: 201 },
  { kind: 'delivered', status: 201 },
  { kind: 'delivered', status: 201 },
  { kind: 'gone', status: 410 },
]
const noDb = { connections: () => ({ total: 1, inUse: 0, waiting: 0 }) } as unknown as Database
const pushMetrics = new PushMetrics(new Metrics(noDb), pino({ level: 'silent' }))

function withMetrics(): number {
  let sink = 0
  for (let b = 0; b < BATCHES; b++) {
    const tally = pushMetrics.tally()
    for (let i = 0; i < BATCH; i++) {
      const startedAt = performance.now()
      tally.add(SERVICES[i % 5], outcomes[i & 3], startedAt, endpoint)
      sink += i
    }
    pushMetrics.record(tally, 'brd_bench', null)
  }
  return sink
}

function without(): number {
  let sink = 0
  for (let b = 0; b < BATCHES; b++) {
    for (let i = 0; i < BATCH; i++) {
      const startedAt = performance.now()
      sink += outcomes[i & 3].kind === 'delivered' ? startedAt > 0 ? 1 : 0 : i
    }
  }
  return sink
}

function time(fn: () => number): number {
  const started = process.hrtime.bigint()
  fn()
  return Number(process.hrtime.bigint() - started) / 1e3
}

// Warm up both, then the best of five rounds each.
time(withMetrics)
time(without)
const runs = (fn: () => number) => Math.min(...Array.from({ length: 5 }, () => time(fn)))
const pushes = BATCH * BATCHES
const a = runs(withMetrics)
const b = runs(without)
console.log(`${pushes} pushes: with metrics ${(a / pushes).toFixed(3)} µs/push, without ${(b / pushes).toFixed(3)} µs/push, cost ${((a - b) / pushes).toFixed(3)} µs/push`)
