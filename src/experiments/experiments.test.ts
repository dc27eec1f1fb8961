// End to end: an A/B test sent through the API, fanned out by the real
// worker to a real push service on localhost, clicks through the real beacon
// route, decided by the real job, the winner sent to the rest.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService, type ReceivedPush } from '../../test/support/push-service.ts'
import { send, subscribeBrowser, waitForBroadcast, type Browser } from '../../test/support/delivery.ts'
import { addMember, signIn } from '../../test/support/members.ts'
import { assignVariant } from './assignment.ts'
import type { ExperimentView } from './experiments.schemas.ts'

let t: TestApp
let push: PushService
let project: TestProject

beforeAll(async () => {
  push = await startPushService()
  t = await createTestApp({ HERALD_FANOUT_BATCH_SIZE: '10', HERALD_ENCRYPT_THREADS: '1', HERALD_SCHEDULER_INTERVAL_MS: '50', HERALD_PUSH_RETRY_BASE_MS: '100' }, { worker: true })
})
afterAll(async () => {
  await t.close()
  await push.close()
})
beforeEach(async () => {
  push.reset()
  project = await t.project({ plan: 'plus' })
})

const notification = { title: 'Sale', body: 'Everything must go', url: '/sale' }
const variants = [
  { key: 'a', notification: { title: 'Twenty percent off' } },
  { key: 'b', notification: { title: 'Half price today', body: 'Only until midnight', url: '/half' } },
]

type View = { status: string; audience: number; delivered: number; pending: number; clicked: number; shown: number; experiment?: ExperimentView }

async function view(id: string, p = project): Promise<View> {
  return (await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: p.auth })).json()
}

/** Polls until the test's pushes are all delivered (the rest still waiting). */
async function testDelivered(id: string, expected: number): Promise<View> {
  return (await waitForBroadcast(t, project, id, (s) => {
    // Both counts: the view reads the broadcast row and its variants in two statements, so on PostgreSQL one may be a batch ahead.
    const e = (s as unknown as View).experiment
    return e !== undefined && e.variants.reduce((n, v) => n + v.delivered, 0) >= expected && s.delivered >= expected
  })) as unknown as View
}

/** The decision job is due decide_after from the start; a test moves it to now rather than wait hours. */
async function decideNow(id: string): Promise<void> {
  await t.ctx.db.query("UPDATE jobs SET run_at = now() WHERE kind = 'decide_experiment' AND payload ->> 'broadcast_id' = $1", [id])
}

function pushesOf(id: string): ReceivedPush[] {
  return push.received.filter((r) => (r.payload as { broadcast_id?: string }).broadcast_id === id)
}

function click(id: string, variant: string | undefined, projectId = project.id) {
  return t.app.inject({ method: 'POST', url: `/v1/events?project=${projectId}`, payload: { type: 'clicked', broadcast_id: id, ...(variant === undefined ? {} : { variant }) } })
}

async function browsers(n: number): Promise<Browser[]> {
  const made: Browser[] = []
  for (let i = 0; i < n; i++) made.push(await subscribeBrowser(t, project, push))
  return made
}

describe('an A/B test', () => {
  it('tests each variant on its share, picks the winner by the z-test and sends it to the rest', async () => {
    const subs = await browsers(40)
    const id = await send(t, project, { target: { type: 'all' }, notification, variants, experiment: { test_share: 0.5, decide_after: '1h', min_per_variant: 3 } })
    // Who is in which part is a function of (broadcast, subscriber): known before anything is sent.
    const part = new Map(subs.map((s) => [s.endpoint, assignVariant(id, s.id, 0.5, 2)]))
    const inA = subs.filter((s) => part.get(s.endpoint) === 0)
    const inB = subs.filter((s) => part.get(s.endpoint) === 1)
    const rest = subs.filter((s) => part.get(s.endpoint) === null)
    expect(inA.length).toBeGreaterThanOrEqual(3)
    expect(inB.length).toBeGreaterThanOrEqual(3)
    expect(rest.length).toBeGreaterThan(0)

    const tested = await testDelivered(id, inA.length + inB.length)
    // The rest wait for the decision: the broadcast stays sending, its pushes pending.
    expect(tested).toMatchObject({ status: 'sending', audience: 40, delivered: inA.length + inB.length, pending: rest.length })
    expect(tested.experiment).toMatchObject({ phase: 'testing', winner: null, test_share: 0.5, metric: 'clicked', decide_after: '1h', min_per_variant: 3, on_inconclusive: 'best', confidence: 0.95 })
    expect(tested.experiment!.variants.map((v) => [v.key, v.audience, v.sent, v.delivered])).toEqual([['a', inA.length, inA.length, inA.length], ['b', inB.length, inB.length, inB.length]])
    // Each got their variant's notification, naming it; nobody of the rest got anything yet.
    for (const s of inA) expect(push.receivedFor(s.endpoint).map((r) => r.payload)).toEqual([{ v: 1, project_id: project.id, broadcast_id: id, ...notification, title: 'Twenty percent off', variant: 'a' }])
    for (const s of inB) expect(push.receivedFor(s.endpoint).map((r) => r.payload)).toEqual([{ v: 1, project_id: project.id, broadcast_id: id, title: 'Half price today', body: 'Only until midnight', url: '/half', variant: 'b' }])
    for (const s of rest) expect(push.receivedFor(s.endpoint)).toEqual([])

    // Every b clicks, one a does: the service worker echoes the payload's variant.
    for (let i = 0; i < inB.length; i++) expect((await click(id, 'b')).statusCode).toBe(202)
    await click(id, 'a')
    const clicked = await view(id)
    expect(clicked.clicked).toBe(inB.length + 1)
    expect(clicked.experiment!.variants.map((v) => v.clicked)).toEqual([1, inB.length])
    expect(clicked.experiment!.leader).toBe('b')
    expect(clicked.experiment!.variants[0].p_value).toBeLessThan(0.05)

    await decideNow(id)
    const done = await waitForBroadcast(t, project, id) as unknown as View
    expect(done).toMatchObject({ status: 'sent', audience: 40, delivered: 40, pending: 0 })
    expect(done.experiment).toMatchObject({ phase: 'sending_winner', winner: 'b', decided_by: 'test', significant: true })
    expect(done.experiment!.reason).toMatch(/^b won: its clicked rate of 100\.00% beats every other variant/)
    expect(done.experiment!.decided_at).toBeGreaterThan(0)
    // The rest got b's content, naming no variant: their engagement is the broadcast's, not the test's.
    for (const s of rest) expect(push.receivedFor(s.endpoint).map((r) => r.payload)).toEqual([{ v: 1, project_id: project.id, broadcast_id: id, title: 'Half price today', body: 'Only until midnight', url: '/half' }])
    expect(done.experiment!.variants.map((v) => v.delivered)).toEqual([inA.length, inB.length])
    expect(done.experiment!.rest).toEqual({ audience: rest.length })
    expect(pushesOf(id)).toHaveLength(40)
    // One broadcast in the month's budget: 40 pushes.
    const me = (await t.app.inject({ method: 'GET', url: '/v1/me', headers: project.auth })).json()
    expect(me.project.usage.pushes_this_month).toBe(40)
  })

  it('decides on shown beacons when the metric is shown: they count per variant, clicks do not decide', async () => {
    await browsers(20)
    const id = await send(t, project, { target: { type: 'all' }, notification, variants, experiment: { test_share: 0.6, metric: 'shown', min_per_variant: 1 } })
    const active = await t.ctx.db.query<{ id: string }>("SELECT id FROM subscribers WHERE project_id = $1 AND status = 'active'", [project.id])
    const tested = await testDelivered(id, active.rows.filter((row) => assignVariant(id, row.id, 0.6, 2) !== null).length)
    const [a, b] = tested.experiment!.variants
    expect(a.delivered).toBeGreaterThan(0)
    expect(b.delivered).toBeGreaterThan(0)
    // Every b is shown and never clicked; every a is clicked and never shown.
    for (let i = 0; i < b.delivered; i++) await t.app.inject({ method: 'POST', url: `/v1/events?project=${project.id}`, payload: { type: 'shown', broadcast_id: id, variant: 'b' } })
    for (let i = 0; i < a.delivered; i++) await click(id, 'a')
    const counted = await view(id)
    expect(counted.experiment!.variants.map((v) => [v.shown, v.clicked])).toEqual([[0, a.delivered], [b.delivered, 0]])
    expect(counted.shown).toBe(b.delivered)
    expect(counted.experiment!.leader).toBe('b')
    await decideNow(id)
    const done = await waitForBroadcast(t, project, id) as unknown as View
    expect(done.experiment).toMatchObject({ metric: 'shown', winner: 'b' })
  })

  it('counts a forged beacon only on a variant its broadcast has, and only for the project that owns the broadcast', async () => {
    await browsers(6)
    const id = await send(t, project, { target: { type: 'all' }, notification, variants, experiment: { test_share: 1 } })
    await waitForBroadcast(t, project, id)
    const other = await t.project({ plan: 'plus' })
    await click(id, 'zzz') // no such variant: a click on the broadcast, on no variant
    await click(id, 'a', other.id) // another project: dropped
    await click(id, '<b>') // not a key at all
    const after = await view(id)
    expect(after.clicked).toBe(2)
    expect(after.experiment!.variants.map((v) => v.clicked)).toEqual([0, 0])
    await click(id, 'a')
    expect((await view(id)).experiment!.variants.map((v) => v.clicked)).toEqual([1, 0])
    // Another project's variant names reach nothing here either: its key does not see this broadcast.
    expect((await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: other.auth })).statusCode).toBe(404)
  })

  it('with test_share 1 sends every subscriber a variant and has no winner phase', async () => {
    const subs = await browsers(8)
    const id = await send(t, project, { target: { type: 'all' }, notification, variants, experiment: { test_share: 1 } })
    const done = await waitForBroadcast(t, project, id) as unknown as View
    expect(done).toMatchObject({ status: 'sent', delivered: 8 })
    expect(done.experiment).toMatchObject({ phase: 'complete', winner: null, decide_at: null, rest: { audience: 0 } })
    expect(done.experiment!.reason).toMatch(/^test_share 1: every subscriber got a variant/)
    expect(done.experiment!.variants.reduce((n, v) => n + v.audience, 0)).toBe(8)
    for (const s of subs) expect((push.receivedFor(s.endpoint)[0].payload as { variant: string }).variant).toBe(['a', 'b'][assignVariant(id, s.id, 1, 2)!])
    const rows = await t.ctx.db.query("SELECT count(*)::int AS n FROM jobs WHERE kind = 'decide_experiment' AND payload ->> 'broadcast_id' = $1", [id])
    expect(rows.rows[0].n).toBe(0)
  })

  it('with on_inconclusive stop and too little data, sends the rest nothing and ends the broadcast', async () => {
    const subs = await browsers(12)
    const id = await send(t, project, { target: { type: 'all' }, notification, variants, experiment: { test_share: 0.5, min_per_variant: 500, on_inconclusive: 'stop' } })
    const testSize = subs.filter((s) => assignVariant(id, s.id, 0.5, 2) !== null).length
    await testDelivered(id, testSize)
    await decideNow(id)
    const done = await waitForBroadcast(t, project, id) as unknown as View
    expect(done).toMatchObject({ status: 'sent', delivered: testSize, audience: testSize })
    expect(done.experiment).toMatchObject({ phase: 'stopped', winner: null, decided_by: 'rule' })
    expect(done.experiment!.reason).toMatch(/had fewer than 500 delivered\. on_inconclusive is stop: the rest of the audience gets nothing\.$/)
    expect(pushesOf(id)).toHaveLength(testSize)
    // The month counts the pushes that left, not the audience reserved at send.
    const me = (await t.app.inject({ method: 'GET', url: '/v1/me', headers: project.auth })).json()
    expect(me.project.usage.pushes_this_month).toBe(testSize)
  })

  it('can be ended early by a person who picks the winner, once; the broadcast ends without waiting for decide_after', async () => {
    const subs = await browsers(12)
    const id = await send(t, project, { target: { type: 'all' }, notification, variants, experiment: { test_share: 0.5, on_inconclusive: 'stop' } })
    await testDelivered(id, subs.filter((s) => assignVariant(id, s.id, 0.5, 2) !== null).length)
    const decide = (body: object, p = project) => t.app.inject({ method: 'POST', url: `/v1/broadcasts/${id}/experiment/decide`, headers: p.auth, payload: body })

    expect((await decide({ winner: 'c' })).json().error).toMatchObject({ code: 'invalid_request', issues: [{ path: 'winner' }] })
    const other = await t.project({ plan: 'plus' })
    expect((await decide({ winner: 'a' }, other)).json().error.code).toBe('broadcast_not_found')
    const res = await decide({ winner: 'a' })
    expect(res.statusCode).toBe(200)
    expect(res.json().experiment).toMatchObject({ phase: 'sending_winner', winner: 'a', decided_by: 'person' })
    expect((await decide({})).json().error.code).toBe('experiment_not_decidable')

    // The decision job is gone with the person's decision: the broadcast ends without waiting for decide_after.
    const jobs = await t.ctx.db.query("SELECT count(*)::int AS n FROM jobs WHERE kind = 'decide_experiment' AND payload ->> 'broadcast_id' = $1", [id])
    expect(jobs.rows[0].n).toBe(0)
    const done = await waitForBroadcast(t, project, id) as unknown as View
    expect(done).toMatchObject({ status: 'sent', delivered: 12, pending: 0 })
    expect(done.experiment).toMatchObject({ winner: 'a', decided_by: 'person' })
    const rest = subs.filter((s) => assignVariant(id, s.id, 0.5, 2) === null)
    for (const s of rest) expect((push.receivedFor(s.endpoint)[0].payload as { title: string }).title).toBe('Twenty percent off')
    const audit = (await t.app.inject({ method: 'GET', url: `/v1/audit-log?target_id=${id}`, headers: project.auth })).json()
    expect(audit.entries.map((e: { action: string }) => e.action)).toContain('broadcast.experiment_decide')
    expect(audit.entries.find((e: { action: string }) => e.action === 'broadcast.experiment_decide').details).toMatchObject({ winner: 'a', chosen: true })
  })

  it('cannot be decided by a viewer, nor on a broadcast without a test', async () => {
    const plain = await send(t, project, { target: { type: 'all' }, notification })
    const res = await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${plain}/experiment/decide`, headers: project.auth, payload: {} })
    expect([res.statusCode, res.json().error.code]).toEqual([404, 'experiment_not_found'])
    await addMember(t, project.id, 'viewer-exp@example.com', 'viewer')
    const viewer = await signIn(t, 'viewer-exp@example.com', undefined, { project: project.id })
    const id = await send(t, project, { target: { type: 'all' }, notification, variants, experiment: {} })
    const refused = await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${id}/experiment/decide`, headers: viewer.headers, payload: {} })
    expect([refused.statusCode, refused.json().error.code]).toEqual([403, 'insufficient_role'])
  })
})

describe('an A/B test with the rest of Herald', () => {
  it('with a template and variables, to a segment: each variant rendered per subscriber', async () => {
    for (const name of ['Ada', 'Bo', 'Cy', 'Di', 'Ed']) await subscribeBrowser(t, project, push, { tags: { name } })
    // A French subscriber: the template's French version does not replace the variant's text.
    await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: { ...push.createSubscription(), tags: { name: 'Flo' }, locale: 'fr' } })
    await subscribeBrowser(t, project, push) // no name: outside the segment
    const template = (await t.app.inject({
      method: 'POST', url: '/v1/templates', headers: project.auth,
      payload: { name: 'Sale', notification: { title: 'Hi {{ tags.name }}', body: 'Our sale' }, localized: { fr: { title: 'Salut {{ tags.name }}', body: 'Nos soldes' } } },
    })).json().id
    const id = await send(t, project, {
      target: { type: 'segment', filter: { tag: 'name', exists: true } },
      template_id: template,
      variants: [{ key: 'a', notification: { body: 'Twenty percent off' } }, { key: 'b', notification: { title: 'Hey {{ tags.name }}, half price' } }],
      experiment: { test_share: 1 },
    })
    const done = await waitForBroadcast(t, project, id) as unknown as View
    expect(done).toMatchObject({ status: 'sent', audience: 6, delivered: 6 })
    const payloads = pushesOf(id).map((r) => r.payload as { title: string; body: string; variant: string })
    expect(payloads).toHaveLength(6)
    for (const p of payloads) {
      const name = p.variant === 'a' ? /^Hi (\w+)$/.exec(p.title)?.[1] : /^Hey (\w+), half price$/.exec(p.title)?.[1]
      expect(['Ada', 'Bo', 'Cy', 'Di', 'Ed', 'Flo']).toContain(name)
      expect(p.body).toBe(p.variant === 'a' ? 'Twenty percent off' : 'Our sale')
    }
    // A variant that does not parse is refused naming it.
    const bad = await t.app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: { target: { type: 'all' }, template_id: template, variants: [{ key: 'a', notification: { title: '{{ tags.name' } }, variants[1]], experiment: {} } })
    expect([bad.statusCode, bad.json().error.code]).toEqual([400, 'template_invalid'])
    expect(bad.json().error.message).toContain('variants.0.notification.title')
  })

  it('a retried push keeps its variant, and counts once on it', async () => {
    const subs = await browsers(6)
    for (const s of subs) push.fail(s.endpoint, { status: 503, times: 1 })
    const id = await send(t, project, { target: { type: 'all' }, notification, variants, experiment: { test_share: 1 } })
    const done = await waitForBroadcast(t, project, id) as unknown as View
    expect(done).toMatchObject({ status: 'sent', delivered: 6 })
    expect(push.rejected.length).toBe(6)
    for (const s of subs) {
      expect(push.receivedFor(s.endpoint).map((r) => (r.payload as { variant: string }).variant)).toEqual([['a', 'b'][assignVariant(id, s.id, 1, 2)!]])
    }
    const e = done.experiment!
    expect(e.variants.reduce((n, v) => n + v.audience, 0)).toBe(6)
    expect(e.variants.reduce((n, v) => n + v.sent, 0)).toBe(6)
    expect(e.variants.reduce((n, v) => n + v.delivered, 0)).toBe(6)
    expect(e.variants.reduce((n, v) => n + v.failed, 0)).toBe(0)
  })

  it('throttled: each pass takes slots for the pushes it sends', async () => {
    const subs = await browsers(8)
    const id = await send(t, project, { target: { type: 'all' }, notification, variants, experiment: { test_share: 0.5 }, throttle_per_minute: 6000 })
    const size = subs.filter((s) => assignVariant(id, s.id, 0.5, 2) !== null).length
    await testDelivered(id, size)
    const planned = await t.ctx.db.query<{ throttle_planned: number }>('SELECT throttle_planned FROM broadcasts WHERE id = $1', [id])
    expect(planned.rows[0].throttle_planned).toBe(size)
    await decideNow(id)
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 8 })
    const after = await t.ctx.db.query<{ throttle_planned: number }>('SELECT throttle_planned FROM broadcasts WHERE id = $1', [id])
    expect(after.rows[0].throttle_planned).toBe(8)
  })

  it("carries no declarative form: Safari's click links could not name the variant or its URL", async () => {
    const subs = await browsers(4)
    const absolute = [
      { key: 'a', notification: { title: 'A', url: 'https://shop.example.com/a' } },
      { key: 'b', notification: { title: 'B', url: 'https://shop.example.com/b' } },
    ]
    const id = await send(t, project, { target: { type: 'all' }, notification: { ...notification, url: 'https://shop.example.com/base' }, variants: absolute, experiment: { test_share: 1 } })
    await waitForBroadcast(t, project, id)
    const payloads = subs.flatMap((s) => push.receivedFor(s.endpoint).filter((r) => (r.payload as { broadcast_id: string }).broadcast_id === id).map((r) => r.payload as Record<string, unknown>))
    expect(payloads).toHaveLength(4)
    for (const payload of payloads) {
      expect(payload).not.toHaveProperty('web_push')
      expect(payload.url).toBe(`https://shop.example.com/${payload.variant}`)
    }
  })

  it('does not decide while the test part is held (quiet hours): the decision waits for the last test push', async () => {
    const quiet = await t.project({ plan: 'plus' })
    const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16)
    const patched = await t.app.inject({ method: 'PATCH', url: '/v1/me', headers: quiet.auth, payload: { default_timezone: 'UTC', quiet_hours: { start: hhmm(Date.now() - 3_600_000), end: hhmm(Date.now() + 3 * 3_600_000) } } })
    expect(patched.statusCode, patched.body).toBe(200)
    for (let i = 0; i < 6; i++) await subscribeBrowser(t, quiet, push)
    const id = await send(t, quiet, { target: { type: 'all' }, notification, variants, experiment: { test_share: 0.5, min_per_variant: 1 } })
    const held = await waitForBroadcast(t, quiet, id, (s) => s.status === 'sending') as unknown as View
    expect(held.experiment!.phase).toBe('testing')
    await decideNow(id)
    // The decision job runs, finds the test's wave still waiting, and looks again later: nothing decided, nothing sent.
    const later = async () => (await t.ctx.db.query<{ run_at: Date }>("SELECT run_at FROM jobs WHERE kind = 'decide_experiment' AND payload ->> 'broadcast_id' = $1", [id])).rows[0]?.run_at.getTime() ?? 0
    const deadline = Date.now() + 20_000
    while ((await later()) < Date.now() + 60_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
    expect(await later()).toBeGreaterThan(Date.now() + 60_000)
    const after = await view(id, quiet)
    expect(after.experiment).toMatchObject({ phase: 'testing', winner: null })
    expect(after.delivered).toBe(0)
    expect(pushesOf(id)).toEqual([])
    // Stopped while its test waits: the view says so at once, not when the decision job next looks.
    expect((await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${id}/stop`, headers: quiet.auth })).statusCode).toBe(200)
    expect((await view(id, quiet)).experiment).toMatchObject({ phase: 'stopped', winner: null })
  })

  it('scheduled: the test starts when the broadcast fires, and decide_after counts from then', async () => {
    await browsers(4)
    const at = Date.now() + 1500
    const id = await send(t, project, { target: { type: 'all' }, notification, variants, experiment: { test_share: 0.5, decide_after: '30m' }, scheduled_at: at })
    expect((await view(id)).experiment).toMatchObject({ phase: 'waiting', decide_at: null })
    const fired = await waitForBroadcast(t, project, id, (s) => s.status === 'sending') as unknown as View
    expect(fired.experiment!.phase).toBe('testing')
    expect(fired.experiment!.decide_at).toBeGreaterThanOrEqual(at + 30 * 60_000)
    // Deciding a test that has not started is refused.
    const early = await send(t, project, { target: { type: 'all' }, notification, variants, experiment: {}, scheduled_at: Date.now() + 3_600_000 })
    const res = await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${early}/experiment/decide`, headers: project.auth, payload: {} })
    expect([res.statusCode, res.json().error.code]).toEqual([409, 'experiment_not_decidable'])
  })
})

describe('a send with variants', () => {
  const base = { target: { type: 'all' }, notification }
  async function refused(body: object) {
    const before = (await t.ctx.db.query('SELECT count(*)::int AS n FROM broadcasts WHERE project_id = $1', [project.id])).rows[0].n
    const res = await t.app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: { ...base, ...body } })
    const after = (await t.ctx.db.query('SELECT count(*)::int AS n FROM broadcasts WHERE project_id = $1', [project.id])).rows[0].n
    expect(after).toBe(before)
    return [res.statusCode, res.json().error.code, res.json().error.issues?.[0]?.path]
  }

  it('is refused with a clear error, and nothing is created, when the test cannot run', async () => {
    expect(await refused({ variants })).toEqual([400, 'invalid_experiment', 'variants'])
    expect(await refused({ experiment: {} })).toEqual([400, 'invalid_experiment', 'experiment'])
    expect(await refused({ variants: [variants[0], { ...variants[1], key: 'a' }], experiment: {} })).toEqual([400, 'invalid_experiment', 'variants.1.key'])
    expect(await refused({ variants: [variants[0]], experiment: {} })).toEqual([400, 'invalid_request', 'variants'])
    expect(await refused({ variants: [{ key: 'a b', notification: { title: 'x' } }, variants[1]], experiment: {} })).toEqual([400, 'invalid_request', 'variants.0.key'])
    expect(await refused({ variants: [{ key: 'a', notification: {} }, variants[1]], experiment: {} })).toEqual([400, 'invalid_request', 'variants.0.notification'])
    expect(await refused({ variants, experiment: { test_share: 0 } })).toEqual([400, 'invalid_request', 'experiment.test_share'])
    expect(await refused({ variants, experiment: { decide_after: '1m' } })).toEqual([400, 'invalid_experiment', 'experiment.decide_after'])
    expect(await refused({ variants, experiment: { metric: 'opened' } })).toEqual([400, 'invalid_request', 'experiment.metric'])
    expect(await refused({ variants, experiment: {}, localized: { fr: { title: 'Soldes', body: 'Tout doit partir' } } })).toEqual([400, 'invalid_experiment', 'localized'])
    expect(await refused({ variants, experiment: {}, deliver_at_local: '09:00' })).toEqual([400, 'invalid_experiment', 'deliver_at_local'])
    expect(await refused({ variants: [{ key: 'a', notification: { title: 'Hi {{ tags.name }}' } }, variants[1]], experiment: {} })).toEqual([400, 'invalid_experiment', 'variants.0'])
    expect(await refused({ variants: [{ key: 'a', notification: { url: '//evil.example' } }, variants[1]], experiment: {} })).toEqual([400, 'invalid_request', 'variants.0.notification.url'])
  })

  it('is checked the same by a dry run, which creates nothing', async () => {
    const dry = await t.app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: { ...base, variants, experiment: {}, dry_run: true } })
    expect(dry.statusCode).toBe(200)
    expect(await refused({ variants, dry_run: true })).toEqual([400, 'invalid_experiment', 'variants'])
    const rows = await t.ctx.db.query('SELECT count(*)::int AS n FROM broadcast_experiments WHERE project_id = $1', [project.id])
    expect(rows.rows[0].n).toBe(0)
  })

  it('keeps its defaults out of the body, so a retry with the same Idempotency-Key replays', async () => {
    const body = { ...base, variants, experiment: {} }
    const headers = { ...project.auth, 'idempotency-key': 'ab-test-1' }
    const first = await t.app.inject({ method: 'POST', url: '/v1/send', headers, payload: body })
    const again = await t.app.inject({ method: 'POST', url: '/v1/send', headers, payload: body })
    expect(first.statusCode).toBe(202)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.json()).toEqual(first.json())
    const shown = await view(first.json().broadcast_id)
    expect(shown.experiment).toMatchObject({ test_share: 0.2, metric: 'clicked', decide_after: '4h', min_per_variant: 200, on_inconclusive: 'best' })
  })
})
