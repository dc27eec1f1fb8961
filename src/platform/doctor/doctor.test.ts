// `herald doctor` (issue 27): every check seen failing and passing against
// the real things: a PostgreSQL server (a database of the test's own, first
// unmigrated, then migrated, and a closed port), an embedded data directory,
// Redis on 127.0.0.1:6379 and at a closed port, a port held by a listening
// socket the test opens. Only the clock check's local clock is set apart by
// the test: a real skewed clock is not something a test can make.
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../config.ts'
import { openDatabase } from '../db/database.ts'
import { migrate } from '../db/migrate.ts'
import { freePort } from '../../../test/support/browser.ts'
import { withDatabase } from '../../../test/support/database.ts'
import { ensureTemplate } from '../../../test/support/embedded-template.ts'
import { runHerald } from '../../../test/support/cli.ts'
import { CLOCK_SKEW_MAX_MS, type CheckResult } from './checks.ts'
import { runDoctor } from './doctor.ts'

const SERVER_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const STRONG = '3f9c1a7e5b2d4c6e8a0b1d3f5e7c9a2b'
const name = `herald_doctor_${randomBytes(5).toString('hex')}`
const databaseUrl = withDatabase(SERVER_URL, name)
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-doctor-'))
let port: number

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: SERVER_URL })
  await client.connect()
  try {
    return await run(client)
  } finally {
    await client.end()
  }
}

beforeAll(async () => {
  await admin((c) => c.query(`CREATE DATABASE ${name}`))
  port = await freePort()
})
afterAll(async () => {
  await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  fs.rmSync(dataDir, { recursive: true, force: true })
})

/** A configuration ready to go live; each test spoils one setting. */
function goodEnv(): Record<string, string> {
  return {
    NODE_ENV: 'production',
    HERALD_LOG_LEVEL: 'silent',
    PORT: String(port),
    HERALD_HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    REDIS_URL: 'redis://127.0.0.1:6379',
    HERALD_PUBLIC_URL: 'https://push.example.com',
    HERALD_VAPID_SUBJECT: 'mailto:ops@example.com',
    HERALD_ADMIN_TOKEN: STRONG,
    // On 127.0.0.1 behind an https:// URL: the proxy on this machine is believed.
    HERALD_TRUST_PROXY: 'loopback',
  }
}

async function doctor(env: Record<string, string>, now?: () => number) {
  const lines: string[] = []
  const { exitCode, results } = await runDoctor(() => loadConfig(env), { now, print: (line) => lines.push(line) })
  const check = (n: string) => results.find((r) => r.name === n) as CheckResult
  return { exitCode, check, output: lines.join('\n') }
}

describe('herald doctor', () => {
  it('database: an unmigrated database fails (pending migrations, with the fix), a migrated one passes, and so does everything else', async () => {
    const before = await doctor(goodEnv())
    expect(before.check('database')).toMatchObject({ outcome: 'ok' })
    expect(before.check('migrations')).toMatchObject({ outcome: 'fail', fix: expect.stringContaining('herald db migrate') })
    expect(before.check('migrations').detail).toContain('0001_init.sql')
    expect(before.exitCode).toBe(1)

    const db = await openDatabase({ databaseUrl, dataDir: null, poolSize: 1 })
    await migrate(db)
    await db.close()
    const after = await doctor(goodEnv())
    expect(after.output).not.toContain('FAIL')
    expect(after.check('migrations')).toMatchObject({ outcome: 'ok' })
    expect(after.output).toContain('All checks passed.')
    expect(after.exitCode).toBe(0)
  }, 60_000)

  it('database: a server that does not answer fails', async () => {
    const closed = await freePort()
    const down = await doctor({ ...goodEnv(), DATABASE_URL: `postgres://postgres@127.0.0.1:${closed}/test` })
    expect(down.check('database')).toMatchObject({ outcome: 'fail', fix: expect.stringContaining('DATABASE_URL') })
    expect(down.check('migrations').outcome).toBe('skip')
    expect(down.exitCode).toBe(1)
  })

  it('database: an embedded data directory without a database fails, one made by migrate passes', async () => {
    const env = { ...goodEnv(), DATABASE_URL: '', HERALD_DATA_DIR: dataDir }
    expect((await doctor(env)).check('database')).toMatchObject({ outcome: 'fail', detail: `no embedded database in ${dataDir} yet` })
    // A copy of the embedded template: made once per run by openDatabase and migrate,
    // as `herald db migrate` makes one, without an initdb of its own here.
    fs.cpSync(path.join(await ensureTemplate(), 'migrated'), dataDir, { recursive: true })
    const made = await doctor(env)
    expect(made.check('database').outcome).toBe('ok')
    expect(made.check('migrations').outcome).toBe('ok')
    expect(made.exitCode).toBe(0)
  }, 120_000)

  it('public URL: http fails, https passes', async () => {
    const bad = await doctor({ ...goodEnv(), HERALD_PUBLIC_URL: 'http://push.example.com' })
    expect(bad.check('public URL')).toMatchObject({ outcome: 'fail', fix: expect.stringContaining('https://') })
    expect(bad.exitCode).toBe(1)
    expect((await doctor(goodEnv())).check('public URL').outcome).toBe('ok')
  })

  it('VAPID subject: unset (the placeholder) or not mailto:/https: fails, a real address passes', async () => {
    const { HERALD_VAPID_SUBJECT: _, ...unset } = goodEnv()
    expect((await doctor(unset)).check('VAPID subject')).toMatchObject({ outcome: 'fail', detail: expect.stringContaining('not set') })
    for (const subject of ['ops@example.com', 'http://example.com', 'mailto:ops@localhost']) {
      const bad = await doctor({ ...goodEnv(), HERALD_VAPID_SUBJECT: subject })
      expect(bad.check('VAPID subject').outcome, subject).toBe('fail')
      expect(bad.exitCode).toBe(1)
    }
    expect((await doctor({ ...goodEnv(), HERALD_VAPID_SUBJECT: 'https://example.com/contact' })).check('VAPID subject').outcome).toBe('ok')
  })

  it('operator token: unset, short or a pattern fails, a random one passes', async () => {
    // Outside production, where config.ts lets a process start without one.
    const unset: Record<string, string> = { ...goodEnv(), NODE_ENV: 'development' }
    delete unset.HERALD_ADMIN_TOKEN
    expect((await doctor(unset)).check('operator token')).toMatchObject({ outcome: 'fail', detail: 'HERALD_ADMIN_TOKEN is not set' })
    for (const token of ['0123456789abcdefghij', 'changeme'.repeat(4)]) {
      expect((await doctor({ ...goodEnv(), HERALD_ADMIN_TOKEN: token })).check('operator token').outcome, token).toBe('fail')
    }
    expect((await doctor(goodEnv())).check('operator token').outcome).toBe('ok')
  })

  it('outbound rules: HERALD_ALLOW_PRIVATE_ENDPOINTS=true fails, unset passes', async () => {
    const open = await doctor({ ...goodEnv(), HERALD_ALLOW_PRIVATE_ENDPOINTS: 'true' })
    expect(open.check('outbound rules')).toMatchObject({ outcome: 'fail', fix: expect.stringContaining('unset HERALD_ALLOW_PRIVATE_ENDPOINTS') })
    expect(open.exitCode).toBe(1)
    expect((await doctor(goodEnv())).check('outbound rules').outcome).toBe('ok')
  })

  it('proxy: on loopback behind an https:// URL, unset or naming no loopback address fails; loopback passes; on the network unset passes', async () => {
    const { HERALD_TRUST_PROXY: _, ...unset } = goodEnv()
    const missing = await doctor(unset)
    expect(missing.check('proxy')).toMatchObject({ outcome: 'fail', fix: expect.stringContaining('HERALD_TRUST_PROXY=loopback') })
    expect(missing.exitCode).toBe(1)
    const elsewhere = await doctor({ ...goodEnv(), HERALD_TRUST_PROXY: '10.0.0.5,192.168.0.0/16' })
    expect(elsewhere.check('proxy')).toMatchObject({ outcome: 'fail', detail: expect.stringContaining('names no loopback address') })
    expect(elsewhere.exitCode).toBe(1)
    for (const trusted of ['loopback', '127.0.0.1', '::1', '10.0.0.5,127.0.0.0/8']) {
      expect((await doctor({ ...goodEnv(), HERALD_TRUST_PROXY: trusted })).check('proxy').outcome, trusted).toBe('ok')
    }
    // Plain http on loopback (a laptop): no proxy expected, unset passes.
    expect((await doctor({ ...unset, HERALD_PUBLIC_URL: 'http://localhost:3000' })).check('proxy').outcome).toBe('ok')
    // Listening on the network: the connection's address is the client's.
    expect((await doctor({ ...unset, HERALD_HOST: '0.0.0.0' })).check('proxy').outcome).toBe('ok')
    expect((await doctor({ ...goodEnv(), HERALD_HOST: '0.0.0.0', HERALD_TRUST_PROXY: '10.0.0.5' })).check('proxy')).toMatchObject({ outcome: 'ok', detail: expect.stringContaining('10.0.0.5') })
  })

  it('configuration: a setting that does not parse fails, and nothing else is checked', async () => {
    const bad = await doctor({ ...goodEnv(), PORT: 'eighty' })
    expect(bad.check('configuration')).toMatchObject({ outcome: 'fail', detail: expect.stringContaining('PORT') })
    expect(bad.check('database')).toBeUndefined()
    expect(bad.exitCode).toBe(1)
  })

  it(`clock: more than ${CLOCK_SKEW_MAX_MS} ms apart from the database's fails, within passes`, async () => {
    const ahead = await doctor(goodEnv(), () => Date.now() + 5_000)
    expect(ahead.check('clock')).toMatchObject({ outcome: 'fail', fix: expect.stringContaining('NTP') })
    expect(ahead.check('clock').detail).toMatch(/ahead of the database's/)
    expect((await doctor(goodEnv(), () => Date.now() - 5_000)).check('clock').outcome).toBe('fail')
    expect((await doctor(goodEnv())).check('clock').outcome).toBe('ok')
  })

  it('Redis: a closed port fails, the real one passes, unset is skipped', async () => {
    const closed = await freePort()
    const down = await doctor({ ...goodEnv(), REDIS_URL: `redis://127.0.0.1:${closed}` })
    expect(down.check('Redis')).toMatchObject({ outcome: 'fail', fix: expect.stringContaining('REDIS_URL') })
    expect(down.exitCode).toBe(1)
    expect((await doctor(goodEnv())).check('Redis').outcome).toBe('ok')
    const { REDIS_URL: _, ...unset } = goodEnv()
    expect((await doctor(unset)).check('Redis').outcome).toBe('skip')
  })

  it('ports: PORT held by a listening socket fails, free passes; HERALD_METRICS_PORT too', async () => {
    const holder = net.createServer()
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve))
    try {
      const taken = await doctor(goodEnv())
      expect(taken.check('ports')).toMatchObject({ outcome: 'fail', detail: `PORT=${port} on 127.0.0.1: in use` })
      expect(taken.exitCode).toBe(1)
      const other = await freePort()
      const metrics = await doctor({ ...goodEnv(), PORT: String(other), HERALD_METRICS_PORT: String(port) })
      expect(metrics.check('ports').detail).toBe(`HERALD_METRICS_PORT=${port} on 127.0.0.1: in use`)
    } finally {
      await new Promise((resolve) => holder.close(resolve))
    }
    expect((await doctor(goodEnv())).check('ports').outcome).toBe('ok')
  })

  it('herald doctor prints each check with its fix and exits 1 on a failure', async () => {
    const result = await runHerald(['doctor'], { ...goodEnv(), HERALD_PUBLIC_URL: 'http://push.example.com' }, 60_000)
    expect(result.code).toBe(1)
    expect(result.stdout).toMatch(/^FAIL {2}public URL {6}HERALD_PUBLIC_URL is http:\/\/push\.example\.com/m)
    expect(result.stdout).toMatch(/^ {6}.*fix: set HERALD_PUBLIC_URL/m)
    expect(result.stdout).toMatch(/^ok {4}Redis/m)
    expect(result.stdout).toContain('1 check failed.')
  }, 90_000)
})
