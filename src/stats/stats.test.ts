// GET /v1/stats (issue 25, docs/stats.md): the hourly rollup counts what
// really happens (a real send through the local push service, beacons,
// unsubscribe, erasure, import), in the project's time zone, and another
// project never sees any of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { send, subscribeBrowser, waitForBroadcast } from '../../test/support/delivery.ts'
import { insertSubscriber } from '../broadcasts/broadcasts.fixtures.ts'
import { newId } from '../platform/ids.ts'
import { batchStats, beaconStats } from './stats-deltas.ts'
import type { FailReason } from '../broadcasts/broadcasts.schemas.ts'
import { statsBuckets } from './stats.service.ts'
import { addStats, readStats } from './stats.store.ts'
import type { StatsResponse } from './stats.schemas.ts'

const HOUR = 3_600_000

let t: TestApp
let push: PushService
beforeAll(async () => {
  push = await startPushService()
  t = await createTestApp({ HERALD_SCHEDULER_INTERVAL_MS: '100', HERALD_ENCRYPT_THREADS: '1' }, { worker: true })
})
afterAll(async () => {
  await t.close()
  await push.close()
})

async function stats(p: TestProject, query: string): Promise<StatsResponse> {
  const res = await t.app.inject({ method: 'GET', url: `/v1/stats?${query}`, headers: p.auth })
  expect(res.statusCode, res.body).toBe(200)
  return res.json()
}

/** The last two hours added up (the test may cross an hour), with the active count now. */
async function thisHour(p: TestProject) {
  const now = Date.now()
  const body = await stats(p, `interval=hour&from=${now - HOUR}&to=${now + 1}`)
  return { ...body.totals, active: body.buckets[body.buckets.length - 1].active }
}

describe('GET /v1/stats counts what happened', () => {
  it('a send, its failures, beacons, unsubscribes and erasures, in the hour they happened; another project sees none of it', async () => {
    const a = await t.project()
    const b = await t.project()
    const browsers = await Promise.all([0, 1, 2, 3].map(() => subscribeBrowser(t, a, push)))
    push.fail(browsers[3].endpoint, { status: 410 })
    const bdc = await send(t, a, { target: { type: 'all' }, notification: { title: 'Hi', body: 'There' } })
    const sent = await waitForBroadcast(t, a, bdc)
    expect(sent).toMatchObject({ status: 'sent', delivered: 3, failed: 1 })
    for (const type of ['clicked', 'clicked', 'dismissed']) {
      const res = await t.app.inject({ method: 'POST', url: `/v1/events?project=${a.id}`, payload: { type, broadcast_id: bdc } })
      expect(res.statusCode).toBe(202)
    }
    expect((await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${a.id}`, payload: { endpoint: browsers[0].endpoint } })).statusCode).toBe(200)
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/subscribers/${browsers[1].id}`, headers: a.auth })).statusCode).toBe(200)
    // An imported subscriber, written as the import writes it.
    await t.database.db.query(
      `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, source) VALUES ($1, $2, $3, 'p', 'a', 'import')`,
      [newId('sub'), a.id, `https://fcm.googleapis.com/fcm/send/${newId('sub')}`],
    )

    // The beacon writer commits in batches: poll until the beacons are in.
    let bucket = await thisHour(a)
    for (let i = 0; i < 200 && bucket.clicked + bucket.dismissed < 3; i++) bucket = await thisHour(a)
    expect(bucket).toMatchObject({
      sent: 4,
      delivered: 3,
      failed: 1,
      failed_by_reason: { gone: 1, rejected: 0, unreachable: 0, vapid_key_mismatch: 0, capped: 0, skipped: 0 },
      shown: 0,
      clicked: 2,
      dismissed: 1,
      gained: 5,
      gained_by_source: { subscribe: 4, import: 1, migrated: 0 },
      lost: 3,
      lost_by_reason: { unsubscribed: 1, expired: 1, erased: 1 },
      // 5 gained, 3 lost: browsers[2] and the imported one.
      active: 2,
    })
    const me = (await t.app.inject({ method: 'GET', url: '/v1/me', headers: a.auth })).json()
    expect(me.project.usage.subscribers).toBe(2)

    // Another project's key reads its own project, where nothing happened.
    const other = await thisHour(b)
    expect(other).toMatchObject({ sent: 0, delivered: 0, failed: 0, clicked: 0, dismissed: 0, gained: 0, lost: 0, active: 0 })
    // The day view of the same project adds up to the same numbers.
    const day = await stats(a, 'interval=day')
    expect(day.buckets).toHaveLength(30)
    expect(day.totals).toMatchObject({ sent: 4, delivered: 3, clicked: 2, gained: 5, lost: 3 })
    expect(day.buckets[day.buckets.length - 1].active).toBe(2)
  })

  it('a browser that unsubscribes and subscribes again is lost once and gained twice; a repeat subscribe of an active one is nothing', async () => {
    const p = await t.project()
    const browser = await subscribeBrowser(t, p, push)
    const again = () => t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: { endpoint: browser.endpoint, keys: browser.keys } })
    expect((await again()).statusCode).toBe(201)
    await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${p.id}`, payload: { endpoint: browser.endpoint } })
    expect((await again()).statusCode).toBe(201)
    expect(await thisHour(p)).toMatchObject({ gained: 2, gained_by_source: { subscribe: 2 }, lost: 1, lost_by_reason: { unsubscribed: 1 }, active: 1 })
  })

  it('active at the end of each bucket walks back from today, and is null before counting started', async () => {
    const p = await t.project()
    await subscribeBrowser(t, p, push)
    await subscribeBrowser(t, p, push)
    const now = Date.now()
    const hour = Math.floor(now / HOUR) * HOUR
    // Seeded as the triggers would have written them: 1 gained 3 hours ago, 3 unsubscribed 2 hours ago.
    await t.database.db.query(
      `INSERT INTO stats_hourly (project_id, hour, gained_import, lost_unsubscribed)
       VALUES ($1, $2, 1, 0), ($1, $3, 0, 3)`,
      [p.id, new Date(hour - 3 * HOUR), new Date(hour - 2 * HOUR)],
    )
    await t.database.db.query('UPDATE projects SET stats_since = $2 WHERE id = $1', [p.id, new Date(hour - 5 * HOUR)])
    const body = await stats(p, `interval=hour&from=${hour - 7 * HOUR}&to=${now + 1}`)
    expect(body.stats_since).toBe(hour - 5 * HOUR)
    expect(body.buckets.map((x) => x.start)).toEqual([7, 6, 5, 4, 3, 2, 1, 0].map((h) => hour - h * HOUR))
    // Walking back from 2 now: before the 2 subscribes 0, before the 3 lost 3, before the 1 gained 2.
    expect(body.buckets.map((x) => x.active)).toEqual([null, 2, 2, 2, 3, 0, 0, 2])
    expect(body.buckets.map((x) => x.gained)).toEqual([0, 0, 0, 0, 1, 0, 0, 2])
    expect(body.totals).toMatchObject({ gained: 3, lost: 3, lost_by_reason: { unsubscribed: 3, expired: 0, erased: 0 } })
  })
})

describe('buckets follow the project time zone', () => {
  it('days are local midnight to midnight, 25 hours on the day the clocks go back (America/New_York)', async () => {
    const p = await t.project()
    const patch = await t.app.inject({ method: 'PATCH', url: '/v1/me', headers: p.auth, payload: { default_timezone: 'America/New_York' } })
    expect(patch.statusCode, patch.body).toBe(200)
    // 2026-10-31 12:00 EDT to 2026-11-02 12:00 EST.
    const body = await stats(p, `interval=day&from=${Date.UTC(2026, 9, 31, 16)}&to=${Date.UTC(2026, 10, 2, 17)}`)
    expect(body.time_zone).toBe('America/New_York')
    expect(body.buckets.map((x) => [new Date(x.start).toISOString(), (x.end - x.start) / HOUR])).toEqual([
      ['2026-10-31T04:00:00.000Z', 24],
      ['2026-11-01T04:00:00.000Z', 25],
      ['2026-11-02T05:00:00.000Z', 24],
    ])
    expect(body.from).toBe(Date.UTC(2026, 9, 31, 4))
    expect(body.to).toBe(Date.UTC(2026, 10, 3, 5))
  })

  it('a day in spring is 23 hours, and hours of a zone half an hour off UTC start at half past (UTC)', () => {
    const spring = statsBuckets('Europe/Paris', 'day', Date.UTC(2026, 2, 28, 12), Date.UTC(2026, 2, 30, 12))
    expect(spring.starts.map((s, i) => (spring.ends[i] - s) / HOUR)).toEqual([24, 23, 24])
    const kolkata = statsBuckets('Asia/Kolkata', 'hour', Date.UTC(2026, 0, 1, 10, 45), Date.UTC(2026, 0, 1, 12))
    expect(kolkata.starts.map((s) => new Date(s).toISOString())).toEqual(['2026-01-01T10:30:00.000Z', '2026-01-01T11:30:00.000Z'])
  })
})

describe('a zone PostgreSQL does not know', () => {
  it('days are summed by a search over the bucket starts instead, to the same numbers', async () => {
    const p = await t.project()
    await t.database.db.query(
      `INSERT INTO stats_hourly (project_id, hour, sent, failed_gone) VALUES ($1, '2026-03-01T23:00:00Z', 5, 1), ($1, '2026-03-02T00:00:00Z', 7, 0)`,
      [p.id],
    )
    const { starts, ends } = statsBuckets('UTC', 'day', Date.UTC(2026, 2, 1), Date.UTC(2026, 2, 3))
    const dates = (xs: number[]) => xs.map((x) => new Date(x))
    const known = await readStats(t.database.db, p.id, 'day', 'UTC', dates(starts), dates(ends))
    const unknown = await readStats(t.database.db, p.id, 'day', 'Nowhere/Atlantis', dates(starts), dates(ends))
    expect(known!.buckets.map((b) => [b.sent, b.failed_gone])).toEqual([[5, 1], [7, 0]])
    expect(unknown!.buckets).toEqual(known!.buckets)
  })
})

describe('GET /v1/stats refuses bad ranges clearly', () => {
  it.each([
    ['to before from', `from=${Date.UTC(2026, 1, 2)}&to=${Date.UTC(2026, 1, 1)}`, 'invalid_stats_range'],
    ['an empty range', `from=${Date.UTC(2026, 1, 1)}&to=${Date.UTC(2026, 1, 1)}`, 'invalid_stats_range'],
    ['50 days of hours', `interval=hour&from=${Date.UTC(2026, 0, 1)}&to=${Date.UTC(2026, 1, 20)}`, 'invalid_stats_range'],
    ['four thousand years of days', `interval=day&from=0&to=${Date.UTC(2026, 0, 1)}`, 'invalid_stats_range'],
    ['an unknown interval', 'interval=week', 'invalid_request'],
    ['a date that is no number', 'from=yesterday', 'invalid_request'],
    ['a date past the year 9999', 'to=8640000000000000', 'invalid_request'],
  ])('%s', async (_name, query, code) => {
    const p = await t.project()
    const res = await t.app.inject({ method: 'GET', url: `/v1/stats?${query}`, headers: p.auth })
    expect(res.statusCode).toBe(400)
    expect(res.json().error.code).toBe(code)
    if (code === 'invalid_stats_range') expect(res.json().error.max_buckets).toBe(1000)
  })

  it('an API key whose scope does not read broadcasts gets 403', async () => {
    const p = await t.project()
    const created = await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: p.auth, payload: { name: 'subs', scope: 'subscribers' } })
    expect(created.statusCode, created.body).toBe(201)
    const res = await t.app.inject({ method: 'GET', url: '/v1/stats', headers: { authorization: `Bearer ${created.json().api_key}` } })
    expect(res.statusCode).toBe(403)
    expect(res.json().error.code).toBe('insufficient_scope')
  })
})

describe('the rollup', () => {
  it('counts every beacon type it has a counter for, shown included', () => {
    expect(beaconStats([
      { project_id: 'prj_b', type: 'shown' },
      { project_id: 'prj_a', type: 'clicked' },
      { project_id: 'prj_b', type: 'shown' },
      { project_id: 'prj_a', type: 'something_new' },
    ])).toEqual([
      { project_id: 'prj_b', counts: { shown: 2 } },
      { project_id: 'prj_a', counts: { clicked: 1 } },
    ])
  })

  it('a failure reason without a column (one a later release adds) counts in failed alone, and the batch still commits', async () => {
    const p = await t.project()
    const delta = batchStats(p.id, { delivered: [{}], failed: [{ reason: 'gone' }, { reason: 'capped' }, { reason: 'brand_new' as FailReason }] })
    expect(delta.counts).toEqual({ sent: 3, delivered: 1, failed: 3, failed_gone: 1, failed_capped: 1 })
    await t.database.db.transaction((tx) => addStats(tx, [delta]))
    const row = (await t.database.db.query('SELECT sent, failed, failed_gone, failed_capped FROM stats_hourly WHERE project_id = $1', [p.id])).rows
    expect(row).toEqual([{ sent: 3, failed: 3, failed_gone: 1, failed_capped: 1 }])
  })

  it('a project deleted with active subscribers goes, its stats with it', async () => {
    const p = await t.project()
    await insertSubscriber(t.database.db, p.id)
    expect((await t.database.db.query('SELECT 1 FROM stats_hourly WHERE project_id = $1', [p.id])).rows).toHaveLength(1)
    await t.database.db.query('DELETE FROM projects WHERE id = $1', [p.id])
    expect((await t.database.db.query('SELECT 1 FROM stats_hourly WHERE project_id = $1', [p.id])).rows).toHaveLength(0)
  })
})
