// Installed like a tool (issue 27): `npm pack` (its prepack script builds
// dist/ with tsc) gives a tarball that `npm install -g` installs into a fresh
// prefix, and the installed `herald` runs from any directory: --version,
// doctor, and `serve` on the embedded database in ./data of the directory it
// was started in, without a TypeScript loader (the package holds no .ts to
// load, and the test takes tsx out of the installed package first). Slow (a type-checked build and an install from npm's cache), so it
// runs when HERALD_TEST_PACK=1 (CI), not in every local run.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ROOT } from './support/cli.ts'
import { freePort } from './support/browser.ts'

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-packed-'))
let child: ChildProcess | null = null

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM')
    await new Promise((resolve) => child!.once('exit', resolve))
  }
  fs.rmSync(work, { recursive: true, force: true })
})

function npm(args: string[], cwd: string): string {
  return execFileSync('npm', args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_fund: 'false', npm_config_audit: 'false' }, timeout: 600_000 })
}

describe.skipIf(process.env.HERALD_TEST_PACK !== '1' || process.platform !== 'linux')('the npm package', () => {
  it('installs globally from its tarball and serves from any directory without a TypeScript loader', async () => {
    // The prepack build prints a line of its own before npm's JSON.
    const out = npm(['pack', '--json', '--pack-destination', work], ROOT)
    const packed = JSON.parse(out.slice(out.search(/^\[/m))) as Array<{ filename: string; files: Array<{ path: string }> }>
    const files = packed[0].files.map((f) => f.path)
    expect(files).toContain('dist/src/main.js')
    expect(files).toContain('dist/migrations/0001_init.sql')
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([])
    // No addon built on this machine inside: the install builds its own (or falls back to node:crypto).
    expect(files.filter((f) => f.endsWith('.node'))).toEqual([])

    const prefix = path.join(work, 'prefix')
    npm(['install', '-g', '--prefix', prefix, '--prefer-offline', path.join(work, packed[0].filename)], work)
    const herald = path.join(prefix, 'bin', 'herald')
    // tsx is among the dependencies (the repository's bin uses it); taken away, a CLI that needed it could not start.
    const installed = path.join(prefix, 'lib/node_modules/herald')
    expect(fs.existsSync(path.join(installed, 'node_modules/tsx'))).toBe(true)
    fs.rmSync(path.join(installed, 'node_modules/tsx'), { recursive: true })
    const elsewhere = fs.mkdtempSync(path.join(work, 'site-'))
    const env = { PATH: process.env.PATH ?? '', HERALD_LOG_FORMAT: 'json', HERALD_LOG_LEVEL: 'info' }
    const version = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
    expect(execFileSync(herald, ['--version'], { cwd: elsewhere, env, encoding: 'utf8' })).toBe(`${version}\n`)

    const port = await freePort()
    let output = ''
    child = spawn(herald, ['serve'], { cwd: elsewhere, env: { ...env, PORT: String(port) } })
    child.stdout!.on('data', (chunk) => (output += chunk))
    child.stderr!.on('data', (chunk) => (output += chunk))
    const deadline = Date.now() + 180_000
    let health: { version?: string } | null = null
    while (!health && Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`herald serve exited: ${output}`)
      health = await fetch(`http://127.0.0.1:${port}/readyz`).then(async (res) => (res.ok ? ((await fetch(`http://127.0.0.1:${port}/healthz`)).json() as Promise<{ version: string }>) : null), () => null)
      if (!health) await new Promise((resolve) => setTimeout(resolve, 250))
    }
    expect(health).toEqual({ ok: true, version })
    // Its data is ./data of the directory it was started in (README, "Install it as a tool").
    expect(fs.existsSync(path.join(elsewhere, 'data', 'pgdata', 'PG_VERSION'))).toBe(true)
    // Plain JavaScript: neither tsx nor any other loader in the process.
    const cmdline = fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8')
    expect(cmdline).not.toContain('tsx')
    expect(fs.existsSync(path.join(installed, 'src/main.ts'))).toBe(false)
    child.kill('SIGTERM')
    await new Promise((resolve) => child!.once('exit', resolve))
  }, 900_000)
})
