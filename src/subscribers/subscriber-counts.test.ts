// The per-project counter of active subscribers (migration 0003) that the cap
// check and /v1/me read: after every way a subscriber is added, changes status
// or is removed, the counter must equal an exact count of the rows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import type { SendingBroadcast } from '../broadcasts/broadcast-state.ts'
import { recordBatch } from '../delivery/batch-outcomes.ts'
import { newId } from '../platform/ids.ts'
import { subscribe, subscription } from './subscribers.fixtures.ts'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
})
afterAll(async () => {
  await t.close()
})

async function counter(projectId: string): Promise<number | undefined> {
  const result = await t.database.db.query<{ n: number }>('SELECT active_subscribers AS n FROM project_counters WHERE project_id = $1', [projectId])
  return result.rows[0]?.n
}

async function exactCount(projectId: string): Promise<number> {
  const result = await t.database.db.query<{ n: number }>(
    `SELECT count(*)::int8 AS n FROM subscribers WHERE project_id = $1 AND status = 'active'`,
    [projectId],
  )
  return result.rows[0].n
}

/** The counter equals `expected`, and so does a count of the rows. */
async function expectActive(projectId: string, expected: number): Promise<void> {
  expect(await exactCount(projectId)).toBe(expected)
  expect(await counter(projectId)).toBe(expected)
}

const post = (url: string, payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url, payload })
const subscribeAs = (p: TestProject, body: Record<string, unknown>) => post(`/v1/subscribe?project=${p.id}`, body)
const unsubscribeAs = (p: TestProject, endpoint: unknown) => post(`/v1/unsubscribe?project=${p.id}`, { endpoint })

async function usage(p: TestProject): Promise<{ subscribers: number }> {
  return (await t.app.inject({ method: 'GET', url: '/v1/me', headers: p.auth })).json().project.usage
}

async function setStatus(id: string, status: string): Promise<void> {
  await t.database.db.query('UPDATE subscribers SET status = $2 WHERE id = $1', [id, status])
}

/** A broadcast row in the state fan-out works on, for recordBatch. */
async function sendingBroadcast(projectId: string): Promise<SendingBroadcast> {
  const result = await t.database.db.query<SendingBroadcast>(
    `INSERT INTO broadcasts (id, project_id, status, target, title, body, url, ttl, urgency, started_at)
     VALUES ($1, $2, 'sending', '{"type":"all"}', 'Hi', 'There', 'https://example.com/', 3600, 'normal', now())
     RETURNING id, project_id, status, target, title, body, icon, image, url, ttl, urgency, topic, reserved, audience, started_at`,
    [newId('bdc'), projectId],
  )
  return result.rows[0]
}

describe('project_counters.active_subscribers', () => {
  it('exists at 0 for a new project', async () => {
    const p = await t.project()
    expect(await counter(p.id)).toBe(0)
    expect(await usage(p)).toMatchObject({ subscribers: 0 })
  })

  it('follows subscribe, repeat, unsubscribe and reactivation', async () => {
    const p = await t.project()
    const body = subscription()
    const id = (await subscribeAs(p, body)).json().id
    await expectActive(p.id, 1)
    await subscribe(t, p)
    await expectActive(p.id, 2)
    // A repeat from an active endpoint refreshes the row: no change.
    expect((await subscribeAs(p, body)).json()).toEqual({ id })
    await expectActive(p.id, 2)
    expect((await unsubscribeAs(p, body.endpoint)).statusCode).toBe(200)
    await expectActive(p.id, 1)
    // Unsubscribing again, or an unknown endpoint, changes nothing.
    await unsubscribeAs(p, body.endpoint)
    await unsubscribeAs(p, subscription().endpoint)
    await expectActive(p.id, 1)
    expect((await subscribeAs(p, body)).json()).toEqual({ id })
    await expectActive(p.id, 2)
    // Expired, then back through subscribe.
    await setStatus(id, 'expired')
    await expectActive(p.id, 1)
    expect((await subscribeAs(p, body)).json()).toEqual({ id })
    await expectActive(p.id, 2)
    expect(await usage(p)).toMatchObject({ subscribers: 2 })
  })

  it('follows fan-out expiring many subscribers in one UPDATE, counting only those that were active', async () => {
    const p = await t.project()
    const other = await t.project()
    const ids: string[] = []
    for (let i = 0; i < 12; i++) ids.push(await subscribe(t, p))
    const otherId = await subscribe(t, other)
    await unsubscribeAs(p, (await t.database.db.query<{ endpoint: string }>('SELECT endpoint FROM subscribers WHERE id = $1', [ids[0]])).rows[0].endpoint)
    await setStatus(ids[1], 'expired')
    await expectActive(p.id, 10)

    const broadcast = await sendingBroadcast(p.id)
    const gone = ids.slice(0, 8) // 2 not active any more, 6 active
    const failed = gone.map((subscriberId) => ({ subscriberId, externalId: null, reason: 'gone' as const, status: 410 }))
    const delivered = ids.slice(8).map((subscriberId) => ({ subscriberId, externalId: null }))
    await t.database.db.transaction((tx) => recordBatch(tx, broadcast, { delivered, failed }, 0))

    const statuses = await t.database.db.query<{ status: string }>('SELECT status FROM subscribers WHERE id = ANY($1::text[]) ORDER BY id', [gone])
    expect(statuses.rows.map((r) => r.status)).toEqual(['unsubscribed', ...Array(7).fill('expired')])
    await expectActive(p.id, 4)
    await expectActive(other.id, 1)
    expect(otherId).toBeTruthy()
  })

  it('follows one statement that changes several projects at once', async () => {
    const a = await t.project()
    const b = await t.project()
    const aIds = [await subscribe(t, a), await subscribe(t, a), await subscribe(t, a)]
    const bIds = [await subscribe(t, b), await subscribe(t, b)]
    await t.database.db.query(`UPDATE subscribers SET status = 'expired' WHERE id = ANY($1::text[])`, [[aIds[0], aIds[1], bIds[0]]])
    await expectActive(a.id, 1)
    await expectActive(b.id, 1)
    await t.database.db.query(`UPDATE subscribers SET status = 'active' WHERE project_id = ANY($1::text[])`, [[a.id, b.id]])
    await expectActive(a.id, 3)
    await expectActive(b.id, 2)
    // An UPDATE that leaves every status alone.
    await t.database.db.query('UPDATE subscribers SET last_seen_at = now() WHERE project_id = $1', [a.id])
    await expectActive(a.id, 3)
  })

  it('counts rows inserted several at a time, whatever their status', async () => {
    const p = await t.project()
    await t.database.db.query(
      `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, status)
       SELECT $1 || n, $2, 'https://fcm.googleapis.com/fcm/send/bulk' || n, 'k', 'a',
              CASE WHEN n % 3 = 0 THEN 'expired' WHEN n % 3 = 1 THEN 'unsubscribed' ELSE 'active' END
         FROM generate_series(1, 30) n`,
      [newId('sub'), p.id],
    )
    await expectActive(p.id, 10)
  })

  describe('erasure', () => {
    it('by id: an active subscriber lowers the count, another does not', async () => {
      const p = await t.project()
      const active = await subscribe(t, p)
      const expired = await subscribe(t, p)
      await subscribe(t, p)
      await setStatus(expired, 'expired')
      await expectActive(p.id, 2)
      expect((await t.app.inject({ method: 'DELETE', url: `/v1/subscribers/${active}`, headers: p.auth })).json()).toEqual({ deleted: 1 })
      await expectActive(p.id, 1)
      expect((await t.app.inject({ method: 'DELETE', url: `/v1/subscribers/${expired}`, headers: p.auth })).json()).toEqual({ deleted: 1 })
      await expectActive(p.id, 1)
      expect((await t.app.inject({ method: 'DELETE', url: `/v1/subscribers/${active}`, headers: p.auth })).statusCode).toBe(404)
      await expectActive(p.id, 1)
    })

    it('by endpoint', async () => {
      const p = await t.project()
      const kept = subscription()
      const erased = subscription()
      const unsubscribed = subscription()
      for (const body of [kept, erased, unsubscribed]) await subscribeAs(p, body)
      await unsubscribeAs(p, unsubscribed.endpoint)
      await expectActive(p.id, 2)
      const erase = (endpoint: unknown) =>
        t.app.inject({ method: 'DELETE', url: '/v1/subscribers/by-endpoint', headers: p.auth, payload: { endpoint } })
      expect((await erase(erased.endpoint)).json()).toEqual({ deleted: 1 })
      await expectActive(p.id, 1)
      expect((await erase(unsubscribed.endpoint)).json()).toEqual({ deleted: 1 })
      expect((await erase(erased.endpoint)).json()).toEqual({ deleted: 0 })
      await expectActive(p.id, 1)
    })

    it('by external id: every device of the user in one DELETE, active or not', async () => {
      const p = await t.project()
      const other = await t.project()
      const devices = []
      for (let i = 0; i < 5; i++) devices.push(await subscribe(t, p, { external_id: 'user_42' }))
      await subscribe(t, p, { external_id: 'user_7' })
      await subscribe(t, p)
      await subscribe(t, other, { external_id: 'user_42' })
      await setStatus(devices[0], 'expired')
      await setStatus(devices[1], 'unsubscribed')
      await expectActive(p.id, 5)
      const res = await t.app.inject({ method: 'DELETE', url: '/v1/subscribers/by-external-id/user_42', headers: p.auth })
      expect(res.json()).toEqual({ deleted: 5 })
      await expectActive(p.id, 2)
      await expectActive(other.id, 1)
    })
  })

  it('is not moved by group operations', async () => {
    const p = await t.project()
    const ids = [await subscribe(t, p), await subscribe(t, p), await subscribe(t, p)]
    const groupRes = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: p.auth, payload: { name: 'g' } })
    const group = groupRes.json().id
    const added = await t.app.inject({ method: 'POST', url: `/v1/groups/${group}/subscribers`, headers: p.auth, payload: { subscriber_ids: ids } })
    expect(added.json()).toEqual({ added: 3 })
    await expectActive(p.id, 3)
    // Joining through subscribe's group_ids, as a repeat and as a new endpoint.
    const body = subscription({ group_ids: [group] })
    await subscribeAs(p, body)
    await subscribeAs(p, body)
    await expectActive(p.id, 4)
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/groups/${group}/subscribers/${ids[0]}`, headers: p.auth })).statusCode).toBe(200)
    await expectActive(p.id, 4)
    expect((await t.app.inject({ method: 'DELETE', url: `/v1/groups/${group}`, headers: p.auth })).statusCode).toBe(200)
    await expectActive(p.id, 4)
  })

  it('is what the cap check reads: no rows are counted at subscribe', async () => {
    const p = await t.project({ limits: { subscribers: 5 } })
    await subscribe(t, p)
    // Tampered with on purpose: the cap is now "reached" with one row.
    await t.database.db.query('UPDATE project_counters SET active_subscribers = 5 WHERE project_id = $1', [p.id])
    const res = await subscribeAs(p, subscription())
    expect(res.statusCode).toBe(403)
    expect(res.json().error).toMatchObject({ code: 'subscriber_limit_reached', limit: 5 })
    await t.database.db.query('UPDATE project_counters SET active_subscribers = 1 WHERE project_id = $1', [p.id])
    expect((await subscribeAs(p, subscription())).statusCode).toBe(201)
    await expectActive(p.id, 2)
  })

  it('goes with its project, subscribers and all', async () => {
    const p = await t.project()
    await subscribe(t, p)
    await subscribe(t, p)
    await t.database.db.query('DELETE FROM projects WHERE id = $1', [p.id])
    expect(await counter(p.id)).toBeUndefined()
    expect(await exactCount(p.id)).toBe(0)
  })

  it('stays exact under concurrent subscribes, unsubscribes, erasures and expiry', async () => {
    const p = await t.project({ limits: { subscribers: 40 } })
    const bodies = Array.from({ length: 30 }, () => subscription({ external_id: 'crowd' }))
    await Promise.all(bodies.slice(0, 20).map((body) => subscribeAs(p, body)))
    const ids = (await t.database.db.query<{ id: string }>('SELECT id FROM subscribers WHERE project_id = $1 ORDER BY id', [p.id])).rows.map((r) => r.id)
    const broadcast = await sendingBroadcast(p.id)
    const failed = ids.slice(0, 6).map((subscriberId) => ({ subscriberId, externalId: 'crowd', reason: 'gone' as const, status: 404 }))
    await Promise.all([
      ...bodies.slice(10).map((body) => subscribeAs(p, body)), // 10 repeats, 10 new
      ...bodies.slice(0, 8).map((body) => unsubscribeAs(p, body.endpoint)),
      ...bodies.slice(5, 12).map((body) => subscribeAs(p, body)),
      t.database.db.transaction((tx) => recordBatch(tx, broadcast, { delivered: [], failed }, 0)),
      t.app.inject({ method: 'DELETE', url: `/v1/subscribers/${ids[15]}`, headers: p.auth }),
      t.app.inject({ method: 'DELETE', url: '/v1/subscribers/by-endpoint', headers: p.auth, payload: { endpoint: bodies[25].endpoint } }),
    ])
    const n = await exactCount(p.id)
    expect(n).toBeGreaterThan(0)
    expect(await counter(p.id)).toBe(n)
    await t.app.inject({ method: 'DELETE', url: '/v1/subscribers/by-external-id/crowd', headers: p.auth })
    await expectActive(p.id, 0)
  })
})
