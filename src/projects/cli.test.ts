// The operator CLI run for real, as a child process, against a database of
// its own: PostgreSQL (a cloned test database) or an embedded one on disk (a
// copy of a fresh cluster with no migration applied: the CLI creating a data
// directory is src/serve.test.ts's). Each run starts a process (the tests'
// build of the CLI, test/support/built-cli.ts), so the steps share one project.
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { builtMain } from '../../test/support/built-cli.ts'
import { createTestDatabase, testDbMode, type TestDatabase } from '../../test/support/database.ts'
import { ensureTemplate } from '../../test/support/embedded-template.ts'
import { openDatabase, type Database } from '../platform/db/database.ts'
import { lookupPrefix } from './api-keys.ts'
import { PLANS } from './plans.ts'
import { findActiveKeyByPrefix } from './projects.store.ts'
import { generateVapidKeys } from './vapid-keys.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
/** Starting a process and opening an embedded database on disk takes seconds on a busy machine. */
const STEP_TIMEOUT = 120_000

let env: NodeJS.ProcessEnv
let database: TestDatabase | null = null
let dataDir: string | null = null

beforeAll(async () => {
  env = { ...process.env, NODE_ENV: 'test' }
  if (testDbMode() === 'postgres') {
    database = await createTestDatabase()
    env.DATABASE_URL = database.url!
  } else {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-cli-'))
    fs.cpSync(path.join(await ensureTemplate(), 'empty'), dataDir, { recursive: true })
    delete env.DATABASE_URL
    env.HERALD_DATA_DIR = dataDir
  }
})
afterAll(async () => {
  await database?.drop()
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
})

interface Run {
  code: number
  stdout: string
  stderr: string
}

function herald(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [builtMain(), ...args], { cwd: ROOT, env, timeout: STEP_TIMEOUT }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0
      resolve({ code, stdout, stderr })
    })
  })
}

function json(run: Run): any {
  expect(run.code, run.stderr).toBe(0)
  return JSON.parse(run.stdout)
}

/** The CLI's database, opened only while no CLI process runs (an embedded data dir has one user at a time). */
async function withDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  if (database) return fn(database.db)
  const db = await openDatabase({ databaseUrl: null, dataDir })
  try {
    return await fn(db)
  } finally {
    await db.close()
  }
}

describe('herald CLI', () => {
  let projectId: string
  let projectKey: string
  let key: { id: string; api_key: string }

  it('db migrate prints the migrations it applied', async () => {
    const out = json(await herald('db', 'migrate'))
    expect(out).toEqual({ applied: expect.any(Array) })
    // A fresh embedded cluster starts empty; a cloned PostgreSQL database is migrated already.
    if (dataDir) expect(out.applied).toContain('0001_init.sql')
  }, STEP_TIMEOUT)

  it('projects create prints the project with its first key', async () => {
    const out = json(await herald('projects', 'create', '--name', 'Shop', '--plan', 'plus', '--domain', 'shop.example.com'))
    expect(out).toEqual({
      id: expect.stringMatching(/^prj_/),
      name: 'Shop',
      plan: 'plus',
      api_key: expect.stringMatching(/^hk_live_/),
      vapid_public: expect.any(String),
    })
    projectId = out.id
    projectKey = out.api_key
  }, STEP_TIMEOUT)

  it('projects list shows it', async () => {
    const out = json(await herald('projects', 'list'))
    expect(out.next_cursor).toBeNull()
    expect(out.projects).toEqual([
      {
        id: projectId,
        name: 'Shop',
        domain: 'shop.example.com',
        plan: 'plus',
        default_icon: null,
        limits: PLANS.plus,
        limit_overrides: {},
        usage: { subscribers: 0, pushes_this_month: 0 },
        vapid_public: expect.any(String),
        created_at: expect.any(Number),
        expire_after_failures: null,
        expire_after_days_without_delivery: null,
      },
    ])
  }, STEP_TIMEOUT)

  it('projects update changes plan, icon, limit overrides and expiry rules', async () => {
    const out = json(
      await herald('projects', 'update', projectId, '--plan', 'pro', '--default-icon', 'https://cdn.example.com/i.png',
        '--limit', 'groups=10', '--limit', 'subscribers=null', '--limit', 'monthly_pushes=0',
        '--expire-after-failures', '7', '--expire-after-days-without-delivery', 'null'),
    )
    expect(out).toMatchObject({
      id: projectId,
      plan: 'pro',
      default_icon: 'https://cdn.example.com/i.png',
      limits: { ...PLANS.pro, groups: 10, monthly_pushes: 0 },
      limit_overrides: { groups: 10, monthly_pushes: 0 },
      expire_after_failures: 7,
      expire_after_days_without_delivery: null,
    })
  }, STEP_TIMEOUT)

  it('keys create prints a new key', async () => {
    key = json(await herald('keys', 'create', projectId, '--name', 'ci'))
    expect(key).toMatchObject({ id: expect.stringMatching(/^key_/), name: 'ci', scope: 'full', api_key: expect.stringMatching(/^hk_live_/) })
  }, STEP_TIMEOUT)

  it('keys create --scope makes a scoped key; keys list shows the scope', async () => {
    const scoped = json(await herald('keys', 'create', projectId, '--name', 'webhooks only', '--scope', 'webhooks'))
    expect(scoped).toMatchObject({ name: 'webhooks only', scope: 'webhooks' })
    await withDatabase(async (db) => {
      expect((await findActiveKeyByPrefix(db, lookupPrefix(scoped.api_key)!))?.key.scope).toBe('webhooks')
    })
    const list = json(await herald('keys', 'list', projectId))
    expect(list.api_keys.find((k: { id: string }) => k.id === scoped.id)).toMatchObject({ scope: 'webhooks', revoked_at: null })
    expect(JSON.stringify(list)).not.toContain(scoped.api_key)
  }, STEP_TIMEOUT)

  it('keys create --scope with an unknown scope exits 2, says which scopes exist, and creates nothing', async () => {
    const count = () => withDatabase(async (db) => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1', [projectId])).rows[0].n)
    const before = await count()
    const run = await herald('keys', 'create', projectId, '--scope', 'everything')
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain('--scope everything: the scope is one of full, send, subscribers, groups, webhooks')
    expect(await count()).toBe(before)
  }, STEP_TIMEOUT)

  it('keys revoke revokes it and only it', async () => {
    expect(json(await herald('keys', 'revoke', projectId, key.id))).toEqual({ ok: true })
    await withDatabase(async (db) => {
      expect(await findActiveKeyByPrefix(db, lookupPrefix(key.api_key)!)).toBeNull()
      expect((await findActiveKeyByPrefix(db, lookupPrefix(projectKey)!))?.project.id).toBe(projectId)
      const stored = await db.query<{ limits: unknown; plan: string }>('SELECT limits, plan FROM projects WHERE id = $1', [projectId])
      expect(stored.rows[0]).toEqual({ limits: { groups: 10, monthly_pushes: 0 }, plan: 'pro' })
    })
  }, STEP_TIMEOUT)

  it('exits 2 with a message on bad arguments', async () => {
    const run = await herald('projects', 'update', projectId, '--limit', 'groups=lots')
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain('--limit groups=lots')
  }, STEP_TIMEOUT)

  it('exits 1 with the error JSON when the operation fails', async () => {
    const run = await herald('keys', 'create', 'prj_unknown')
    expect(run.code).toBe(1)
    expect(run.stdout).toBe('')
    expect(JSON.parse(run.stderr)).toEqual({ error: { code: 'project_not_found', message: expect.any(String) } })
  }, STEP_TIMEOUT)

  it('projects create --vapid-private --vapid-public imports the pair; set-vapid-keys replaces it and refuses a mismatched one', async () => {
    // KEY=VALUE: a base64url key starts with '-' one time in 64, which parseArgs would take for an option.
    const imported = generateVapidKeys()
    const out = json(await herald('projects', 'create', '--name', 'Moved', `--vapid-private=${imported.privateKey}`, `--vapid-public=${imported.publicKey}`))
    expect(out.vapid_public).toBe(imported.publicKey)
    const next = generateVapidKeys()
    const replaced = json(await herald('projects', 'set-vapid-keys', out.id, `--vapid-private=${next.privateKey}`, `--vapid-public=${next.publicKey}`))
    expect(replaced).toMatchObject({ id: out.id, vapid_public: next.publicKey })
    const mismatched = await herald('projects', 'set-vapid-keys', out.id, `--vapid-private=${imported.privateKey}`, `--vapid-public=${next.publicKey}`)
    expect(mismatched.code).toBe(1)
    expect(JSON.parse(mismatched.stderr).error).toMatchObject({ code: 'invalid_request', issues: [{ path: 'vapid_public' }] })
    await withDatabase(async (db) => {
      const row = (await db.query<{ vapid_private: string }>('SELECT vapid_private FROM projects WHERE id = $1', [out.id])).rows[0]
      expect(row.vapid_private).toBe(next.privateKey)
    })
  }, STEP_TIMEOUT * 3)

  it('subscribers import FILE imports it (idempotent), and subscribers export --keys writes it back with the VAPID pair first', async () => {
    const created = json(await herald('projects', 'create', '--name', 'Moving'))
    const file = path.join(os.tmpdir(), `herald-import-${process.pid}.ndjson`)
    const sub = (i: number) => JSON.stringify({ endpoint: `https://fcm.googleapis.com/fcm/send/cli-${i}`, keys: { p256dh: `p${i}`, auth: `a${i}` }, external_id: `u${i}` })
    fs.writeFileSync(file, `${sub(1)}\n{oops\n${sub(2)}\n`)
    try {
      expect(json(await herald('subscribers', 'import', file, '--project', created.id))).toEqual({
        imported: 2, updated: 0, skipped: 1, errors: [{ line: 2, field: '(line)', reason: 'is not valid JSON' }],
      })
      expect(json(await herald('subscribers', 'import', file, '--project', created.id))).toMatchObject({ imported: 0, updated: 0, skipped: 1 })
    } finally {
      fs.rmSync(file, { force: true })
    }
    const out = await herald('subscribers', 'export', '--project', created.id, '--keys')
    expect(out.code, out.stderr).toBe(0)
    const [head, ...lines] = out.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line))
    expect(head).toMatchObject({ herald_export: 1, project: created.id, vapid_public: created.vapid_public, vapid_private: expect.any(String) })
    // Ids made in the same millisecond have no order between them: compared by endpoint.
    expect(lines.map((line) => [line.endpoint, line.keys, line.external_id, line.source]).sort()).toEqual([1, 2].map((i) => [`https://fcm.googleapis.com/fcm/send/cli-${i}`, { p256dh: `p${i}`, auth: `a${i}` }, `u${i}`, 'import']))
  }, STEP_TIMEOUT * 4)
})
