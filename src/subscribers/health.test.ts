// Subscription health end to end (issue 23): what fan-out's outcomes and the
// click beacon record on each subscriber, the project's expiry rules (in the
// outcome write and in the periodic job), the list's filters and the health
// counts, each project seeing only its own, and who may change the rules.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, ADMIN_TOKEN, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { send, subscribeBrowser, waitForBroadcast, type Browser } from '../../test/support/delivery.ts'
import { addMember, signIn } from '../../test/support/members.ts'
import { enqueue } from '../platform/jobs/queue.ts'
import { expireFailing } from './health-expiry.ts'

let t: TestApp
let push: PushService

beforeAll(async () => {
  push = await startPushService()
  t = await createTestApp({ HERALD_ENCRYPT_THREADS: '0' }, { worker: true })
})
afterAll(async () => {
  await t?.close()
  await push?.close()
})

const notification = { title: 'Hi', body: 'There' }
const DAY = 86_400_000

async function sendAll(project: TestProject): Promise<string> {
  const id = await send(t, project, { target: { type: 'all' }, notification })
  await waitForBroadcast(t, project, id)
  return id
}

async function get(project: TestProject, id: string) {
  const res = await t.app.inject({ method: 'GET', url: `/v1/subscribers/${id}`, headers: project.auth })
  expect(res.statusCode).toBe(200)
  return res.json()
}

async function list(project: TestProject, query: string): Promise<string[]> {
  const res = await t.app.inject({ method: 'GET', url: `/v1/subscribers?${query}`, headers: project.auth })
  expect(res.statusCode, res.body).toBe(200)
  return res.json().subscribers.map((s: { id: string }) => s.id).sort()
}

async function patchMe(project: TestProject, payload: Record<string, unknown>, headers: Record<string, string> = project.auth) {
  return t.app.inject({ method: 'PATCH', url: '/v1/me', headers, payload })
}

/** Sets a subscriber's columns straight in the database, in place of weeks of waiting. */
async function setRow(id: string, set: string, params: unknown[] = []): Promise<void> {
  await t.database.db.query(`UPDATE subscribers SET ${set} WHERE id = $1`, [id, ...params])
}

/** The same for its health row (migration 0025's subscriber_health), made when it has none. */
async function setHealth(id: string, health: { consecutive_failures?: number; last_delivered_at?: Date; last_clicked_at?: Date }): Promise<void> {
  await t.database.db.query(
    `INSERT INTO subscriber_health (subscriber_id, project_id, consecutive_failures, last_delivered_at, last_clicked_at)
     SELECT id, project_id, $2, $3, $4 FROM subscribers WHERE id = $1
     ON CONFLICT (subscriber_id) DO UPDATE SET consecutive_failures = EXCLUDED.consecutive_failures,
       last_delivered_at = EXCLUDED.last_delivered_at, last_clicked_at = EXCLUDED.last_clicked_at`,
    [id, health.consecutive_failures ?? 0, health.last_delivered_at ?? null, health.last_clicked_at ?? null],
  )
}

describe('fan-out outcomes', () => {
  let project: TestProject
  let ok: Browser
  let bad: Browser
  let flaky: Browser

  beforeAll(async () => {
    project = await t.project({ plan: 'plus' })
    ok = await subscribeBrowser(t, project, push)
    bad = await subscribeBrowser(t, project, push)
    flaky = await subscribeBrowser(t, project, push)
  })

  it('an accepted push sets last_delivered_at; a refused one counts up; an accepted one resets the count', async () => {
    const fresh = await get(project, ok.id)
    expect(fresh).toMatchObject({ last_delivered_at: null, last_clicked_at: null, consecutive_failures: 0, health: 'active' })
    push.fail(bad.endpoint, { status: 403 })
    push.fail(flaky.endpoint, { status: 400, times: 1 })
    const before = Date.now()
    await sendAll(project)
    const delivered = await get(project, ok.id)
    expect(delivered.last_delivered_at).toBeGreaterThanOrEqual(before - 1000)
    expect(delivered.consecutive_failures).toBe(0)
    expect(await get(project, bad.id)).toMatchObject({ last_delivered_at: null, consecutive_failures: 1, health: 'failing', status: 'active' })
    expect(await get(project, flaky.id)).toMatchObject({ consecutive_failures: 1, health: 'failing' })

    await sendAll(project)
    expect(await get(project, bad.id)).toMatchObject({ consecutive_failures: 2, status: 'active' })
    const recovered = await get(project, flaky.id)
    expect(recovered).toMatchObject({ consecutive_failures: 0, health: 'active' })
    expect(recovered.last_delivered_at).not.toBeNull()
  })

  it('with expire_after_failures, the failure that reaches it expires the subscriber, and the counts follow', async () => {
    const res = await patchMe(project, { expire_after_failures: 3 })
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json().project).toMatchObject({ expire_after_failures: 3, expire_after_days_without_delivery: null })
    const counts = async () => (await t.app.inject({ method: 'GET', url: '/v1/subscribers/counts', headers: project.auth })).json()
    expect(await counts()).toMatchObject({ active: 3, expired: 0 })
    await sendAll(project)
    expect(await get(project, bad.id)).toMatchObject({ consecutive_failures: 3, status: 'expired', health: null })
    expect(await counts()).toMatchObject({ active: 2, expired: 1 })
    // Expired: the next broadcast does not push to it.
    const requests = push.requests
    await sendAll(project)
    expect(push.requests - requests).toBe(2)
  })

  it('a 410 expires at once, without any rule', async () => {
    const other = await t.project()
    const gone = await subscribeBrowser(t, other, push)
    push.fail(gone.endpoint, { status: 410 })
    await sendAll(other)
    expect(await get(other, gone.id)).toMatchObject({ status: 'expired', consecutive_failures: 1 })
  })
})

describe('clicks', () => {
  it("a click beacon naming the subscriber sets its last_clicked_at; the event stays anonymous; another project's beacon changes nothing", async () => {
    const a = await t.project()
    const b = await t.project()
    const browser = await subscribeBrowser(t, a, push)
    const otherBrowser = await subscribeBrowser(t, b, push)
    const broadcastA = await sendAll(a)
    const broadcastB = await sendAll(b)
    const beacon = (project: TestProject, body: Record<string, unknown>) =>
      t.app.inject({ method: 'POST', url: `/v1/events?project=${project.id}`, headers: { 'content-type': 'text/plain' }, payload: JSON.stringify(body) })

    // B's project and broadcast, A's subscriber: recorded for B's broadcast, A's subscriber untouched.
    expect((await beacon(b, { type: 'clicked', broadcast_id: broadcastB, subscriber_id: browser.id })).statusCode).toBe(202)
    // A dismissal names nobody's click.
    expect((await beacon(a, { type: 'dismissed', broadcast_id: broadcastA, subscriber_id: browser.id })).statusCode).toBe(202)
    expect((await get(a, browser.id)).last_clicked_at).toBeNull()

    const before = Date.now()
    expect((await beacon(a, { type: 'clicked', broadcast_id: broadcastA, subscriber_id: browser.id })).statusCode).toBe(202)
    expect((await get(a, browser.id)).last_clicked_at).toBeGreaterThanOrEqual(before - 1000)
    expect((await get(b, otherBrowser.id)).last_clicked_at).toBeNull()
    const events = await t.database.db.query<{ subscriber_id: string | null }>(`SELECT subscriber_id FROM events WHERE type IN ('clicked', 'dismissed')`)
    expect(events.rows.length).toBeGreaterThanOrEqual(3)
    expect(events.rows.every((e) => e.subscriber_id === null)).toBe(true)

    // Erasure takes the health row with the subscriber.
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/subscribers/${browser.id}`, headers: a.auth })).statusCode).toBe(200)
    expect((await t.database.db.query('SELECT 1 FROM subscriber_health WHERE subscriber_id = $1', [browser.id])).rows).toEqual([])
  })
})

describe('the days rule, as a durable job', () => {
  it('expires failing subscribers that accepted nothing for D days, and only those; also applies a failures rule set later', async () => {
    const project = await t.project()
    const ruleless = await t.project()
    const [old, recent, quiet, neverOk, manyFails] = await Promise.all([1, 2, 3, 4, 5].map(() => subscribeBrowser(t, project, push)))
    const elsewhere = await subscribeBrowser(t, ruleless, push)
    const longAgo = new Date(Date.now() - 10 * DAY)
    await setHealth(old.id, { consecutive_failures: 2, last_delivered_at: longAgo })
    await setHealth(recent.id, { consecutive_failures: 4, last_delivered_at: new Date(Date.now() - 3 * DAY) })
    // Not sent anything for weeks, but not failing: never expired by this rule.
    await setHealth(quiet.id, { consecutive_failures: 0, last_delivered_at: longAgo })
    await setHealth(neverOk.id, { consecutive_failures: 1 })
    await setRow(neverOk.id, 'created_at = $2', [longAgo])
    await setHealth(elsewhere.id, { consecutive_failures: 9, last_delivered_at: longAgo })
    expect((await patchMe(project, { expire_after_days_without_delivery: 7 })).statusCode).toBe(200)
    // The job on the worker loop (the migration queued one for the hour; this one is due now).
    await enqueue(t.ctx.db, 'expire_failing_subscribers', {})
    const deadline = Date.now() + 10_000
    while ((await get(project, neverOk.id)).status !== 'expired' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25))
    const statuses = async () => Object.fromEntries(await Promise.all([old, recent, quiet, neverOk, manyFails].map(async (b, i) => [i, (await get(project, b.id)).status])))
    expect(await statuses()).toEqual({ 0: 'expired', 1: 'active', 2: 'active', 3: 'expired', 4: 'active' })
    expect((await get(ruleless, elsewhere.id)).status).toBe('active')

    // A failures rule turned on after the fact: the sweep catches those already past it.
    await setHealth(manyFails.id, { consecutive_failures: 6 })
    expect((await patchMe(project, { expire_after_failures: 5, expire_after_days_without_delivery: null })).statusCode).toBe(200)
    const queued = async () => (await t.database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE kind = 'expire_failing_subscribers'`)).rows[0].n
    const queuedBefore = await queued()
    expect(await expireFailing(t.ctx.db, { completeIn: async () => {} })).toBe(1)
    expect((await get(project, manyFails.id)).status).toBe('expired')
    // recent (4 failures) is under the rule of 5 and the days rule is off now.
    expect((await get(project, recent.id)).status).toBe('active')
    // It queued its next run, as the job on the loop does.
    expect(await queued()).toBe(queuedBefore + 1)
  })
})

describe('filters, health counts and project isolation', () => {
  let a: TestProject
  let b: TestProject
  let ids: Record<'fresh' | 'dormant' | 'failing' | 'clicked', string>
  let foreign: string

  beforeAll(async () => {
    a = await t.project()
    b = await t.project()
    const [fresh, dormant, failing, clicked] = await Promise.all([1, 2, 3, 4].map(() => subscribeBrowser(t, a, push)))
    ids = { fresh: fresh.id, dormant: dormant.id, failing: failing.id, clicked: clicked.id }
    foreign = (await subscribeBrowser(t, b, push)).id
    const old = new Date(Date.now() - 40 * DAY)
    await setRow(ids.dormant, 'last_seen_at = $2', [old])
    await setHealth(ids.dormant, { last_delivered_at: new Date(Date.now() - 2 * DAY) })
    await setRow(ids.failing, 'last_seen_at = $2', [old])
    await setHealth(ids.failing, { consecutive_failures: 3, last_delivered_at: old })
    await setRow(ids.clicked, 'last_seen_at = $2', [old])
    await setHealth(ids.clicked, { last_clicked_at: new Date(Date.now() - DAY), last_delivered_at: new Date(Date.now() - DAY) })
    await setRow(foreign, 'last_seen_at = $2', [old])
    await setHealth(foreign, { consecutive_failures: 5 })
  })

  it('health, min_consecutive_failures, delivered_* and clicked_* select as documented', async () => {
    const now = Date.now()
    expect(await list(a, 'health=failing')).toEqual([ids.failing])
    expect(await list(a, 'health=dormant')).toEqual([ids.dormant])
    expect(await list(a, 'health=active')).toEqual([ids.fresh, ids.clicked].sort())
    expect(await list(a, 'min_consecutive_failures=3')).toEqual([ids.failing])
    expect(await list(a, 'min_consecutive_failures=4')).toEqual([])
    // Before: the last one earlier, or none ever.
    expect(await list(a, `delivered_before=${now - 10 * DAY}`)).toEqual([ids.fresh, ids.failing].sort())
    expect(await list(a, `delivered_after=${now - 3 * DAY}`)).toEqual([ids.dormant, ids.clicked].sort())
    expect(await list(a, `clicked_after=${now - 2 * DAY}`)).toEqual([ids.clicked])
    expect(await list(a, `clicked_before=${now - 2 * DAY}&health=active`)).toEqual([ids.fresh])
    const one = await get(a, ids.dormant)
    expect(one).toMatchObject({ health: 'dormant', consecutive_failures: 0, last_clicked_at: null })
    expect(typeof one.last_delivered_at).toBe('number')
  })

  it('counts by health; each project sees only its own', async () => {
    const health = async (project: TestProject) => (await t.app.inject({ method: 'GET', url: '/v1/subscribers/health', headers: project.auth })).json()
    expect(await health(a)).toEqual({ active: 2, dormant: 1, failing: 1 })
    expect(await health(b)).toEqual({ active: 0, dormant: 0, failing: 1 })
    expect(await list(b, 'health=failing')).toEqual([foreign])
    expect(await list(b, 'min_consecutive_failures=1')).toEqual([foreign])
    expect(await list(b, `delivered_before=${Date.now()}`)).toEqual([foreign])
    expect((await t.app.inject({ method: 'GET', url: `/v1/subscribers/${ids.failing}`, headers: b.auth })).statusCode).toBe(404)
  })

  it('refuses bad filters with 400 naming the field', async () => {
    for (const [query, field] of [['health=sick', 'health'], ['delivered_before=-1', 'delivered_before'], ['clicked_after=soon', 'clicked_after'], ['min_consecutive_failures=0', 'min_consecutive_failures'], ['delivered_after=9000000000000000', 'delivered_after']]) {
      const res = await t.app.inject({ method: 'GET', url: `/v1/subscribers?${query}`, headers: a.auth })
      expect(res.statusCode, query).toBe(400)
      expect(res.body, query).toContain(field)
    }
  })
})

describe('the expiry rules as settings', () => {
  it('admins (as owners) and full keys set them; editors, viewers and narrower keys cannot; bad values change nothing', async () => {
    const project = await t.project()
    for (const role of ['admin', 'editor', 'viewer'] as const) await addMember(t, project.id, `${role}-${project.id}@example.com`, role)
    const session = async (role: string) => ({ ...(await signIn(t, `${role}-${project.id}@example.com`)).headers, 'x-herald-project': project.id })
    for (const role of ['editor', 'viewer']) {
      const res = await patchMe(project, { expire_after_failures: 2 }, await session(role))
      expect(res.statusCode, role).toBe(403)
      expect(res.json().error.code).toBe('insufficient_role')
    }
    const sendKey = await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: project.auth, payload: { scope: 'send' } })
    const refused = await patchMe(project, { expire_after_failures: 2 }, { authorization: `Bearer ${sendKey.json().api_key}` })
    expect(refused.statusCode).toBe(403)
    expect(refused.json().error.code).toBe('insufficient_scope')

    expect((await patchMe(project, { expire_after_failures: 4 }, await session('admin'))).json().project.expire_after_failures).toBe(4)
    const owner = await patchMe(project, { expire_after_days_without_delivery: 30 })
    expect(owner.json().project).toMatchObject({ expire_after_failures: 4, expire_after_days_without_delivery: 30 })

    for (const [payload, field] of [[{ expire_after_failures: 0 }, 'expire_after_failures'], [{ expire_after_days_without_delivery: 3651 }, 'expire_after_days_without_delivery'], [{ expire_after_failures: 2.5 }, 'expire_after_failures'], [{}, '']] as const) {
      const res = await patchMe(project, payload)
      expect(res.statusCode, JSON.stringify(payload)).toBe(400)
      expect(res.body).toContain(field)
    }
    const me = (await t.app.inject({ method: 'GET', url: '/v1/me', headers: project.auth })).json().project
    expect(me).toMatchObject({ expire_after_failures: 4, expire_after_days_without_delivery: 30 })

    // The operator's PATCH sets and shows the same fields; null turns a rule off.
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const operator = await t.app.inject({ method: 'PATCH', url: `/admin/v1/projects/${project.id}`, headers: admin, payload: { expire_after_failures: null } })
    expect(operator.statusCode, operator.body).toBe(200)
    expect(operator.json()).toMatchObject({ expire_after_failures: null, expire_after_days_without_delivery: 30 })
    const audit = await t.database.db.query<{ details: Record<string, unknown> }>(`SELECT details FROM audit_log WHERE project_id = $1 AND action = 'project.update' ORDER BY id`, [project.id])
    expect(audit.rows.map((r) => r.details)).toEqual([
      { fields: ['expire_after_failures'], expire_after_failures: 4 },
      { fields: ['expire_after_days_without_delivery'], expire_after_days_without_delivery: 30 },
      { fields: ['expire_after_failures'], expire_after_failures: null },
    ])
  })
})
