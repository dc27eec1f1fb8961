// The shown beacon and the funnel (issue 25, docs/funnel.md): a shown beacon
// is counted on its broadcast, writes no events row and no subscriber health
// unless a webhook endpoint asked for shown, is dropped for another project's
// broadcast, and the funnel of GET /v1/broadcasts/:id reads the counts with
// Safari's declarative pushes apart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { newId } from '../platform/ids.ts'
import { insertSentBroadcast, insertSubscriber } from '../broadcasts/broadcasts.fixtures.ts'
import { clickLinkKey, clickToken } from '../broadcasts/click-link.ts'

let t: TestApp
let a: TestProject
let b: TestProject
beforeAll(async () => {
  t = await createTestApp()
  a = await t.project({ name: 'A' })
  b = await t.project({ name: 'B' })
})
afterAll(async () => {
  await t.close()
})

function beacon(projectId: string, body: Record<string, unknown>) {
  return t.app.inject({ method: 'POST', url: `/v1/events?project=${projectId}`, payload: JSON.stringify(body), headers: { 'content-type': 'text/plain' } })
}

async function row(id: string) {
  return (await t.database.db.query<{ shown: number; clicked: number; clicked_via_link: number; dismissed: number }>(
    'SELECT shown, clicked, clicked_via_link, dismissed FROM broadcasts WHERE id = $1', [id])).rows[0]
}

async function eventsOf(id: string) {
  return (await t.database.db.query<{ type: string; subscriber_id: string | null; meta: unknown }>('SELECT type, subscriber_id, meta FROM events WHERE broadcast_id = $1 ORDER BY type', [id])).rows
}

async function view(project: TestProject, id: string) {
  const res = await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: project.auth })
  expect(res.statusCode).toBe(200)
  return res.json()
}

async function createWebhook(project: TestProject, events?: string[]): Promise<{ id: string; events: string[] }> {
  const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: project.auth, payload: { url: 'https://hooks.example.com/herald', ...(events ? { events } : {}) } })
  expect(res.statusCode).toBe(201)
  return res.json()
}

async function deliveriesOf(broadcastId: string) {
  return (await t.database.db.query<{ webhook_id: string; type: string }>(
    'SELECT d.webhook_id, e.type FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.broadcast_id = $1', [broadcastId])).rows
}

describe('the shown beacon', () => {
  it('counts on the broadcast: no events row, no subscriber health, 202 as any beacon', async () => {
    const bdc = await insertSentBroadcast(t.database.db, a.id)
    const sub = await insertSubscriber(t.database.db, a.id)
    const res = await beacon(a.id, { type: 'shown', broadcast_id: bdc, subscriber_id: sub, action: 'x' })
    expect(res.statusCode).toBe(202)
    expect(res.json()).toEqual({ ok: true })
    expect(await row(bdc)).toEqual({ shown: 1, clicked: 0, clicked_via_link: 0, dismissed: 0 })
    expect(await eventsOf(bdc)).toEqual([])
    const health = await t.database.db.query('SELECT 1 FROM subscriber_health WHERE subscriber_id = $1', [sub])
    expect(health.rows).toEqual([])
    expect((await view(a, bdc)).shown).toBe(1)
  })

  it('many at once, mixed with clicks, in batches: every one counted once', async () => {
    const bdc = await insertSentBroadcast(t.database.db, a.id)
    const other = await insertSentBroadcast(t.database.db, a.id)
    await Promise.all([
      ...Array.from({ length: 40 }, () => beacon(a.id, { type: 'shown', broadcast_id: bdc })),
      ...Array.from({ length: 7 }, () => beacon(a.id, { type: 'clicked', broadcast_id: bdc })),
      ...Array.from({ length: 3 }, () => beacon(a.id, { type: 'dismissed', broadcast_id: bdc })),
      ...Array.from({ length: 5 }, () => beacon(a.id, { type: 'shown', broadcast_id: other })),
    ])
    expect(await row(bdc)).toEqual({ shown: 40, clicked: 7, clicked_via_link: 0, dismissed: 3 })
    expect((await row(other)).shown).toBe(5)
    // The clicks and dismissals still write their events, as before.
    expect((await eventsOf(bdc)).map((e) => e.type).sort()).toEqual([...Array(7).fill('clicked'), ...Array(3).fill('dismissed')])
  })

  it("rolls up into the project's numbers over time (GET /v1/stats), another project's broadcast not", async () => {
    const c = await t.project({ name: 'C' })
    const mine = await insertSentBroadcast(t.database.db, c.id)
    const theirs = await insertSentBroadcast(t.database.db, b.id)
    await Promise.all([
      ...Array.from({ length: 3 }, () => beacon(c.id, { type: 'shown', broadcast_id: mine })),
      ...Array.from({ length: 2 }, () => beacon(c.id, { type: 'clicked', broadcast_id: mine })),
      beacon(c.id, { type: 'shown', broadcast_id: theirs }),
    ])
    const res = await t.app.inject({ method: 'GET', url: '/v1/stats?interval=hour', headers: c.auth })
    expect(res.statusCode).toBe(200)
    expect(res.json().totals).toMatchObject({ shown: 3, clicked: 2 })
    expect((await row(theirs)).shown).toBe(0)
  })

  it("has a budget of its own: a send's shown beacons neither go over nor spend the API's requests_per_minute", async () => {
    const small = await t.project({ name: 'Small', limits: { requests_per_minute: 2 } })
    const bdc = await insertSentBroadcast(t.database.db, small.id)
    for (let i = 0; i < 6; i++) expect((await beacon(small.id, { type: 'shown', broadcast_id: bdc })).statusCode).toBe(202)
    expect((await row(bdc)).shown).toBe(6)
    const api = await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${bdc}`, headers: small.auth })
    expect(api.statusCode).toBe(200)
  })

  it("is dropped for another project's broadcast, an unknown one, or without a project", async () => {
    const theirs = await insertSentBroadcast(t.database.db, b.id)
    expect((await beacon(a.id, { type: 'shown', broadcast_id: theirs })).statusCode).toBe(202)
    expect((await beacon(a.id, { type: 'shown', broadcast_id: newId('bdc') })).statusCode).toBe(202)
    const res = await t.app.inject({ method: 'POST', url: '/v1/events', payload: JSON.stringify({ type: 'shown', broadcast_id: theirs }) })
    expect(res.statusCode).toBe(202)
    expect(await row(theirs)).toEqual({ shown: 0, clicked: 0, clicked_via_link: 0, dismissed: 0 })
    expect(await eventsOf(theirs)).toEqual([])
    // Its own project's beacon still counts (the drop above was not the route ignoring shown).
    await beacon(b.id, { type: 'shown', broadcast_id: theirs })
    expect((await row(theirs)).shown).toBe(1)
  })
})

describe('shown webhook events are opt-in', () => {
  it('a new endpoint without events does not get shown; one that lists shown gets one event per beacon', async () => {
    const project = await t.project()
    const byDefault = await createWebhook(project)
    expect(byDefault.events).toEqual(['delivered', 'failed', 'clicked', 'dismissed'])
    const all = await createWebhook(project, ['delivered', 'failed', 'clicked', 'dismissed'])
    const bdc = await insertSentBroadcast(t.database.db, project.id)
    await beacon(project.id, { type: 'shown', broadcast_id: bdc })
    expect(await eventsOf(bdc)).toEqual([])
    expect(await deliveriesOf(bdc)).toEqual([])

    const shownOnly = await createWebhook(project, ['shown'])
    await beacon(project.id, { type: 'shown', broadcast_id: bdc })
    await beacon(project.id, { type: 'clicked', broadcast_id: bdc })
    expect(await eventsOf(bdc)).toEqual([
      { type: 'clicked', subscriber_id: null, meta: null },
      { type: 'shown', subscriber_id: null, meta: null },
    ])
    const deliveries = await deliveriesOf(bdc)
    expect(deliveries.filter((d) => d.type === 'shown')).toEqual([{ webhook_id: shownOnly.id, type: 'shown' }])
    expect(deliveries.filter((d) => d.type === 'clicked').map((d) => d.webhook_id).sort()).toEqual([byDefault.id, all.id].sort())
    expect((await row(bdc)).shown).toBe(2)
  })

  it("a shown beacon for another project's broadcast writes no event even where that project hooks shown", async () => {
    const hooked = await t.project()
    await createWebhook(hooked, ['shown'])
    const theirs = await insertSentBroadcast(t.database.db, b.id)
    await beacon(hooked.id, { type: 'shown', broadcast_id: theirs })
    expect(await eventsOf(theirs)).toEqual([])
    expect((await row(theirs)).shown).toBe(0)
  })
})

describe('the funnel of GET /v1/broadcasts/:id', () => {
  async function setCounts(id: string, counts: Record<string, number>): Promise<void> {
    const columns = Object.keys(counts)
    await t.database.db.query(`UPDATE broadcasts SET ${columns.map((c, i) => `${c} = $${i + 2}`).join(', ')} WHERE id = $1`, [id, ...Object.values(counts)])
  }

  it('counts the steps and rates; without the declarative form every delivered push can report shown', async () => {
    // url '/' and no domain: the pushes carry no declarative form (Safari shows them through the service worker).
    const bdc = await insertSentBroadcast(t.database.db, a.id)
    await setCounts(bdc, { audience: 100, delivered: 80, failed: 20, failed_capped: 5, failed_skipped: 5, apple_delivered: 30, shown: 60, clicked: 12, dismissed: 9 })
    const got = await view(a, bdc)
    expect(got.shown).toBe(60)
    expect(got.funnel).toEqual({
      audience: 100, sent: 90, delivered: 80, cannot_report_shown: 0, shown: 60, clicked: 12, clicked_by_action: {}, dismissed: 9,
      rates: { delivered: 0.8889, shown: 0.75, click_through: 0.15, click_through_shown: 0.2 },
    })
  })

  it("Safari's declarative pushes are counted apart, out of the shown rate, and their link clicks out of the click-through over shown", async () => {
    const project = await t.project()
    await t.database.db.query("UPDATE projects SET domain = 'shop.example.com' WHERE id = $1", [project.id])
    const bdc = await insertSentBroadcast(t.database.db, project.id)
    await setCounts(bdc, { audience: 100, delivered: 100, apple_delivered: 40, shown: 30, clicked: 10 })
    // A click through Safari's click link (GET /c/:token) counts as a click, and apart.
    const key = (await t.database.db.query<{ vapid_private: string }>('SELECT vapid_private FROM projects WHERE id = $1', [project.id])).rows[0].vapid_private
    const token = clickToken(clickLinkKey(key), { project_id: project.id, broadcast_id: bdc, action: null, url: '/' })
    const opened = await t.app.inject({ method: 'GET', url: `/c/${token}` })
    expect(opened.statusCode).toBe(302)
    expect(await row(bdc)).toMatchObject({ clicked: 11, clicked_via_link: 1 })
    const got = await view(project, bdc)
    expect(got.funnel).toMatchObject({
      delivered: 100, cannot_report_shown: 40, shown: 30, clicked: 11,
      rates: { delivered: 1, shown: 0.5, click_through: 0.11, click_through_shown: 0.3333 },
    })
    // The list view carries the same funnel.
    const list = (await t.app.inject({ method: 'GET', url: '/v1/broadcasts', headers: project.auth })).json()
    expect(list.broadcasts[0].funnel).toEqual(got.funnel)
  })

  it('rates are null where their denominator is 0', async () => {
    const bdc = await insertSentBroadcast(t.database.db, a.id)
    expect((await view(a, bdc)).funnel.rates).toEqual({ delivered: null, shown: null, click_through: null, click_through_shown: null })
  })
})
