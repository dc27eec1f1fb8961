// Shared pieces of the benchmarks: the push service child, Herald as a child
// process, percentiles and memory readings.
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import selfsigned from 'selfsigned'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import type { TestSubscription } from '../test/support/push-service.ts'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

export interface PushServiceStats {
  count: number
  requests: number
  verified: number
  /** Subscriptions with a push accepted, each once. */
  distinct: number
  rejected: Array<{ status: number; reason: string }>
  rejectedCount: number
  arrivals: number[]
}

export class BenchPushService {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {}

  static async start(delayMs: number, verifySample: number, tls: BenchCert): Promise<BenchPushService> {
    const child = fork(path.join(ROOT, 'bench/push-service-process.ts'), [], {
      execArgv: ['--import', 'tsx'],
      env: {
        ...process.env,
        BENCH_PUSH_DELAY_MS: String(delayMs),
        BENCH_PUSH_VERIFY_SAMPLE: String(verifySample),
        BENCH_TLS_KEY: tls.key,
        BENCH_TLS_CERT: tls.cert,
      },
      serialization: 'advanced',
    })
    // A bench that fails midway must not leave its push service running.
    process.once('exit', () => child.kill())
    const ready = await new Promise<{ url: string }>((resolve) => child.once('message', (m) => resolve(m as { url: string })))
    return new BenchPushService(child, ready.url)
  }

  private ask<T>(message: object): Promise<T> {
    return new Promise((resolve) => {
      this.child.once('message', (reply) => resolve(reply as T))
      this.child.send(message)
    })
  }

  /** sharedKeys: the subscriptions share 1,024 key pairs (a million subscriptions; each still its own endpoint). */
  async createSubscriptions(n: number, sharedKeys = false): Promise<TestSubscription[]> {
    const out: TestSubscription[] = []
    for (let done = 0; done < n; done += 20_000) {
      const reply = await this.ask<{ subscriptions: TestSubscription[] }>({ type: 'create', n: Math.min(20_000, n - done), sharedKeys })
      for (const subscription of reply.subscriptions) out.push(subscription)
    }
    return out
  }

  /** Pushes accepted so far, and refusals (cheap to poll: no arrival times). */
  count(): Promise<{ count: number; rejectedCount: number; rejected: Array<{ status: number; reason: string }> }> {
    return this.ask({ type: 'count' })
  }

  stats(): Promise<PushServiceStats> {
    return this.ask({ type: 'stats' })
  }

  async reset(): Promise<void> {
    await this.ask({ type: 'reset' })
  }

  async close(): Promise<void> {
    this.child.send({ type: 'close' })
    await new Promise((resolve) => this.child.once('exit', resolve))
  }
}

export interface BenchCert {
  key: string
  cert: string
  /** The certificate in a file, for NODE_EXTRA_CA_CERTS. */
  certFile: string
}

/** A throwaway certificate for 127.0.0.1: push services are HTTPS, and web-push speaks nothing else. */
export async function makeCert(): Promise<BenchCert> {
  const pems = await selfsigned.generate([{ name: 'commonName', value: '127.0.0.1' }], {
    notAfterDate: new Date(Date.now() + 86_400_000),
    keyType: 'ec',
    curve: 'P-256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  })
  const certFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-')), 'cert.pem')
  fs.writeFileSync(certFile, pems.cert)
  return { key: pems.private, cert: pems.cert, certFile }
}

export interface HeraldProcess {
  child: ChildProcess
  url: string
  /** Peak resident memory of the process so far (VmHWM), in MB. */
  peakRssMb(): number
  /** CPU time the process has used so far, every thread of it (user + system), in µs. */
  cpuMicros(): number
  /** CPU time of the process's main thread alone (its event loop), in µs. */
  mainThreadCpuMicros(): number
  stop(): Promise<void>
}

/** A TCP port free on 127.0.0.1 right now (other people's benchmarks may hold fixed ones). */
export async function freePort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/**
 * How the bench runs Herald: as `npm start` does (scripts/start.mjs, which
 * runs dist/ or first compiles src/ into it with esbuild), the way the
 * README starts it (issue 26 measures that); BENCH_HERALD=build runs the
 * build of `npm run build` (tsc, dist/src/main.js) directly, as a deployment
 * does; BENCH_HERALD=source runs src/main.ts under tsx (~70 MB more resident
 * for tsx's loader thread).
 */
export const HERALD_ENTRY: string[] = process.env.BENCH_HERALD === 'source'
  ? ['--import', 'tsx', path.join(ROOT, 'src/main.ts')]
  : process.env.BENCH_HERALD === 'build'
    ? [path.join(ROOT, 'dist/src/main.js')]
    : [...npmStartFlags(), path.join(ROOT, 'scripts/start.mjs')]

/** The node flags of package.json's `start` script (`node --max-semi-space-size=8 scripts/start.mjs serve`): the bench starts Herald with the same. */
function npmStartFlags(): string[] {
  const start: string = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts.start
  const words = start.split(/\s+/)
  return words.slice(words.indexOf('node') + 1, words.findIndex((word) => word.endsWith('start.mjs')))
}

/** BENCH_HERALD=build: builds dist/ with tsc first (always, so it matches src/); `npm start` compiles its own. */
export function buildHerald(): void {
  if (process.env.BENCH_HERALD !== 'build') return
  execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs')], { stdio: ['ignore', 'ignore', 'inherit'] })
}

/** Starts `herald serve` (all roles) as its own process and waits for /readyz. Port 0: a free one. */
export async function startHerald(env: Record<string, string>, port: number): Promise<HeraldProcess> {
  if (port === 0) port = await freePort()
  // BENCH_PROFILE=dir writes a CPU profile of Herald's process there (and of its threads).
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : []
  // BENCH_NODE_FLAGS go after the start script's own flags, so that one of the same name wins (the last does).
  const nodeFlags = process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(' ') : []
  const entry = [...HERALD_ENTRY.slice(0, -1), ...nodeFlags, HERALD_ENTRY[HERALD_ENTRY.length - 1]]
  const child = spawn(process.execPath, [...profile, ...entry, 'serve'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, PORT: String(port), HERALD_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', process.env.BENCH_HERALD_LOG ? fs.openSync(process.env.BENCH_HERALD_LOG, 'a') : 'ignore', 'inherit'],
  })
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 60_000
  for (;;) {
    try {
      const res = await fetch(`${url}/readyz`)
      // Answered by this child, not by something else that held the port (it would have exited).
      if (res.ok && child.exitCode === null) break
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) throw new Error(`herald exited with ${child.exitCode}`)
    if (Date.now() > deadline) throw new Error('herald did not become ready')
    await sleep(100)
  }
  return {
    child,
    url,
    peakRssMb() {
      return Math.round(treePeakRssKb(child.pid!) / 1024)
    },
    cpuMicros() {
      return processCpuMicros(child.pid!)
    },
    mainThreadCpuMicros() {
      return threadCpuMicros(child.pid!, child.pid!)
    },
    async stop() {
      child.kill('SIGTERM')
      await new Promise((resolve) => child.once('exit', resolve))
    },
  }
}

/**
 * Peak resident memory (VmHWM) of a process plus that of its running
 * children, in kB: the process tree's, counted as if the peaks coincided
 * (`herald serve` runs no child after its start, so this is its own).
 */
export function treePeakRssKb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
  let kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0)
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    const children = fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim()
    for (const child of children ? children.split(' ') : []) {
      try {
        kb += treePeakRssKb(Number(child))
      } catch {
        // exited meanwhile
      }
    }
  }
  return kb
}

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on Linux everywhere). */
const CLOCK_TICKS = 100

/**
 * CPU time of a process and all its threads (utime + stime of /proc/pid/stat,
 * which sums the threads; plus its waited-for children), in µs.
 */
export function processCpuMicros(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // utime, stime, cutime, cstime are fields 14-17 of the line, 12-15 after the name.
  const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])
  return (ticks / CLOCK_TICKS) * 1e6
}

/** CPU time of one thread of a process (/proc/pid/task/tid/stat: utime + stime), in µs. */
export function threadCpuMicros(pid: number, tid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS) * 1e6
}

/**
 * A CPU-bound neighbour: a busy loop in a process of its own (one thread, so
 * at most one core). stop() ends it and gives its average share of a core, in %.
 */
export function startNeighbour(): { stop(): Promise<number> } {
  const child = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' })
  process.once('exit', () => child.kill())
  const started = Date.now()
  return {
    async stop() {
      const cpu = processCpuMicros(child.pid!)
      child.kill('SIGKILL')
      await new Promise((resolve) => child.once('exit', resolve))
      return (100 * cpu) / ((Date.now() - started) * 1000)
    },
  }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

export function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US')
}

/**
 * Where a bench's own Herald keeps its data: a new database on the PostgreSQL
 * server (dropped after), or a new embedded data directory (removed after).
 */
export async function benchStorage(storage: 'embedded' | 'postgres', serverUrl: string | undefined, label: string): Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }> {
  if (storage === 'postgres') {
    const name = `herald_bench_${randomBytes(4).toString('hex')}`
    const admin = new pg.Client({ connectionString: serverUrl })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${name}`)
    await admin.end()
    const url = new URL(serverUrl!)
    url.pathname = `/${name}`
    return {
      env: { DATABASE_URL: url.toString() },
      cleanup: async () => {
        const client = new pg.Client({ connectionString: serverUrl })
        await client.connect()
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
        await client.end()
      },
    }
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `herald-bench-${label}-`))
  return { env: { HERALD_DATA_DIR: dir }, cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }) }
}
