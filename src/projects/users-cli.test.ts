// `herald users create` run for real, as a child process (the tests' build of
// the CLI, test/support/built-cli.ts), against a database of its own (on the
// embedded database, a copy of the migrated template); the link it prints is then opened by an app on that database:
// it sets the password and the new owner signs in.
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { builtMain } from '../../test/support/built-cli.ts'
import { createTestDatabase, testDbMode, type TestDatabase } from '../../test/support/database.ts'
import { ensureTemplate } from '../../test/support/embedded-template.ts'
import { testConfig } from '../../test/support/app.ts'
import { buildApp } from '../app.ts'
import { openDatabase } from '../platform/db/database.ts'
import { createContext } from '../platform/context.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const STEP_TIMEOUT = 120_000
const PUBLIC_URL = 'https://push.example.com'

let env: NodeJS.ProcessEnv
let database: TestDatabase | null = null
let dataDir: string | null = null

beforeAll(async () => {
  env = { ...process.env, NODE_ENV: 'test', HERALD_PUBLIC_URL: PUBLIC_URL }
  if (testDbMode() === 'postgres') {
    database = await createTestDatabase()
    env.DATABASE_URL = database.url!
  } else {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-users-cli-'))
    fs.cpSync(path.join(await ensureTemplate(), 'migrated'), dataDir, { recursive: true })
    delete env.DATABASE_URL
    env.HERALD_DATA_DIR = dataDir
  }
})
afterAll(async () => {
  await database?.drop()
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
})

function herald(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [builtMain(), ...args], { cwd: ROOT, env, timeout: STEP_TIMEOUT }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr })
    })
  })
}

describe('herald users create', () => {
  it('prints an invite link under HERALD_PUBLIC_URL that sets the first owner\'s password; the owner then signs in', async () => {
    const project = await herald('projects', 'create', '--name', 'Shop')
    expect(project.code, project.stderr).toBe(0)
    const projectId = JSON.parse(project.stdout).id

    expect((await herald('users', 'create', '--email', 'owner@example.com', '--project', projectId, '--role', 'boss')).code).toBe(2)
    expect((await herald('users', 'create', '--email', 'owner@example.com', '--project', 'prj_nope', '--role', 'owner')).code).toBe(1)
    const run = await herald('users', 'create', '--email', 'owner@example.com', '--project', projectId, '--role', 'owner')
    expect(run.code, run.stderr).toBe(0)
    const created = JSON.parse(run.stdout)
    expect(created).toMatchObject({ email: 'owner@example.com', project_id: projectId, role: 'owner' })
    expect(created.invite_url).toMatch(new RegExp(`^${PUBLIC_URL}/dashboard/#/invite/[A-Za-z0-9_-]{43}$`))
    const token = created.invite_url.split('/').pop()

    const db = database ? database.db : await openDatabase({ databaseUrl: null, dataDir })
    const app = await buildApp(createContext(testConfig({ HERALD_PUBLIC_URL: PUBLIC_URL }), db))
    try {
      const accepted = await app.inject({ method: 'POST', url: '/v1/invites/accept', payload: { token, password: 'first owner password' } })
      expect(accepted.statusCode, accepted.body).toBe(200)
      const session = await app.inject({ method: 'POST', url: '/v1/session', payload: { email: 'owner@example.com', password: 'first owner password' } })
      expect(session.statusCode).toBe(200)
      expect(session.json().project).toMatchObject({ id: projectId, role: 'owner' })
      expect(session.json().permissions).toContain('members:manage')
    } finally {
      await app.close()
      if (!database) await db.close()
    }
  }, 4 * STEP_TIMEOUT)
})

describe('herald users reset-password', () => {
  it('prints a one-hour reset link under HERALD_PUBLIC_URL; the link sets a new password (run after the test above, on its account)', async () => {
    expect((await herald('users', 'reset-password')).code).toBe(2)
    const unknown = await herald('users', 'reset-password', 'nobody@example.com')
    expect(unknown.code).toBe(1)
    expect(JSON.parse(unknown.stderr).error.code).toBe('user_not_found')
    const run = await herald('users', 'reset-password', 'Owner@Example.com')
    expect(run.code, run.stderr).toBe(0)
    const created = JSON.parse(run.stdout)
    expect(created).toMatchObject({ email: 'owner@example.com', user_id: expect.stringMatching(/^usr_/) })
    expect(created.reset_url).toMatch(new RegExp(`^${PUBLIC_URL}/dashboard/#/reset/[A-Za-z0-9_-]{43}$`))
    expect(created.expires_at - Date.now()).toBeLessThanOrEqual(3_600_000)

    const db = database ? database.db : await openDatabase({ databaseUrl: null, dataDir })
    const app = await buildApp(createContext(testConfig({ HERALD_PUBLIC_URL: PUBLIC_URL }), db))
    try {
      const reset = await app.inject({ method: 'POST', url: '/v1/password-reset', payload: { token: created.reset_url.split('/').pop(), password: 'second owner password' } })
      expect(reset.statusCode, reset.body).toBe(200)
      const session = await app.inject({ method: 'POST', url: '/v1/session', payload: { email: 'owner@example.com', password: 'second owner password' } })
      expect(session.statusCode).toBe(200)
    } finally {
      await app.close()
      if (!database) await db.close()
    }
  }, 4 * STEP_TIMEOUT)
})
