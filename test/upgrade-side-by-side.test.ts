// The rolling upgrade of README.md ("Upgrading a fleet"), run for real
// (issue 27): the previous release (release/previous.json, built from this
// repository's own history with its own dependencies) migrates a fresh
// PostgreSQL database and runs an API and two workers; a broadcast is sent
// through its API; mid fan-out this checkout migrates and starts its API and a
// worker, and the old workers are stopped one by one (SIGTERM, then SIGKILL:
// the crash bound). Nothing lost, nothing counted twice, duplicates within
// the batches in flight, and the broadcast ends `sent`. PostgreSQL only: the
// embedded database belongs to one process, so two releases cannot share it.
// About 55 s once the previous release is built (its first build adds an
// `npm ci`, 10-25 s), so it runs when HERALD_TEST_UPGRADE=1 (.ci/run), not
// in every `npm test`.
import { execFile, execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_TOKEN } from './support/app.ts'
import { ROOT } from './support/cli.ts'
import { createTestDatabase, testDbMode, type TestDatabase } from './support/database.ts'
import { bulkSubscribe, sleep } from './support/delivery.ts'
import { startPushService, type PushService } from './support/push-service.ts'
import { startWorkerProcess, type WorkerProcess } from './support/worker-process.ts'

const run = promisify(execFile)
const previous = JSON.parse(fs.readFileSync(path.join(ROOT, 'release/previous.json'), 'utf8')) as { version: string; commit: string }

const AUDIENCE = 4000
const BATCH = 50
const CONCURRENCY = 1
const env = {
  HERALD_ADMIN_TOKEN: ADMIN_TOKEN,
  HERALD_ALLOW_PRIVATE_ENDPOINTS: 'true',
  HERALD_FANOUT_BATCH_SIZE: String(BATCH),
  HERALD_WORKER_CONCURRENCY: String(CONCURRENCY),
  HERALD_JOB_LEASE_MS: '1500',
  HERALD_SCHEDULER_INTERVAL_MS: '200',
  HERALD_ENCRYPT_THREADS: '1',
  HERALD_LOG_LEVEL: 'info',
}

/**
 * The previous release's checkout with its own node_modules, built once per
 * commit and kept (in the OS temp directory) for later runs: `git archive`
 * of the pinned commit, then `npm ci --prefer-offline --ignore-scripts` (its
 * lock file differs from this one, so node_modules cannot be shared; without
 * the install scripts the OpenSSL addon is not built and it encrypts with
 * node:crypto, its own fallback).
 */
async function previousRelease(): Promise<string> {
  const dir = path.join(os.tmpdir(), `herald-release-${previous.commit}`)
  if (fs.existsSync(path.join(dir, '.herald-ready'))) return dir
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  try {
    execFileSync('git', ['cat-file', '-e', `${previous.commit}^{commit}`], { cwd: ROOT, stdio: 'ignore' })
  } catch {
    // A shallow clone (CI's default in many systems) lacks older commits.
    throw new Error(`commit ${previous.commit} (release ${previous.version}) is not in this repository: fetch its history (git fetch --unshallow)`)
  }
  const archive = execFileSync('git', ['archive', previous.commit], { cwd: ROOT, maxBuffer: 256 * 1024 * 1024 })
  execFileSync('tar', ['-x', '-C', dir], { input: archive })
  await run('npm', ['ci', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, timeout: 300_000 })
  fs.writeFileSync(path.join(dir, '.herald-ready'), `${previous.version}\n`)
  return dir
}

async function herald(root: string, databaseUrl: string, args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, ...env },
    timeout: 60_000,
  })
  return stdout
}

const enabled = testDbMode() === 'postgres' && process.env.HERALD_TEST_UPGRADE === '1'

describe.skipIf(!enabled)('rolling upgrade from the previous release (HERALD_TEST_UPGRADE=1; PostgreSQL only: two releases cannot share the embedded database)', () => {
  let database: TestDatabase
  let push: PushService
  let oldRoot: string
  const processes: WorkerProcess[] = []

  beforeAll(async () => {
    oldRoot = await previousRelease()
    // Each push is answered after 500 ms: the two old workers alone need about 20 s
    // for the fan-out, room for the new release to start on a busy machine.
    push = await startPushService({ delayMs: 500 })
    database = await createTestDatabase({ migrated: false })
  }, 320_000)
  afterAll(async () => {
    await Promise.all(processes.map((p) => p.kill('SIGKILL')))
    await database?.drop()
    await push?.close()
  })

  it(`upgrades ${previous.version} to this release mid fan-out: the broadcast ends sent, each subscriber counted once`, async () => {
    const url = database.url!
    const start = (role: 'api' | 'worker', root: string) => {
      const p = startWorkerProcess(url, env, role, root)
      processes.push(p)
      return p
    }
    const broadcastOf = async (api: WorkerProcess, id: string, auth: string) => {
      const res = await fetch(`${api.healthUrl}/v1/broadcasts/${id}`, { headers: { authorization: auth } })
      expect(res.status).toBe(200)
      return (await res.json()) as { id: string; status: string; audience: number; delivered: number; failed: number }
    }

    // The previous release: migrate, a project and key through its CLI, an API and two workers.
    await herald(oldRoot, url, ['db', 'migrate'])
    const project = JSON.parse(await herald(oldRoot, url, ['projects', 'create', '--name', 'Upgrade', '--plan', 'max'])) as { id: string; api_key: string }
    const auth = `Bearer ${project.api_key}`
    await bulkSubscribe(database.db, project.id, push, AUDIENCE)
    const oldApi = start('api', oldRoot)
    const oldWorkers = [start('worker', oldRoot), start('worker', oldRoot)]
    await Promise.all([oldApi.ready, ...oldWorkers.map((w) => w.ready)])

    const sent = await fetch(`${oldApi.healthUrl}/v1/send`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({ target: { type: 'all' }, notification: { title: 'Upgrade', body: 'mid fan-out' } }),
    })
    expect(sent.status).toBe(202)
    const id = ((await sent.json()) as { broadcast_id: string }).broadcast_id
    await push.waitForCount(200, 60_000)

    // Step 2: migrate with the new release while the old processes run.
    const migrated = JSON.parse(await herald(ROOT, url, ['db', 'migrate'])) as { applied: string[] }
    expect(migrated.applied.length).toBeGreaterThan(0)
    // Step 3: the new release's API and a worker beside the old ones.
    const newApi = start('api', ROOT)
    const newWorker = start('worker', ROOT)
    await Promise.all([newApi.ready, newWorker.ready])
    const beforeStops = push.count
    expect(beforeStops).toBeLessThan(AUDIENCE)

    // Both APIs answer the contract for the broadcast while it is sending.
    for (const api of [oldApi, newApi]) {
      expect(await broadcastOf(api, id, auth)).toMatchObject({ id, status: 'sending', audience: AUDIENCE })
    }

    // The old workers stopped one by one mid fan-out: SIGTERM, then SIGKILL.
    await oldWorkers[0].kill('SIGTERM')
    expect(await oldWorkers[0].exited).toBe(0)
    await push.waitForCount(push.count + 100, 60_000)
    await oldWorkers[1].kill('SIGKILL')
    const atKill = push.count
    expect(atKill).toBeLessThan(AUDIENCE)
    expect(await broadcastOf(oldApi, id, auth)).toMatchObject({ id, audience: AUDIENCE })
    await oldApi.kill('SIGTERM')

    // The new worker finishes alone; the new API reports it.
    let state = await broadcastOf(newApi, id, auth)
    for (const deadline = Date.now() + 90_000; state.status === 'sending' && Date.now() < deadline; ) {
      await sleep(200)
      state = await broadcastOf(newApi, id, auth)
    }
    expect(state).toMatchObject({ status: 'sent', audience: AUDIENCE, delivered: AUDIENCE, failed: 0 })

    const counts = new Map<string, number>()
    for (const r of push.received) counts.set(r.subscriptionId, (counts.get(r.subscriptionId) ?? 0) + 1)
    expect(counts.size).toBe(AUDIENCE)
    // Pushed twice: at most the batches in flight in the killed worker (docs/decisions.md, "After a crash").
    const duplicates = [...counts.values()].filter((n) => n > 1).length
    expect(duplicates).toBeLessThanOrEqual(BATCH * CONCURRENCY)
    const events = await database.db.query<{ n: number; distinct_subs: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT subscriber_id)::int AS distinct_subs FROM events WHERE broadcast_id = $1 AND type = 'delivered'`,
      [id],
    )
    // The previous release writes a delivered event per push, this one only for a webhook endpoint that takes them (none here): never one twice.
    expect(events.rows[0].n).toBe(events.rows[0].distinct_subs)
    const leftover = await database.db.query(`SELECT 1 FROM jobs WHERE payload ->> 'broadcast_id' = $1`, [id])
    expect(leftover.rows).toHaveLength(0)
    // The new processes really are the new release.
    const health = (await (await fetch(`${newApi.healthUrl}/healthz`)).json()) as { version: string }
    expect(health.version).not.toBe(previous.version)
  }, 240_000)
})
