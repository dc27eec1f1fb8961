// `herald serve` for real, as `npm start` runs it (scripts/start.mjs: dist/,
// compiled first when a source changed), on an empty data directory: the
// embedded database is created apart (in a child that exits), so the server
// does not keep initdb's memory for good.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { readStamp, sourceStamp } from '../scripts/dist-files.mjs'
import { testDbMode } from '../test/support/database.ts'
import { freePort } from '../test/support/browser.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
let child: ChildProcess | null = null
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-first-start-'))
const builtDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-built-'))

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM')
    await new Promise((resolve) => child!.once('exit', resolve))
  }
  fs.rmSync(dataDir, { recursive: true, force: true })
  fs.rmSync(builtDataDir, { recursive: true, force: true })
})

async function waitReady(url: string, output: () => string): Promise<void> {
  const deadline = Date.now() + 120_000
  while (Date.now() < deadline) {
    if (child?.exitCode !== null) throw new Error(`herald serve exited: ${output()}`)
    const ok = await fetch(url).then((res) => res.ok, () => false)
    if (ok) return
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`herald serve not ready in time: ${output()}`)
}

describe.skipIf(testDbMode() !== 'embedded' || process.platform !== 'linux')('herald serve', () => {
  it('creates the database in a child process, serves, and keeps its memory low', async () => {
    const port = await freePort()
    let output = ''
    const env = { PATH: process.env.PATH, PORT: String(port), HERALD_DATA_DIR: dataDir, HERALD_LOG_LEVEL: 'warn', NODE_ENV: 'test' }
    child = spawn(process.execPath, ['scripts/start.mjs', 'serve'], { cwd: ROOT, env })
    child.stdout!.on('data', (chunk) => (output += chunk))
    child.stderr!.on('data', (chunk) => (output += chunk))
    await waitReady(`http://127.0.0.1:${port}/readyz`, () => output)
    // It runs the compiled code, not src/ under tsx, and dist/ now matches the sources.
    expect(fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8')).not.toContain('tsx')
    expect(readStamp()).toBe(sourceStamp())
    expect(output).toContain(`Creating the embedded database in ${dataDir}`)
    expect(fs.existsSync(path.join(dataDir, 'pgdata', 'PG_VERSION'))).toBe(true)
    const me = await fetch(`http://127.0.0.1:${port}/v1/me`)
    expect(me.status).toBe(401)
    // Peak resident memory of the server process: ~200 MB this way (~270 MB under
    // tsx), ~770 MB when the server ran initdb itself (measured on the development machine).
    const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8')
    const peakMb = Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024
    expect(peakMb).toBeLessThan(350)
    child.kill('SIGTERM')
    await new Promise((resolve) => child!.once('exit', resolve))
  }, 150_000)

  // The full tsc build takes ~25 s of CPU, a twentieth of the whole suite: it runs with the packed-package
  // test (HERALD_TEST_PACK=1, CI's third step, whose npm pack builds the same way), not in every npm test.
  it.skipIf(process.env.HERALD_TEST_PACK !== '1')('runs from its build (npm run build → dist/) with the files it reads beside the code', async () => {
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'ignore' })
    const port = await freePort()
    let output = ''
    const env = { PATH: process.env.PATH, PORT: String(port), HERALD_DATA_DIR: builtDataDir, HERALD_LOG_LEVEL: 'warn', NODE_ENV: 'test' }
    child = spawn(process.execPath, ['dist/src/main.js', 'serve'], { cwd: ROOT, env })
    child.stdout!.on('data', (chunk) => (output += chunk))
    child.stderr!.on('data', (chunk) => (output += chunk))
    const base = `http://127.0.0.1:${port}`
    await waitReady(`${base}/readyz`, () => output)
    // Migrations ran (the first start's child was the built CLI too), the SDK and dashboard are served.
    expect(output).toContain(`Creating the embedded database in ${builtDataDir}`)
    expect((await fetch(`${base}/v1/vapid-public-key?project=prj_nope`)).status).toBe(404)
    for (const [url, marker] of [['/sdk/sw.js', "addEventListener('push'"], ['/dashboard', '<title>Herald dashboard</title>']]) {
      const res = await fetch(`${base}${url}`)
      expect(res.status, url).toBe(200)
      expect(await res.text(), url).toContain(marker)
    }
  }, 150_000)

  it('npm start uses a build while no source changed, and compiles again when one did', async () => {
    // dist/ is current: the tsc build of the test above, or (without it) the one this first start makes.
    const help = (): string => execFileSync(process.execPath, ['scripts/start.mjs', 'help'], { cwd: ROOT, encoding: 'utf8' })
    if (readStamp() !== sourceStamp()) help()
    const first = help()
    expect(first).toContain('herald serve')
    expect(first).not.toContain('Compiled src/ to dist/')
    // A stamp that no longer matches the sources (as after an edit) makes it compile first.
    fs.writeFileSync(path.join(ROOT, 'dist', '.sources'), 'stale')
    const second = help()
    expect(second).toMatch(/Compiled src\/ to dist\/ in \d+ ms/)
    expect(second).toContain('herald serve')
    expect(readStamp()).toBe(sourceStamp())
    // Two starts at once on stale sources (an API and a worker after a pull): one compiles, both run, nothing is left over.
    fs.writeFileSync(path.join(ROOT, 'dist', '.sources'), 'stale')
    const run = promisify(execFile)
    const both = await Promise.all([0, 1].map(() => run(process.execPath, ['scripts/start.mjs', 'help'], { cwd: ROOT, encoding: 'utf8' })))
    expect(both.every(({ stdout }) => stdout.includes('herald serve'))).toBe(true)
    expect(both.filter(({ stdout }) => stdout.includes('Compiled src/ to dist/'))).toHaveLength(1)
    expect(fs.readdirSync(ROOT).filter((name) => name.startsWith('dist.'))).toEqual([])
    expect(readStamp()).toBe(sourceStamp())
  }, 60_000)
})
