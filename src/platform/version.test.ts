// Releases are identifiable (issue 27): package.json's version from
// `herald --version`, in /healthz (every role), as herald_build_info in
// /metrics, and in the first log line of `herald serve`.
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_TOKEN, createTestApp, type TestApp } from '../../test/support/app.ts'
import { builtMain } from '../../test/support/built-cli.ts'
import { ROOT, runHerald } from '../../test/support/cli.ts'
import { ensureTemplate } from '../../test/support/embedded-template.ts'
import { Scrape } from '../../test/support/prometheus.ts'
import { freePort } from '../../test/support/browser.ts'
import { testDbMode } from '../../test/support/database.ts'

const PACKAGE_VERSION = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('the release of a process', () => {
  it('herald --version prints package.json version', async () => {
    expect(PACKAGE_VERSION).toMatch(/^\d+\.\d+\.\d+/)
    const result = await runHerald(['--version'], {})
    expect(result).toMatchObject({ code: 0, stdout: `${PACKAGE_VERSION}\n` })
  }, 30_000)

  it('CHANGELOG.md has an entry for it', () => {
    const changelog = fs.readFileSync(path.join(ROOT, 'CHANGELOG.md'), 'utf8')
    expect(changelog).toMatch(new RegExp(`^## ${PACKAGE_VERSION.replaceAll('.', '\\.')} `, 'm'))
  })

  it('/healthz answers it beside ok, in the OpenAPI document too', async () => {
    expect((await t.app.inject('/healthz')).json()).toEqual({ ok: true, version: PACKAGE_VERSION })
    const doc = (await t.app.inject('/openapi.json')).json()
    expect(doc.paths['/healthz'].get.responses['200'].content['application/json'].schema.properties.version.type).toBe('string')
  })

  it('/metrics has herald_build_info{version,node_version} 1', async () => {
    const res = await t.app.inject({ url: '/metrics', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    const scrape = new Scrape(res.body)
    expect(scrape.value('herald_build_info', { version: PACKAGE_VERSION, node_version: process.versions.node })).toBe(1)
  })

  it.skipIf(testDbMode() !== 'embedded')('herald serve logs it in its first line and its banner', async () => {
    // A migrated data directory: what is checked is the first lines, not creating a database.
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-version-'))
    fs.cpSync(path.join(await ensureTemplate(), 'migrated'), dataDir, { recursive: true })
    const port = await freePort()
    const child = spawn(process.execPath, [builtMain(), 'serve', '--role', 'api'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, PORT: String(port), HERALD_DATA_DIR: dataDir, HERALD_LOG_FORMAT: 'json', HERALD_LOG_LEVEL: 'info' },
    })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    try {
      const deadline = Date.now() + 90_000
      while (!output.includes('listening on') && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
      const first = output.split('\n').find((line) => line.startsWith('{'))
      expect(JSON.parse(first!)).toMatchObject({ msg: `starting Herald ${PACKAGE_VERSION} (--role api)`, version: PACKAGE_VERSION, role: 'api' })
      expect(output).toContain(`Herald ${PACKAGE_VERSION} API listening on`)
    } finally {
      child.kill('SIGTERM')
      await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(null)))
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }, 120_000)
})
