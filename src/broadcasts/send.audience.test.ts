// POST /v1/send: targets and their audience estimates, group_not_found, the
// monthly push cap and its reservation, and the broadcast + job written together.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { monthKey } from '../projects/push-usage.ts'
import { getBroadcast, insertGroup, insertSubscriber, insertSubscribers, send, sendBody } from './broadcasts.fixtures.ts'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
})
afterAll(async () => {
  await t.close()
})

async function audienceOf(p: TestProject, target: Record<string, unknown>): Promise<number> {
  const res = await send(t, p, sendBody({ target }))
  expect(res.statusCode, res.body).toBe(202)
  const b = (await getBroadcast(t, p, res.json().broadcast_id)).json()
  expect(b.target).toEqual(target)
  return b.audience
}

async function pushesThisMonth(projectId: string): Promise<number> {
  const result = await t.ctx.db.query<{ pushes: number }>('SELECT pushes FROM push_usage WHERE project_id = $1 AND month = $2', [
    projectId,
    monthKey(new Date()),
  ])
  return Number(result.rows[0]?.pushes ?? 0)
}

describe('POST /v1/send audience', () => {
  it('all: counts only the active subscribers of this project', async () => {
    const p = await t.project()
    const other = await t.project()
    expect(await audienceOf(p, { type: 'all' })).toBe(0)
    await insertSubscribers(t.ctx.db, p.id, 3)
    await insertSubscriber(t.ctx.db, p.id, { status: 'unsubscribed' })
    await insertSubscriber(t.ctx.db, p.id, { status: 'expired' })
    await insertSubscribers(t.ctx.db, other.id, 2)
    expect(await audienceOf(p, { type: 'all' })).toBe(3)
  })

  it('user: counts the active devices with that external_id; none is 202 with audience 0', async () => {
    const p = await t.project()
    const other = await t.project()
    await insertSubscriber(t.ctx.db, p.id, { externalId: 'u1' })
    await insertSubscriber(t.ctx.db, p.id, { externalId: 'u1' })
    await insertSubscriber(t.ctx.db, p.id, { externalId: 'u1', status: 'unsubscribed' })
    await insertSubscriber(t.ctx.db, p.id, { externalId: 'u2' })
    await insertSubscriber(t.ctx.db, other.id, { externalId: 'u1' })
    expect(await audienceOf(p, { type: 'user', external_id: 'u1' })).toBe(2)
    expect(await audienceOf(p, { type: 'user', external_id: 'nobody' })).toBe(0)
  })

  it('group: counts the active members; an empty group is 202 with audience 0', async () => {
    const p = await t.project()
    const active = await insertSubscribers(t.ctx.db, p.id, 2)
    const gone = await insertSubscriber(t.ctx.db, p.id, { status: 'expired' })
    await insertSubscribers(t.ctx.db, p.id, 4) // not members
    const group = await insertGroup(t.ctx.db, p.id, [...active, gone])
    expect(await audienceOf(p, { type: 'group', group_id: group })).toBe(2)
    expect(await audienceOf(p, { type: 'group', group_id: await insertGroup(t.ctx.db, p.id) })).toBe(0)
  })

  it('an unknown group, or another project\'s group, → 404 group_not_found and no broadcast', async () => {
    const p = await t.project()
    const other = await t.project()
    const othersGroup = await insertGroup(t.ctx.db, other.id, await insertSubscribers(t.ctx.db, other.id, 1))
    for (const groupId of [othersGroup, 'grp_00000000000000000000000000', 'nonsense', '']) {
      const res = await send(t, p, sendBody({ target: { type: 'group', group_id: groupId } }))
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('group_not_found')
    }
    const count = await t.ctx.db.query('SELECT id FROM broadcasts WHERE project_id = $1', [p.id])
    expect(count.rows).toEqual([])
  })
})

describe('POST /v1/send monthly push cap', () => {
  it('over the cap → 403 with limit and audience as numbers, in the text and as fields; nothing written', async () => {
    const p = await t.project({ limits: { monthly_pushes: 2 } })
    await insertSubscribers(t.ctx.db, p.id, 3)
    const res = await send(t, p, sendBody())
    expect(res.statusCode).toBe(403)
    const error = res.json().error
    expect(error).toMatchObject({ code: 'monthly_push_limit_reached', limit: 2, audience: 3 })
    expect(error.message).toMatch(/\b2\b/)
    expect(error.message).toMatch(/\b3\b/)
    expect((await t.ctx.db.query('SELECT id FROM broadcasts WHERE project_id = $1', [p.id])).rows).toEqual([])
    expect(await pushesThisMonth(p.id)).toBe(0)
  })

  it('an exact fit is allowed and reserved, so the next send is refused', async () => {
    const p = await t.project({ limits: { monthly_pushes: 3 } })
    await insertSubscribers(t.ctx.db, p.id, 3)
    const first = await send(t, p, sendBody())
    expect(first.statusCode).toBe(202)
    expect(await pushesThisMonth(p.id)).toBe(3)
    const b = await t.ctx.db.query('SELECT audience, reserved, status FROM broadcasts WHERE id = $1', [first.json().broadcast_id])
    expect(b.rows[0]).toEqual({ audience: 3, reserved: 3, status: 'pending' })
    const second = await send(t, p, sendBody())
    expect(second.statusCode).toBe(403)
    expect(second.json().error).toMatchObject({ code: 'monthly_push_limit_reached', limit: 3, audience: 3 })
    expect(await pushesThisMonth(p.id)).toBe(3)
  })

  it('counts what is already used this month, and an empty audience is never refused', async () => {
    const p = await t.project({ limits: { monthly_pushes: 10 } })
    await t.ctx.db.query('INSERT INTO push_usage (project_id, month, pushes) VALUES ($1, $2, 9)', [p.id, monthKey(new Date())])
    await insertSubscribers(t.ctx.db, p.id, 1)
    expect((await send(t, p, sendBody())).statusCode).toBe(202)
    expect(await pushesThisMonth(p.id)).toBe(10)
    expect((await send(t, p, sendBody())).json().error).toMatchObject({ limit: 10, audience: 1 })
    const nobody = await send(t, p, sendBody({ target: { type: 'user', external_id: 'nobody' } }))
    expect(nobody.statusCode).toBe(202)
  })

  it('a scheduled broadcast is checked against the month it fires in, and reserves nothing yet', async () => {
    const p = await t.project({ plan: 'plus', limits: { monthly_pushes: 3 } })
    await insertSubscribers(t.ctx.db, p.id, 3)
    const now = new Date()
    await t.ctx.db.query('INSERT INTO push_usage (project_id, month, pushes) VALUES ($1, $2, 3)', [p.id, monthKey(now)])
    expect((await send(t, p, sendBody())).statusCode).toBe(403)
    // The second day of next month: within 90 days, in another month.
    const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 2)
    const ok = await send(t, p, sendBody({ scheduled_at: nextMonth }))
    expect(ok.statusCode, ok.body).toBe(202)
    const usage = await t.ctx.db.query<{ pushes: number }>('SELECT pushes FROM push_usage WHERE project_id = $1 AND month = $2', [
      p.id,
      monthKey(new Date(nextMonth)),
    ])
    expect(usage.rows).toEqual([])
    await t.ctx.db.query('INSERT INTO push_usage (project_id, month, pushes) VALUES ($1, $2, 1)', [p.id, monthKey(new Date(nextMonth))])
    const full = await send(t, p, sendBody({ scheduled_at: nextMonth }))
    expect(full.statusCode).toBe(403)
    expect(full.json().error).toMatchObject({ code: 'monthly_push_limit_reached', limit: 3, audience: 3 })
  })

  it('the cap is checked before any media is stored', async () => {
    const p = await t.project({ limits: { monthly_pushes: 0 } })
    await insertSubscribers(t.ctx.db, p.id, 1)
    const icon = 'data:image/png;base64,iVBORw0KGgo='
    const res = await send(t, p, sendBody({ notification: { icon } }))
    expect(res.json().error.code).toBe('monthly_push_limit_reached')
  })
})

describe('POST /v1/send writes the broadcast and its job together', () => {
  it('an immediate send → 202 { broadcast_id }, a pending broadcast and one fanout_broadcast job due now', async () => {
    const p = await t.project()
    await insertSubscribers(t.ctx.db, p.id, 2)
    const before = Date.now()
    const res = await send(t, p, sendBody({ ttl: 60, urgency: 'high', topic: 'sale' }))
    expect(res.statusCode).toBe(202)
    expect(res.json()).toEqual({ broadcast_id: expect.stringMatching(/^bdc_[0-9a-z]{26}$/) })
    const id = res.json().broadcast_id
    const jobs = await t.ctx.db.query<{ kind: string; payload: unknown; run_at: Date }>(
      `SELECT kind, payload, run_at FROM jobs WHERE payload->>'broadcast_id' = $1`,
      [id],
    )
    expect(jobs.rows).toHaveLength(1)
    expect(jobs.rows[0]).toMatchObject({ kind: 'fanout_broadcast', payload: { broadcast_id: id } })
    expect(jobs.rows[0].run_at.getTime()).toBeLessThanOrEqual(Date.now() + 1000)
    expect(jobs.rows[0].run_at.getTime()).toBeGreaterThanOrEqual(before - 5000)
    const b = (await getBroadcast(t, p, id)).json()
    expect(b).toMatchObject({ status: 'pending', source: 'api', audience: 2, ttl: 60, urgency: 'high', topic: 'sale' })
  })

  it('a send the cap refuses at reservation leaves neither broadcast nor job', async () => {
    const p = await t.project({ limits: { monthly_pushes: 5 } })
    await insertSubscribers(t.ctx.db, p.id, 5)
    const sends = await Promise.all([send(t, p, sendBody()), send(t, p, sendBody()), send(t, p, sendBody())])
    const accepted = sends.filter((res) => res.statusCode === 202)
    expect(accepted).toHaveLength(1)
    expect(sends.filter((res) => res.statusCode === 403)).toHaveLength(2)
    const rows = await t.ctx.db.query<{ id: string }>('SELECT id FROM broadcasts WHERE project_id = $1', [p.id])
    expect(rows.rows.map((row) => row.id)).toEqual([accepted[0].json().broadcast_id])
    const jobs = await t.ctx.db.query(`SELECT id FROM jobs WHERE payload->>'broadcast_id' = ANY($1)`, [sends.map((s) => s.json().broadcast_id ?? '')])
    expect(jobs.rows).toHaveLength(1)
    expect(await pushesThisMonth(p.id)).toBe(5)
  })
})
