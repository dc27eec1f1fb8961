// Time zones, local-time delivery and quiet hours end to end (issue 24,
// docs/timing.md), on both storage modes: the settings and the subscriber's
// zone through the API (bad values 400 naming the field, another project's
// key 404), the waves fan-out plans against the real database with an
// injected clock (DST day, each past mode, the project's default zone for
// subscribers with none), and real pushes through the local push service:
// a local-time send whose instant is a second away delivers then, while the
// zone whose time is hours away waits in the broadcast's `waiting`; quiet
// hours hold one zone and not another, and urgency high or
// ignore_quiet_hours go through.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { send, subscribeBrowser, waitForBroadcast, type Browser } from '../../test/support/delivery.ts'
import { findWaveInputs } from '../broadcasts/broadcast-state.ts'
import { planWaves } from './waves.ts'

let t: TestApp
let push: PushService
let b: TestProject

beforeAll(async () => {
  push = await startPushService()
  // Batches of one: every wave is a chain of several jobs, each passing the wave on to the next.
  t = await createTestApp({ HERALD_SCHEDULER_INTERVAL_MS: '50', HERALD_ENCRYPT_THREADS: '1', HERALD_FANOUT_BATCH_SIZE: '1' }, { worker: true })
  b = await t.project({ plan: 'plus', name: 'Other' })
}, 60_000)
afterAll(async () => {
  await t.close()
  await push.close()
})

const notification = { title: 'Good morning', body: 'Local time' }

async function patchMe(p: TestProject, payload: unknown) {
  return t.app.inject({ method: 'PATCH', url: '/v1/me', headers: p.auth, payload: payload as object })
}

async function subscribeIn(p: TestProject, timezone: string | null): Promise<Browser> {
  return subscribeBrowser(t, p, push, timezone === null ? {} : { timezone })
}

async function broadcastView(p: TestProject, id: string) {
  return (await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: p.auth })).json()
}

function issuePath(res: { json(): { error: { issues?: Array<{ path: string }> } } }): string | undefined {
  return res.json().error.issues?.[0]?.path
}

/** HH:MM:SS of an instant in UTC. */
function utcClock(ms: number): string {
  return new Date(ms).toISOString().slice(11, 19)
}

describe('settings and subscriber zones through the API', () => {
  it('sets the default zone and quiet hours, refuses bad ones naming the field, and changes nothing then', async () => {
    const p = await t.project({ plan: 'plus' })
    for (const [body, path] of [
      [{ default_timezone: 'Mars/Olympus_Mons' }, 'default_timezone'],
      [{ default_timezone: '+02:00' }, 'default_timezone'],
      [{ quiet_hours: { start: '22:00', end: '22:00' } }, 'quiet_hours.end'],
      [{ quiet_hours: { start: '25:00', end: '08:00' } }, '/quiet_hours/start'],
    ] as const) {
      const res = await patchMe(p, { ...body, default_icon: null })
      expect(res.statusCode, JSON.stringify(body)).toBe(400)
      expect(`${issuePath(res) ?? ''} ${res.json().error.message}`).toContain(path.replace('/', '').split('/')[0])
    }
    expect((await patchMe(p, {})).statusCode).toBe(400)
    let me = (await t.app.inject({ method: 'GET', url: '/v1/me', headers: p.auth })).json().project
    expect([me.default_timezone, me.quiet_hours]).toEqual(['UTC', null])

    const ok = await patchMe(p, { default_timezone: 'asia/tokyo', quiet_hours: { start: '22:00', end: '08:00' } })
    expect(ok.statusCode).toBe(200)
    expect([ok.json().project.default_timezone, ok.json().project.quiet_hours]).toEqual(['Asia/Tokyo', { start: '22:00', end: '08:00' }])
    expect((await patchMe(p, { quiet_hours: null })).json().project.quiet_hours).toBeNull()
    me = (await t.app.inject({ method: 'GET', url: '/v1/me', headers: p.auth })).json().project
    expect([me.default_timezone, me.quiet_hours, me.default_icon]).toEqual(['Asia/Tokyo', null, null])
  })

  it("records a subscriber's zone at subscribe and by PATCH; refuses non-IANA zones; another project's key gets 404", async () => {
    const p = await t.project({ plan: 'plus' })
    const bad = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: { ...push.createSubscription(), timezone: 'GMT+2' } })
    expect(bad.statusCode).toBe(400)
    expect(issuePath(bad)).toBe('timezone')
    const counts = await t.app.inject({ method: 'GET', url: '/v1/subscribers/counts', headers: p.auth })
    expect(counts.json().active).toBe(0)

    const s = await subscribeIn(p, 'europe/paris')
    const get = () => t.app.inject({ method: 'GET', url: `/v1/subscribers/${s.id}`, headers: p.auth })
    expect((await get()).json().timezone).toBe('Europe/Paris')
    const patch = (who: TestProject, payload: object) => t.app.inject({ method: 'PATCH', url: `/v1/subscribers/${s.id}`, headers: who.auth, payload })
    const refused = await patch(p, { timezone: '+02:00' })
    expect(refused.statusCode).toBe(400)
    expect(issuePath(refused)).toBe('timezone')
    expect((await patch(b, { timezone: 'Asia/Tokyo' })).statusCode).toBe(404)
    expect((await get()).json().timezone).toBe('Europe/Paris')
    const changed = await patch(p, { timezone: 'America/New_York' })
    expect(changed.statusCode).toBe(200)
    expect([changed.json().timezone, changed.json().tags]).toEqual(['America/New_York', {}])
    expect((await patch(p, { timezone: null })).json().timezone).toBeNull()
    // Every device of one user at once.
    const user = await subscribeBrowser(t, p, push, { external_id: 'traveller', timezone: 'Asia/Tokyo' })
    const byUser = await t.app.inject({ method: 'PATCH', url: '/v1/subscribers/by-external-id/traveller', headers: p.auth, payload: { timezone: 'Europe/Paris' } })
    expect(byUser.json()).toEqual({ updated: 1 })
    expect((await t.app.inject({ method: 'GET', url: `/v1/subscribers/${user.id}`, headers: p.auth })).json().timezone).toBe('Europe/Paris')
    expect((await t.app.inject({ method: 'PATCH', url: '/v1/subscribers/by-external-id/traveller', headers: b.auth, payload: { timezone: 'UTC' } })).statusCode).toBe(404)
    // A repeat subscribe without a zone keeps the stored one; with one, sets it.
    await patch(p, { timezone: 'Asia/Kolkata' })
    await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: { endpoint: s.endpoint, keys: s.keys } })
    expect((await get()).json().timezone).toBe('Asia/Kolkata')
  })

  it('refuses local-time fields where they mean nothing, naming the field, and creates nothing', async () => {
    const p = await t.project({ plan: 'plus' })
    const target = { type: 'all' }
    for (const [extra, path] of [
      [{ deliver_on: '2030-01-01' }, 'deliver_on'],
      [{ deliver_at_local: '09:00', past: 'skip' }, 'past'],
      [{ deliver_at_local: '09:00', deliver_on: '2026-02-30' }, 'deliver_on'],
      [{ deliver_at_local: '09:00', deliver_on: '2001-01-01' }, 'deliver_on'],
      [{ deliver_at_local: '09:00', scheduled_at: Date.now() + 60_000 }, 'deliver_at_local'],
      [{ deliver_at_local: '9:00' }, '/deliver_at_local'],
    ] as const) {
      const res = await t.app.inject({ method: 'POST', url: '/v1/send', headers: p.auth, payload: { target, notification, ...extra } })
      expect(res.statusCode, JSON.stringify(extra)).toBe(400)
      expect(`${issuePath(res) ?? ''} ${res.json().error.message}`).toContain(path.replace('/', ''))
    }
    const free = await t.project({ plan: 'free' })
    const gated = await t.app.inject({ method: 'POST', url: '/v1/send', headers: free.auth, payload: { target, notification, deliver_at_local: '09:00' } })
    expect(gated.json().error.code).toBe('scheduling_requires_upgrade')
    const list = await t.app.inject({ method: 'GET', url: '/v1/broadcasts', headers: p.auth })
    expect(list.json().broadcasts).toEqual([])
  })
})

describe('waves planned by zone (injected clock)', () => {
  it("09:00 on a DST day in each subscriber's zone, the project's default for those without, by past mode", async () => {
    const p = await t.project({ plan: 'plus' })
    await patchMe(p, { default_timezone: 'Asia/Tokyo' })
    await subscribeIn(p, 'America/New_York')
    await subscribeIn(p, 'America/New_York')
    await subscribeIn(p, 'Europe/Paris')
    await subscribeIn(p, null)
    const base = { project_id: p.id, target: { type: 'all' } as const, urgency: 'normal', default_timezone: 'Asia/Tokyo', quiet_hours: null }
    const timing = { deliver_at_local: '09:00', deliver_on: '2026-03-08' }
    // 10:00 UTC on 2026-03-08: 09:00 passed in Tokyo (00:00 UTC) and Paris (08:00 UTC), not in New York (13:00 UTC, EDT since that morning).
    const now = Date.parse('2026-03-08T10:00:00Z')
    const summary = (plan: Awaited<ReturnType<typeof planWaves>>) => plan && {
      waves: plan.waves.map((w) => ({ at: new Date(w.at).toISOString(), reason: w.reason, zones: w.zones, planned: w.planned })),
      skipped: plan.skipped,
      audience: plan.audience,
    }
    expect(summary(await planWaves(t.ctx.db, { ...base, timing: { ...timing, past: 'next_day' } }, now))).toEqual({
      waves: [
        { at: '2026-03-08T13:00:00.000Z', reason: 'local_time', zones: ['America/New_York'], planned: 2 },
        { at: '2026-03-09T00:00:00.000Z', reason: 'local_time', zones: ['Asia/Tokyo'], planned: 1 },
        { at: '2026-03-09T08:00:00.000Z', reason: 'local_time', zones: ['Europe/Paris'], planned: 1 },
      ],
      skipped: 0,
      audience: 4,
    })
    expect(summary(await planWaves(t.ctx.db, { ...base, timing: { ...timing, past: 'skip' } }, now))).toEqual({
      waves: [{ at: '2026-03-08T13:00:00.000Z', reason: 'local_time', zones: ['America/New_York'], planned: 2 }],
      skipped: 2,
      audience: 2,
    })
    expect(summary(await planWaves(t.ctx.db, { ...base, timing: { ...timing, past: 'now' } }, now))).toEqual({
      waves: [
        { at: '2026-03-08T10:00:00.000Z', reason: 'now', zones: ['Asia/Tokyo', 'Europe/Paris'], planned: 2 },
        { at: '2026-03-08T13:00:00.000Z', reason: 'local_time', zones: ['America/New_York'], planned: 2 },
      ],
      skipped: 0,
      audience: 4,
    })
    // Quiet hours 22:00-08:00 alone, at 03:00 UTC: 23:00 EDT in New York (held to 08:00 EDT, 12:00 UTC), 04:00 CET in Paris (to 08:00 CET, 07:00 UTC), noon in Tokyo.
    const quiet = { ...base, timing: null, quiet_hours: { start: '22:00', end: '08:00' } }
    expect(summary(await planWaves(t.ctx.db, quiet, Date.parse('2026-03-09T03:00:00Z')))).toEqual({
      waves: [
        { at: '2026-03-09T03:00:00.000Z', reason: 'now', zones: ['Asia/Tokyo'], planned: 1 },
        { at: '2026-03-09T07:00:00.000Z', reason: 'quiet_hours', zones: ['Europe/Paris'], planned: 1 },
        { at: '2026-03-09T12:00:00.000Z', reason: 'quiet_hours', zones: ['America/New_York'], planned: 2 },
      ],
      skipped: 0,
      audience: 4,
    })
    // urgency high: quiet hours do not apply, and nothing else times the send: one ordinary chain.
    expect(await planWaves(t.ctx.db, { ...quiet, urgency: 'high' }, Date.parse('2026-03-09T03:00:00Z'))).toBeNull()
  })
})

describe('real pushes at their local time', () => {
  it('delivers to the zone whose time comes in a second, keeps the other waiting, counts adding up; a stop ends the wait', async () => {
    const p = await t.project({ plan: 'plus' })
    const now = await subscribeIn(p, null) // the project's default zone, UTC
    const later = await subscribeIn(p, 'Asia/Kolkata') // 5.5 h ahead of UTC: the same clock time has just passed there
    const instant = Date.now() + 1500
    const id = await send(t, p, { target: { type: 'all' }, notification, deliver_at_local: utcClock(instant) })
    // Whole seconds: the instant is the start of that second.
    const due = Math.floor(instant / 1000) * 1000
    const state = await waitForBroadcast(t, p, id, (s) => s.delivered === 1)
    const view = await broadcastView(p, id)
    expect(view.status).toBe('sending')
    expect(push.receivedFor(now.endpoint)).toHaveLength(1)
    expect(push.receivedFor(now.endpoint)[0].at).toBeGreaterThanOrEqual(due)
    expect(push.receivedFor(later.endpoint)).toHaveLength(0)
    // Kolkata's turn is the same clock time tomorrow there: 5.5 h before the UTC instant, a day later.
    expect(view.waiting).toEqual([{ at: due - 5.5 * 3_600_000 + 86_400_000, reason: 'local_time', count: 1 }])
    expect(view.held).toBe(0)
    expect(state.audience).toBe(2)
    expect(view.delivered + view.waiting[0].count).toBe(view.audience)
    expect(view.pending).toBe(1)
    expect(view.deliver_at_local).toBe(utcClock(instant))
    // The wave that waits is a job row due at its instant: a restart or a crash meanwhile loses nothing.
    const jobs = await t.ctx.db.query<{ run_at: Date; payload_version: number; zones: string[] }>(
      `SELECT run_at, payload_version, ARRAY(SELECT jsonb_array_elements_text(payload -> 'wave' -> 'zones')) AS zones
         FROM jobs WHERE kind = 'push_batch' AND payload ->> 'broadcast_id' = $1 AND run_at > now()`,
      [id],
    )
    expect(jobs.rows.map((j) => ({ at: j.run_at.getTime(), version: j.payload_version, zones: j.zones }))).toEqual([
      { at: view.waiting[0].at, version: 2, zones: ['Asia/Kolkata'] },
    ])

    const stopped = await t.app.inject({ method: 'POST', url: `/v1/broadcasts/${id}/stop`, headers: p.auth })
    expect(stopped.statusCode).toBe(200)
    const after = await broadcastView(p, id)
    expect([after.status, after.waiting, after.delivered]).toEqual(['canceled', [], 1])
    // Another project's key sees nothing of it.
    expect((await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: b.auth })).statusCode).toBe(404)
  })

  it("past: now sends at once where the date's time has passed, the rest at their instant; the broadcast ends sent once every wave is done", async () => {
    const p = await t.project({ plan: 'plus' })
    const soon = await subscribeIn(p, 'UTC')
    const passed = await subscribeIn(p, 'Asia/Kolkata') // that date and time came 5.5 h ago there
    const instant = Date.now() + 1500
    const due = Math.floor(instant / 1000) * 1000
    const id = await send(t, p, {
      target: { type: 'all' }, notification, deliver_at_local: utcClock(instant), deliver_on: new Date(instant).toISOString().slice(0, 10), past: 'now',
    })
    const done = await waitForBroadcast(t, p, id)
    expect([done.status, done.delivered, done.audience]).toEqual(['sent', 2, 2])
    expect(push.receivedFor(passed.endpoint)[0].at).toBeLessThan(due)
    expect(push.receivedFor(soon.endpoint)[0].at).toBeGreaterThanOrEqual(due)
    const view = await broadcastView(p, id)
    expect([view.waiting, view.skipped, view.past]).toEqual([[], 0, 'now'])
  })

  it('quiet hours hold one zone until they end and let the other through; urgency high and ignore_quiet_hours go through', async () => {
    const p = await t.project({ plan: 'plus' })
    const clock = Date.now()
    // A two-hour window around now in UTC (it may wrap midnight); Kolkata (UTC+5:30) is outside it.
    const start = utcClock(clock - 3_600_000).slice(0, 5)
    const end = utcClock(clock + 3_600_000).slice(0, 5)
    expect((await patchMe(p, { quiet_hours: { start, end } })).statusCode).toBe(200)
    const asleep = await subscribeIn(p, 'UTC')
    const awake = await subscribeIn(p, 'Asia/Kolkata')

    // The dry run says beforehand who would be held, until when.
    const endsAt = Date.parse(`${new Date(clock + 3_600_000).toISOString().slice(0, 10)}T${end}:00Z`)
    const dry = await t.app.inject({ method: 'POST', url: '/v1/send', headers: p.auth, payload: { target: { type: 'all' }, notification, dry_run: true } })
    expect([dry.json().audience, dry.json().waiting, dry.json().skipped]).toEqual([2, [{ at: endsAt, reason: 'quiet_hours', count: 1 }], 0])
    const urgentDry = await t.app.inject({ method: 'POST', url: '/v1/send', headers: p.auth, payload: { target: { type: 'all' }, notification, urgency: 'high', dry_run: true } })
    expect(urgentDry.json().waiting).toBeUndefined()

    const id = await send(t, p, { target: { type: 'all' }, notification })
    await waitForBroadcast(t, p, id, (s) => s.delivered === 1)
    const view = await broadcastView(p, id)
    expect(push.receivedFor(awake.endpoint)).toHaveLength(1)
    expect(push.receivedFor(asleep.endpoint)).toHaveLength(0)
    expect(view.waiting).toEqual([{ at: endsAt, reason: 'quiet_hours', count: 1 }])
    expect(view.held).toBe(1)
    expect(view.delivered + view.held).toBe(view.audience)

    for (const extra of [{ urgency: 'high' }, { ignore_quiet_hours: true }]) {
      const through = await send(t, p, { target: { type: 'all' }, notification, ...extra })
      const done = await waitForBroadcast(t, p, through)
      expect([done.status, done.delivered], JSON.stringify(extra)).toEqual(['sent', 2])
    }
    expect(push.receivedFor(asleep.endpoint)).toHaveLength(2)
  })
})
