// `herald serve --role worker` (or `--role api`) as a real child process, for
// crash, outage and multi-worker tests on PostgreSQL.
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { ADMIN_TOKEN } from './app.ts'
import { builtMain } from './built-cli.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

export interface WorkerProcess {
  child: ChildProcess
  /** pino lines this worker logged, parsed. */
  logs: Array<Record<string, unknown>>
  /** Everything it wrote to stdout and stderr, as written. */
  output(): string
  /** Resolves once the worker said it is running. */
  ready: Promise<void>
  /** Its /healthz and /readyz, e.g. http://127.0.0.1:41234 (set once ready). */
  healthUrl: string | null
  /** Resolves with the exit code (null after a signal) once it has exited. */
  exited: Promise<number | null>
  kill(signal?: NodeJS.Signals): Promise<void>
}

/** `root`: the checkout whose code runs (another release's, for the upgrade test); this one by default. */
export function startWorkerProcess(databaseUrl: string, env: Record<string, string> = {}, role: 'worker' | 'api' = 'worker', root = ROOT): WorkerProcess {
  // node itself (on this checkout's build, built-cli.ts; another checkout's
  // sources with tsx loaded in-process): a signal reaches the worker, not a wrapper.
  const main = root === ROOT ? [builtMain()] : ['--import', 'tsx', path.join(root, 'src/main.ts')]
  const child = spawn(process.execPath, [...main, 'serve', '--role', role], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      DATABASE_URL: databaseUrl,
      HERALD_ADMIN_TOKEN: ADMIN_TOKEN,
      HERALD_ALLOW_PRIVATE_ENDPOINTS: 'true',
      HERALD_LOG_LEVEL: 'info',
      // Its health checks on a free port: several workers run side by side.
      PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const logs: Array<Record<string, unknown>> = []
  let all = ''
  let healthUrl: string | null = null
  let buffer = ''
  let onReady: () => void
  const ready = new Promise<void>((resolve) => (onReady = resolve))
  child.stdout!.on('data', (chunk: Buffer) => {
    all += chunk.toString()
    buffer += chunk.toString()
    const lines = buffer.split('\n')
    buffer = lines.pop() ?? ''
    for (const line of lines) {
      const banner = role === 'worker' ? /worker .* running(?: \(health checks on (http:\/\/[^/\s]+))?/ : /API listening on (http:\/\/[^/\s]+)/
      const match = banner.exec(line)
      if (match) {
        healthUrl = match[1] ?? null
        onReady()
      }
      try {
        logs.push(JSON.parse(line))
      } catch {
        // a plain line (the start banner)
      }
    }
  })
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
    all += chunk.toString()
  })
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  child.on('exit', (code, signal) => {
    if (code && code !== 0 && signal === null) console.error(`worker exited ${code}: ${stderr}`)
  })
  return {
    child,
    logs,
    output: () => all,
    ready,
    get healthUrl() {
      return healthUrl
    },
    exited,
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      await exited
    },
  }
}
