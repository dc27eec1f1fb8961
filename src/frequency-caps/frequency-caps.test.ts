// Frequency caps end to end (issue 24, docs/frequency-caps.md): the project
// setting through PATCH /v1/me, sends through the real API, fan-out by the
// real worker to the local push service. Time is injected by moving the
// counted pushes (and the deferred job) back, never by waiting.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { bulkSubscribe, getBroadcast, send, subscribeBrowser, waitForBroadcast, type Browser } from '../../test/support/delivery.ts'
import { testDbMode } from '../../test/support/database.ts'
import { startWorkerProcess } from '../../test/support/worker-process.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.ts'
import { addMember, signIn } from '../../test/support/members.ts'
import { giveBackPushes, reservePushes } from './push-counts.store.ts'
import { prunePushCounts } from './push-counts-prune.ts'

let t: TestApp
let push: PushService
let receiver: WebhookReceiver
let project: TestProject

beforeAll(async () => {
  push = await startPushService()
  receiver = await startWebhookReceiver()
  t = await createTestApp(
    { HERALD_FANOUT_BATCH_SIZE: '4', HERALD_WORKER_CONCURRENCY: '4', HERALD_ENCRYPT_THREADS: '1', HERALD_SCHEDULER_INTERVAL_MS: '50', HERALD_WEBHOOK_RETRY_BASE_MS: '5' },
    { worker: true },
  )
})
afterAll(async () => {
  await t.close()
  await push.close()
  await receiver.close()
})
beforeEach(async () => {
  push.reset()
  project = await t.project({ plan: 'plus' })
})

const notification = { title: 'Sale', body: 'Everything must go' }
const me = (p: TestProject, payload: unknown, headers: Record<string, string> = p.auth) =>
  t.app.inject({ method: 'PATCH', url: '/v1/me', headers, payload: payload as object })

async function setCaps(p: TestProject, caps: unknown): Promise<void> {
  const res = await me(p, { frequency_caps: caps })
  expect(res.statusCode, res.body).toBe(200)
}

function pushesTo(b: Browser): number {
  return push.receivedFor(b.endpoint).length
}

/** Moves every counted push of the project `ms` into the past, and its deferred jobs' due times with them: time passing. */
async function travel(projectId: string, ms: number): Promise<void> {
  await t.ctx.db.query(
    `UPDATE push_counts SET sent_at = ARRAY(SELECT x - $2 * interval '1 millisecond' FROM unnest(sent_at) AS x), last_at = last_at - $2 * interval '1 millisecond'
      WHERE project_id = $1`,
    [projectId, ms],
  )
  await t.ctx.db.query(
    `UPDATE jobs SET run_at = run_at - $1 * interval '1 millisecond'
      WHERE kind = 'push_deferred' AND payload ->> 'broadcast_id' IN (SELECT id FROM broadcasts WHERE project_id = $2)`,
    [ms, projectId],
  )
}

describe('the frequency_caps setting (PATCH /v1/me)', () => {
  it('is read back by GET /v1/me, [] and null turn it off, and a bad rule is a 400 naming the field that changes nothing', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/v1/me', headers: project.auth })).json().project.frequency_caps).toEqual([])
    await setCaps(project, [{ max: 2, per: '1d' }, { max: 5, per: '7d' }])
    expect((await t.app.inject({ method: 'GET', url: '/v1/me', headers: project.auth })).json().project.frequency_caps).toEqual([
      { max: 2, per: '1d' },
      { max: 5, per: '7d' },
    ])
    const bad: Array<[unknown, string]> = [
      [[{ max: 0, per: '1d' }], 'frequency_caps.0.max'],
      [[{ max: 2, per: '5m' }], 'frequency_caps.0.per'],
      [[{ max: 2 }], 'frequency_caps.0'],
      [[{ max: 1.5, per: '1d' }], 'frequency_caps.0.max'],
      [Array.from({ length: 6 }, (_, i) => ({ max: i + 1, per: '1d' })), 'frequency_caps'],
      [[{ max: 2, per: '1d' }, { max: 3, per: '1d' }], 'frequency_caps.1.per'],
      [[{ max: 2, per: '1d', extra: true }], 'frequency_caps.0'],
      ['2 per day', 'frequency_caps'],
    ]
    for (const [caps, field] of bad) {
      const res = await me(project, { frequency_caps: caps })
      expect(res.statusCode, JSON.stringify(caps)).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
      expect(res.json().error.message, JSON.stringify(caps)).toContain(field)
    }
    // An empty body still changes nothing and is refused, as before caps existed.
    expect((await me(project, {})).statusCode).toBe(400)
    expect((await t.app.inject({ method: 'GET', url: '/v1/me', headers: project.auth })).json().project.frequency_caps).toHaveLength(2)
    // Each change is in the audit log, with who made it and the rules; the refusals left nothing there.
    const audited = await t.database.db.query<{ actor_id: string; details: unknown }>(
      `SELECT actor_id, details FROM audit_log WHERE project_id = $1 AND action = 'project.update' ORDER BY id`,
      [project.id],
    )
    expect(audited.rows).toEqual([{ actor_id: project.apiKeyId, details: { fields: ['frequency_caps'], frequency_caps: [{ max: 2, per: '1d' }, { max: 5, per: '7d' }] } }])
    await setCaps(project, [])
    expect((await t.database.db.query('SELECT frequency_caps FROM projects WHERE id = $1', [project.id])).rows[0].frequency_caps).toBeNull()
    await setCaps(project, [{ max: 1, per: '1h' }])
    await setCaps(project, null)
    expect((await t.app.inject({ method: 'GET', url: '/v1/me', headers: project.auth })).json().project.frequency_caps).toEqual([])
  })

  it('is set by owners, admins and full keys only, each project its own', async () => {
    const sendKey = (await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: project.auth, payload: { name: 's', scope: 'send' } })).json().api_key
    const refused = await me(project, { frequency_caps: [{ max: 1, per: '1d' }] }, { authorization: `Bearer ${sendKey}` })
    expect(refused.statusCode).toBe(403)
    expect(refused.json().error.code).toBe('insufficient_scope')
    const email = `editor-${project.id}@example.com`
    await addMember(t, project.id, email, 'editor')
    const editor = await signIn(t, email, undefined, { project: project.id })
    const byEditor = await me(project, { frequency_caps: [{ max: 1, per: '1d' }] }, editor.headers)
    expect(byEditor.statusCode).toBe(403)
    expect(byEditor.json().error.code).toBe('insufficient_role')
    // Another project's key sets its own project's caps, never this one's.
    const other = await t.project({ plan: 'plus' })
    await setCaps(other, [{ max: 1, per: '1d' }])
    expect((await t.app.inject({ method: 'GET', url: '/v1/me', headers: project.auth })).json().project.frequency_caps).toEqual([])
  })
})

describe('fan-out with frequency caps', () => {
  it('caps each subscriber across broadcasts; the capped ones are failed with reason capped in the view, the events and the webhooks', async () => {
    const hook = (await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: project.auth, payload: { url: `${receiver.url}/caps-${project.id}`, events: ['failed'] } })).json()
    await setCaps(project, [{ max: 2, per: '1d' }, { max: 5, per: '7d' }])
    const browsers = await Promise.all(Array.from({ length: 6 }, () => subscribeBrowser(t, project, push)))
    for (let i = 0; i < 2; i++) {
      const id = await send(t, project, { target: { type: 'all' }, notification })
      expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 6, failed: 0 })
    }
    const third = await send(t, project, { target: { type: 'all' }, notification })
    const done = await waitForBroadcast(t, project, third)
    expect(done).toMatchObject({ status: 'sent', audience: 6, delivered: 0, failed: 6, capped: 6, pending: 0, failures: { capped: 6, gone: 0 }, class: 'marketing', on_capped: 'skip' })
    expect(browsers.map(pushesTo)).toEqual([2, 2, 2, 2, 2, 2])
    const events = await t.database.db.query<{ subscriber_id: string; meta: unknown }>(`SELECT subscriber_id, meta FROM events WHERE broadcast_id = $1 AND type = 'failed'`, [third])
    expect(events.rows.map((e) => e.subscriber_id).sort()).toEqual(browsers.map((b) => b.id).sort())
    expect(events.rows.every((e) => JSON.stringify(e.meta) === JSON.stringify({ reason: 'capped', status: null }))).toBe(true)
    const hooks = await receiver.waitFor(`/caps-${project.id}`, 6)
    expect(hooks.map((h) => h.json)).toEqual(Array(6).fill(expect.objectContaining({ type: 'failed', broadcast_id: third, meta: { reason: 'capped', status: null } })))
    expect(hook.id).toMatch(/^whk_/)
    // Skipped pushes were never sent: the month's usage counts the 12 that were.
    expect((await t.app.inject({ method: 'GET', url: '/v1/me', headers: project.auth })).json().project.usage.pushes_this_month).toBe(12)
    // A day later the 1d rule allows one more each, and then the 7d rule (5) still has room for one.
    await travel(project.id, 24 * 3600_000 + 1000)
    const fourth = await send(t, project, { target: { type: 'all' }, notification })
    expect(await waitForBroadcast(t, project, fourth)).toMatchObject({ delivered: 6, capped: 0 })
  })

  it('never caps a transactional send, but counts its pushes against later marketing sends', async () => {
    await setCaps(project, [{ max: 1, per: '1d' }])
    const [a, b] = await Promise.all([subscribeBrowser(t, project, push), subscribeBrowser(t, project, push)])
    for (let i = 0; i < 2; i++) {
      const id = await send(t, project, { target: { type: 'all' }, notification, class: 'transactional' })
      expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 2, capped: 0, class: 'transactional' })
    }
    const marketing = await send(t, project, { target: { type: 'all' }, notification })
    expect(await waitForBroadcast(t, project, marketing)).toMatchObject({ status: 'sent', delivered: 0, capped: 2 })
    expect([pushesTo(a), pushesTo(b)]).toEqual([2, 2])
  })

  it('gives back the count of a push that failed, and counts nothing without caps', async () => {
    await setCaps(project, [{ max: 1, per: '1d' }])
    const [ok, refused] = await Promise.all([subscribeBrowser(t, project, push), subscribeBrowser(t, project, push)])
    push.fail(refused.endpoint, { status: 400, times: 1 })
    const first = await send(t, project, { target: { type: 'all' }, notification })
    expect(await waitForBroadcast(t, project, first)).toMatchObject({ delivered: 1, failed: 1, failures: { rejected: 1 } })
    const second = await send(t, project, { target: { type: 'all' }, notification })
    expect(await waitForBroadcast(t, project, second)).toMatchObject({ delivered: 1, capped: 1 })
    expect([pushesTo(ok), pushesTo(refused)]).toEqual([1, 1])

    const plain = await t.project({ plan: 'plus' })
    await subscribeBrowser(t, plain, push)
    await waitForBroadcast(t, plain, await send(t, plain, { target: { type: 'all' }, notification }))
    expect((await t.database.db.query('SELECT 1 FROM push_counts WHERE project_id = $1', [plain.id])).rows).toEqual([])
  })

  it('with on_capped defer, holds the push until the window allows it, then sends it with its full TTL', async () => {
    await setCaps(project, [{ max: 1, per: '1h' }])
    const browser = await subscribeBrowser(t, project, push)
    const first = await send(t, project, { target: { type: 'all' }, notification })
    await waitForBroadcast(t, project, first)
    const sentAt = (await t.database.db.query<{ at: Date }>('SELECT sent_at[1] AS at FROM push_counts WHERE subscriber_id = $1', [browser.id])).rows[0].at

    const deferred = await send(t, project, { target: { type: 'all' }, notification: { ...notification, title: 'Later' }, on_capped: 'defer', ttl: 600 })
    const jobs = async () =>
      (await t.database.db.query<{ run_at: Date; payload: { subscriber_ids: string[] } }>(`SELECT run_at, payload FROM jobs WHERE kind = 'push_deferred' AND payload ->> 'broadcast_id' = $1`, [deferred])).rows
    for (let i = 0; i < 400 && (await jobs()).length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 25))
    const [job] = await jobs()
    expect(job.payload.subscriber_ids).toEqual([browser.id])
    // Due when the push counted leaves the hour, to the second.
    expect(Math.abs(job.run_at.getTime() - (sentAt.getTime() + 3600_000))).toBeLessThanOrEqual(1000)
    expect(await getBroadcast(t, project, deferred)).toMatchObject({ status: 'sending', pending: 1, delivered: 0, failed: 0 })
    expect(pushesTo(browser)).toBe(1)

    await travel(project.id, 3600_000 + 1000)
    expect(await waitForBroadcast(t, project, deferred)).toMatchObject({ status: 'sent', delivered: 1, capped: 0, pending: 0 })
    const later = push.receivedFor(browser.endpoint).at(-1)!
    expect(later.payload).toMatchObject({ title: 'Later' })
    // The TTL runs from when the push left, not from the broadcast's start an hour before.
    expect(later.headers.ttl).toBeGreaterThan(590)
  })

  it('two broadcasts fanning out at once never give a subscriber more than the cap', async () => {
    await setCaps(project, [{ max: 1, per: '1d' }])
    const browsers = await Promise.all(Array.from({ length: 24 }, () => subscribeBrowser(t, project, push)))
    const ids = await Promise.all([0, 1, 2].map(() => send(t, project, { target: { type: 'all' }, notification })))
    const done = await Promise.all(ids.map((id) => waitForBroadcast(t, project, id)))
    expect(done.reduce((n, b) => n + b.delivered, 0)).toBe(24)
    expect(done.reduce((n, b) => n + (b as unknown as { capped: number }).capped, 0)).toBe(48)
    expect(browsers.map(pushesTo)).toEqual(Array(24).fill(1))
  })
})

describe.runIf(testDbMode() === 'postgres')('worker processes on PostgreSQL', () => {
  it('two broadcasts fanned out at once by worker processes (and this one) never give a subscriber more than the cap', async () => {
    await setCaps(project, [{ max: 1, per: '1d' }])
    const browsers = await bulkSubscribe(t.database.db, project.id, push, 300)
    const env = { HERALD_FANOUT_BATCH_SIZE: '10', HERALD_WORKER_CONCURRENCY: '2', HERALD_ENCRYPT_THREADS: '1', HERALD_SCHEDULER_INTERVAL_MS: '100', HERALD_LOG_LEVEL: 'debug' }
    const pair = [startWorkerProcess(t.database.url!, env), startWorkerProcess(t.database.url!, env)]
    try {
      await Promise.all(pair.map((w) => w.ready))
      const ids = await Promise.all([0, 1].map(() => send(t, project, { target: { type: 'all' }, notification })))
      const done = await Promise.all(ids.map((id) => waitForBroadcast(t, project, id, undefined, 60_000)))
      expect(done.reduce((n, b) => n + b.delivered, 0)).toBe(300)
      expect(done.reduce((n, b) => n + (b as unknown as { capped: number }).capped, 0)).toBe(300)
      expect(browsers.every((b) => pushesTo(b) === 1)).toBe(true)
      // The processes took part: batches of these broadcasts were sent by them, not only by this process's worker.
      const batchesOf = (w: (typeof pair)[number]) => w.logs.filter((l) => l.msg === 'batch sent' && ids.includes(l.broadcast_id as string)).length
      await expect.poll(() => batchesOf(pair[0]) + batchesOf(pair[1]), { timeout: 5000 }).toBeGreaterThan(0)
    } finally {
      await Promise.all(pair.map((w) => w.kill()))
    }
  }, 90_000)
})

describe('push counts under concurrency', () => {
  it('reservations racing on the same subscribers, locked in any order, count each exactly up to the cap and never deadlock', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `sub_race_${project.id}_${String(i).padStart(2, '0')}`)
    const rules = [{ max: 3, seconds: 3600 }]
    // 12 racers, each over a shuffled, overlapping part of the subscribers.
    const racers = Array.from({ length: 12 }, (_, r) => ids.filter((_, i) => (i + r) % 3 !== 0).sort(() => Math.random() - 0.5))
    const results = await Promise.all(racers.map((part) => reservePushes(t.ctx.db, project.id, part, rules, true)))
    const allowed = new Map<string, number>()
    for (const r of results) for (const id of r.allowed) allowed.set(id, (allowed.get(id) ?? 0) + 1)
    // Each subscriber is in 8 racers' parts: 3 allowed, 5 capped.
    expect([...allowed.values()]).toEqual(Array(40).fill(3))
    expect(results.reduce((n, r) => n + r.capped.length, 0)).toBe(40 * 5)
    const stored = await t.database.db.query<{ n: number }>('SELECT cardinality(sent_at) AS n FROM push_counts WHERE project_id = $1', [project.id])
    expect(stored.rows.map((r) => r.n)).toEqual(Array(40).fill(3))
  })

  it('give-backs of batches finishing race reservations without a deadlock, and every count adds up', async () => {
    const ids = Array.from({ length: 30 }, (_, i) => `sub_back_${project.id}_${String(i).padStart(2, '0')}`)
    const rules = [{ max: 1000, seconds: 3600 }]
    for (let i = 0; i < 10; i++) await reservePushes(t.ctx.db, project.id, ids, rules, true)
    const shuffled = () => [...ids].sort(() => Math.random() - 0.5)
    const racers = Array.from({ length: 20 }, (_, i) =>
      i % 2 ? () => reservePushes(t.ctx.db, project.id, shuffled(), rules, true) : () => t.ctx.db.transaction((tx) => giveBackPushes(tx, shuffled())))
    const results = await Promise.allSettled(racers.sort(() => Math.random() - 0.5).map((run) => run()))
    expect(results.filter((r) => r.status === 'rejected')).toEqual([])
    const stored = await t.database.db.query<{ n: number }>('SELECT cardinality(sent_at) AS n FROM push_counts WHERE subscriber_id = ANY ($1::text[])', [ids])
    expect(stored.rows.map((r) => r.n)).toEqual(Array(30).fill(10))
  })

  it('over several rules, a subscriber is due when every rule allows one more push: the latest of their windows', async () => {
    const id = `sub_due_${project.id}`
    await t.ctx.db.query(
      `INSERT INTO push_counts (subscriber_id, project_id, sent_at) VALUES ($1, $2, ARRAY[now() - interval '23 hours', now() - interval '10 minutes'])`,
      [id, project.id],
    )
    // 1 an hour: free in 50 minutes; 2 a day: free when the push of 23 hours ago leaves the day, in 1 hour.
    const rules = [{ max: 1, seconds: 3600 }, { max: 2, seconds: 86_400 }]
    const { allowed, capped } = await reservePushes(t.ctx.db, project.id, [id], rules, true)
    expect(allowed).toEqual([])
    expect(capped).toHaveLength(1)
    expect(Math.abs(capped[0].due - (Date.now() + 3600_000))).toBeLessThan(10_000)
    // 3 a day instead: the hour rule alone holds it, 50 minutes.
    const hourly = await reservePushes(t.ctx.db, project.id, [id], [rules[0], { max: 3, seconds: 86_400 }], true)
    expect(Math.abs(hourly.capped[0].due - (Date.now() + 50 * 60_000))).toBeLessThan(10_000)
  })

  it('the prune job deletes the rows no window can read any more, and only those', async () => {
    await reservePushes(t.ctx.db, project.id, ['sub_prune_old', 'sub_prune_new'], [{ max: 5, seconds: 3600 }], true)
    await t.ctx.db.query(`UPDATE push_counts SET last_at = now() - interval '31 days' WHERE subscriber_id = 'sub_prune_old'`)
    await prunePushCounts(t.ctx.db, { completeIn: async () => undefined })
    const left = await t.database.db.query<{ subscriber_id: string }>(`SELECT subscriber_id FROM push_counts WHERE subscriber_id LIKE 'sub_prune_%'`)
    expect(left.rows.map((r) => r.subscriber_id)).toEqual(['sub_prune_new'])
  })
})
