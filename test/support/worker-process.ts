// `herald serve --role worker` as a real child process, for crash and
// multi-worker tests on PostgreSQL.
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { ADMIN_TOKEN } from './app.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

export interface WorkerProcess {
  child: ChildProcess
  /** pino lines this worker logged, parsed. */
  logs: Array<Record<string, unknown>>
  /** Resolves once the worker said it is running. */
  ready: Promise<void>
  kill(signal?: NodeJS.Signals): Promise<void>
}

export function startWorkerProcess(databaseUrl: string, env: Record<string, string> = {}): WorkerProcess {
  // node itself with tsx loaded in-process: a signal reaches the worker, not a wrapper.
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/main.ts'), 'serve', '--role', 'worker'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      DATABASE_URL: databaseUrl,
      HERALD_ADMIN_TOKEN: ADMIN_TOKEN,
      HERALD_ALLOW_PRIVATE_ENDPOINTS: 'true',
      HERALD_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const logs: Array<Record<string, unknown>> = []
  let buffer = ''
  let onReady: () => void
  const ready = new Promise<void>((resolve) => (onReady = resolve))
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString()
    const lines = buffer.split('\n')
    buffer = lines.pop() ?? ''
    for (const line of lines) {
      if (line.includes('worker') && line.includes('running')) onReady()
      try {
        logs.push(JSON.parse(line))
      } catch {
        // a plain line (the start banner)
      }
    }
  })
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  child.on('exit', (code, signal) => {
    if (code && code !== 0 && signal === null) console.error(`worker exited ${code}: ${stderr}`)
  })
  return {
    child,
    logs,
    ready,
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      await exited
    },
  }
}
