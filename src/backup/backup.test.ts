// herald backup and restore (issue 23), on both storage modes and across them:
// a backup made on this run's storage mode is restored into the OTHER mode (a
// fresh PostgreSQL database when the run is embedded, a fresh embedded
// database when it is PostgreSQL), and every restored subscriber then gets a
// push through the local push service, which refuses any VAPID key but the
// one each subscription was made with. Backup and restore run in this process
// except for one `herald restore` and one `herald backup` run for real.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { createGunzip } from 'node:zlib'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../app.ts'
import { createContext } from '../platform/context.ts'
import { openDatabase, type Database } from '../platform/db/database.ts'
import { createWorker } from '../worker.ts'
import { createTestApp, testConfig, type TestApp, type TestProject } from '../../test/support/app.ts'
import { runHerald } from '../../test/support/cli.ts'
import { testDbMode, withDatabase } from '../../test/support/database.ts'
import { openTemplateCopy } from '../../test/support/embedded-template.ts'
import { changedTables, fingerprinter } from '../../test/support/db-fingerprint.ts'
import { addMember, PASSWORD } from '../../test/support/members.ts'
import { startPushService, type PushService, type TestSubscription } from '../../test/support/push-service.ts'
import { insertMedia } from '../media/media.store.ts'
import { BACKUP_TABLES, NOT_BACKED_UP } from './backup-tables.ts'
import { writeBackup, type BackupSummary } from './backup.ts'
import { backupToFile, RESTORE_NOT_EMPTY_EXIT, runBackupCommand } from './cli.ts'
import { restoreBackup, restoreBackupFile } from './restore.ts'

const SERVER_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const OTHER_MODE = testDbMode() === 'embedded' ? 'postgres' : 'embedded'
/** A spawned CLI starts tsx and opens a database: seconds on a busy machine. */
const CLI_TIMEOUT = 120_000

interface Target {
  db: Database
  /** How a spawned CLI reaches it once db is closed. */
  env: Record<string, string>
  drop(): Promise<void>
}

/** An empty database with no migrations applied, in the given mode. */
async function emptyDatabase(mode: 'embedded' | 'postgres'): Promise<Target> {
  if (mode === 'embedded') {
    const copy = await openTemplateCopy(false)
    // Closed already when a spawned CLI had it: then only the directory is left to remove.
    return { db: copy.db, env: { HERALD_DATA_DIR: copy.dir }, drop: () => copy.drop().catch(() => fs.rmSync(copy.dir, { recursive: true, force: true })) }
  }
  const name = `herald_test_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: SERVER_URL })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = withDatabase(SERVER_URL, name)
  const db = await openDatabase({ databaseUrl: url, dataDir: null, poolSize: 3 })
  return {
    db,
    env: { DATABASE_URL: url },
    async drop() {
      await db.close().catch(() => undefined)
      const client = new pg.Client({ connectionString: SERVER_URL })
      await client.connect()
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await client.end()
    },
  }
}

/** The backup's lines, written in memory (small projects only). */
async function backupLines(db: Database, projects: string[] | null): Promise<{ lines: string[]; summary: BackupSummary }> {
  let text = ''
  const summary = await writeBackup(db, projects, async (chunk) => void (text += chunk))
  return { lines: text.trimEnd().split('\n'), summary }
}

async function fileLines(file: string): Promise<string[]> {
  let text = ''
  const input = fs.createReadStream(file)
  for await (const chunk of file.endsWith('.gz') ? input.pipe(createGunzip()) : input) text += chunk
  return text.trimEnd().split('\n')
}

/** The records without the header (its time and storage differ from backup to backup). */
const records = (lines: string[]) => lines.slice(1)

let push: PushService
let source: TestApp
let a: TestProject
let b: TestProject
let dir: string
const browsers: Array<TestSubscription & { project: TestProject; active: boolean }> = []

async function subscribe(project: TestProject, extra: Record<string, unknown>, active = true): Promise<void> {
  // Tied to the project's key: the push service refuses a push signed with any other (RFC 8292 §4.2).
  const subscription = push.createSubscription({ applicationServerKey: project.vapidPublic })
  const res = await source.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: { ...subscription, ...extra } })
  expect(res.statusCode, res.body).toBe(201)
  if (!active) {
    const gone = await source.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${project.id}`, payload: { endpoint: subscription.endpoint } })
    expect(gone.statusCode, gone.body).toBeLessThan(300)
  }
  browsers.push({ ...subscription, project, active })
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-backup-test-'))
  push = await startPushService()
  source = await createTestApp()
  a = await source.project({ plan: 'plus', name: 'Shop A' })
  b = await source.project({ name: 'Shop B' })
  const group = await source.app.inject({ method: 'POST', url: '/v1/groups', headers: a.auth, payload: { name: 'vip' } })
  expect(group.statusCode, group.body).toBe(201)
  await subscribe(a, { external_id: 'user-1', group_ids: [group.json().id], tags: { plan: 'pro', visits: 3 } })
  await subscribe(a, { tags: { plan: 'free' } })
  await subscribe(a, {}, false)
  await subscribe(b, { external_id: 'b-1' })
  const hook = await source.app.inject({ method: 'POST', url: '/v1/webhooks', headers: a.auth, payload: { url: 'https://hooks.example.com/herald', events: ['clicked'] } })
  expect(hook.statusCode, hook.body).toBe(201)
  const scheduled = await source.app.inject({
    method: 'POST', url: '/v1/send', headers: a.auth,
    payload: { target: { type: 'all' }, notification: { title: 'Later', body: 'Tomorrow' }, scheduled_at: Date.now() + 24 * 3600_000 },
  })
  expect(scheduled.statusCode, scheduled.body).toBe(202)
  await addMember(source, a.id, 'ann@example.com', 'admin')
  // A hosted file, bytes and all (bytea goes through the file as hex).
  await insertMedia(source.ctx.db, { sha256: 'ab'.repeat(32), ext: 'png', content_type: 'image/png', width: 1, height: 1, bytes: Buffer.from([0, 1, 0x5c, 0x78, 255]) })
}, 120_000)

afterAll(async () => {
  await source?.close()
  await push?.close()
  if (dir) fs.rmSync(dir, { recursive: true, force: true })
})

describe('what a backup holds', () => {
  it('every table of the schema is either backed up or left out with a reason', async () => {
    const tables = (await source.ctx.db.query<{ name: string }>('SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1')).rows.map((r) => r.name)
    const backedUp = BACKUP_TABLES.map((t) => t.name)
    expect(tables.filter((t) => !backedUp.includes(t) && !(t in NOT_BACKED_UP)), 'tables a migration added: add each to BACKUP_TABLES or NOT_BACKED_UP (backup-tables.ts) and docs/backup.md').toEqual([])
    expect(backedUp.filter((t) => t in NOT_BACKED_UP)).toEqual([])
  })

  it("a project's backup holds that project's rows and no other's; an unknown project is refused", async () => {
    const { lines, summary } = await backupLines(source.ctx.db, [a.id])
    expect(summary.rows).toMatchObject({ projects: 1, subscribers: 3, groups: 1, group_members: 1, webhooks: 1, broadcasts: 1, users: 1, memberships: 1, api_keys: 1 })
    expect(lines.filter((line) => line.includes(b.id))).toEqual([])
    expect(JSON.parse(lines[0]!)).toMatchObject({ herald_backup: 1, projects: [a.id], storage: testDbMode() })
    expect(JSON.parse(lines.at(-1)!)).toEqual({ herald_backup_end: { rows: summary.rows } })
    await expect(writeBackup(source.ctx.db, ['prj_00000000000000000000000000'], async () => undefined)).rejects.toMatchObject({ code: 'project_not_found' })
  })
})

describe(`backup on ${testDbMode()}, restore on ${OTHER_MODE}`, () => {
  let file: string
  let target: Target

  beforeAll(async () => {
    file = path.join(dir, 'all.ndjson.gz')
    target = await emptyDatabase(OTHER_MODE)
  }, 120_000)
  afterAll(async () => {
    await target?.drop()
  })

  it('writes a gzip file only its owner can read, and restores it whole: every row as it was', async () => {
    const summary = await backupToFile(source.ctx.db, null, file)
    expect(fs.statSync(file).mode & 0o777).toBe(0o600)
    expect(summary.rows).toMatchObject({ projects: 2, subscribers: 4, users: 1, media: 1 })
    const restored = await restoreBackupFile(target.db, file)
    expect(restored).toMatchObject({ projects: 2, rows: summary.rows, rescheduled: 1, interrupted: 0 })
    // Backed up again from the restored database, every record is the same text.
    const again = await backupLines(target.db, null)
    expect(records(again.lines)).toEqual(records(await fileLines(file)))
    // The scheduled broadcast's job, made again (jobs are not in a backup), due when it was.
    const media = await target.db.query<{ bytes: Uint8Array }>('SELECT bytes FROM media')
    expect(media.rows.map((m) => [...m.bytes])).toEqual([[0, 1, 0x5c, 0x78, 255]])
    const jobs = await target.db.query<{ payload: { broadcast_id: string }; run_at: Date }>("SELECT payload, run_at FROM jobs WHERE kind = 'fire_broadcast'")
    const scheduled = await target.db.query<{ id: string; scheduled_at: Date }>('SELECT id, scheduled_at FROM broadcasts')
    expect(jobs.rows.map((j) => [j.payload.broadcast_id, new Date(j.run_at).getTime()])).toEqual(scheduled.rows.map((r) => [r.id, new Date(r.scheduled_at).getTime()]))
  })

  it('every restored active subscriber gets a push signed with the key it subscribed with; members sign in with their password', async () => {
    const ctx = createContext(testConfig(), target.db)
    const app = await buildApp(ctx)
    const worker = createWorker(ctx)
    await worker.start()
    try {
      push.reset()
      for (const project of [a, b]) {
        // The API key works: it was restored as stored (hashed).
        const sent = await app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: { target: { type: 'all' }, notification: { title: 'After the move', body: 'Still here' } } })
        expect(sent.statusCode, sent.body).toBe(202)
      }
      const active = browsers.filter((x) => x.active)
      await push.waitForCount(active.length, 20_000)
      expect(push.rejected).toEqual([])
      for (const browser of browsers) {
        const got = push.receivedFor(browser.endpoint)
        expect(got, browser.endpoint).toHaveLength(browser.active ? 1 : 0)
        if (browser.active) expect(got[0]!.headers.authorization).toContain(`k=${browser.project.vapidPublic}`)
      }
      const signIn = await app.inject({ method: 'POST', url: '/v1/session', payload: { email: 'ann@example.com', password: PASSWORD } })
      expect(signIn.statusCode, signIn.body).toBe(200)
    } finally {
      await worker.stop()
      await app.close()
      await ctx.rateLimiter.close()
    }
  })

  it('refuses a database that already holds projects (exit code 3), and writes nothing', async () => {
    const fingerprint = await fingerprinter(source.ctx.db)
    const before = await fingerprint()
    await expect(restoreBackupFile(source.ctx.db, file)).rejects.toMatchObject({ code: 'restore_target_not_empty' })
    expect(await runBackupCommand(source.ctx.db, 'restore', [file])).toBe(RESTORE_NOT_EMPTY_EXIT)
    expect(changedTables(before, await fingerprint())).toEqual([])
  })
})

describe('a file that is not a whole backup', () => {
  it('refuses what is not a backup, or a newer one, before touching the database', async () => {
    await expect(restoreBackup(source.ctx.db, Readable.from(['{"endpoint":"https://x"}\n']))).rejects.toMatchObject({ code: 'invalid_backup', message: expect.stringContaining('not a Herald backup') })
    const newer = { herald_backup: 1, herald_version: '9.0.0', migrations: [1, 9999], tables: {} }
    await expect(restoreBackup(source.ctx.db, Readable.from([`${JSON.stringify(newer)}\n`]))).rejects.toMatchObject({ code: 'invalid_backup', message: expect.stringContaining('9999') })
  })

  it('says so when the file was cut short, or names a table it does not hold', async () => {
    const { lines } = await backupLines(source.ctx.db, [b.id])
    const empty = await emptyDatabase(testDbMode())
    try {
      // A crafted last line: its table names never reach SQL. No row is written, so the database stays empty.
      const crafted = [lines[0]!.replace(/"tables":\{.*\}\}$/, '"tables":{}}'), JSON.stringify({ herald_backup_end: { rows: { 'projects; DROP TABLE users': 0 } } })]
      await expect(restoreBackup(empty.db, Readable.from([`${crafted.join('\n')}\n`]))).rejects.toMatchObject({ code: 'invalid_backup', message: expect.stringContaining('does not hold') })
      expect((await empty.db.query("SELECT to_regclass('users') AS t")).rows[0]).toEqual({ t: 'users' })
      await expect(restoreBackup(empty.db, Readable.from([`${lines.slice(0, -1).join('\n')}\n`]))).rejects.toMatchObject({ code: 'invalid_backup', message: expect.stringContaining('cut short') })
    } finally {
      await empty.drop()
    }
  })
})

describe('herald restore and herald backup, run for real', () => {
  it('restores a file and backs the restored project up again, the same records, mode 0600', async () => {
    const file = path.join(dir, 'a.ndjson')
    await backupToFile(source.ctx.db, [a.id], file)
    const target = await emptyDatabase(testDbMode())
    // The spawned CLI opens the database itself (an embedded one belongs to one process at a time).
    await target.db.close()
    try {
      const env = { NODE_ENV: 'test', ...target.env }
      const restored = await runHerald(['restore', file], env, CLI_TIMEOUT)
      expect(restored.code, restored.stderr).toBe(0)
      expect(JSON.parse(restored.stdout)).toMatchObject({ projects: 1, rows: { subscribers: 3 } })
      const out = path.join(dir, 'again.ndjson.gz')
      const backedUp = await runHerald(['backup', '--project', a.id, '--out', out], env, CLI_TIMEOUT)
      expect(backedUp.code, backedUp.stderr).toBe(0)
      expect(fs.statSync(out).mode & 0o777).toBe(0o600)
      expect(records(await fileLines(out))).toEqual(records(await fileLines(file)))
    } finally {
      await target.drop()
    }
  }, CLI_TIMEOUT * 2)
})
