// POST /v1/send: plan gates (image Hobby+, scheduling Plus+), scheduled_at
// bounds, scheduled broadcasts, and the order in which checks answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../../test/support/app.ts'
import { getBroadcast, send, sendBody } from './broadcasts.fixtures.ts'

const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE
const IMAGE = 'https://cdn.shop.example/banner.png'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
})
afterAll(async () => {
  await t.close()
})

async function errorCode(res: { statusCode: number; json(): { error: { code: string } } }) {
  return [res.statusCode, res.json().error?.code]
}

describe('POST /v1/send plan gates', () => {
  it('image on Free → 403 image_requires_upgrade; on Hobby and Plus it is accepted', async () => {
    const free = await t.project({ plan: 'free' })
    expect(await errorCode(await send(t, free, sendBody({ notification: { image: IMAGE } })))).toEqual([403, 'image_requires_upgrade'])
    for (const plan of ['hobby', 'plus'] as const) {
      const p = await t.project({ plan })
      const res = await send(t, p, sendBody({ notification: { image: IMAGE } }))
      expect(res.statusCode, res.body).toBe(202)
      expect((await getBroadcast(t, p, res.json().broadcast_id)).json().notification.image).toBe(IMAGE)
    }
  })

  it('Free may send an icon (every plan may)', async () => {
    const free = await t.project({ plan: 'free' })
    const res = await send(t, free, sendBody({ notification: { icon: 'https://cdn.shop.example/i.png' } }))
    expect(res.statusCode).toBe(202)
  })

  it('scheduled_at on Free and Hobby → 403 scheduling_requires_upgrade; Plus → 202 scheduled', async () => {
    const at = Date.now() + DAY
    for (const plan of ['free', 'hobby'] as const) {
      const p = await t.project({ plan })
      expect(await errorCode(await send(t, p, sendBody({ scheduled_at: at })))).toEqual([403, 'scheduling_requires_upgrade'])
      const list = await t.app.inject({ method: 'GET', url: '/v1/broadcasts', headers: p.auth })
      expect(list.json().broadcasts).toEqual([])
    }
    const plus = await t.project({ plan: 'plus' })
    const res = await send(t, plus, sendBody({ scheduled_at: at }))
    expect(res.statusCode).toBe(202)
    expect(res.json()).toEqual({ broadcast_id: expect.stringMatching(/^bdc_/), scheduled_at: at })
  })
})

describe('POST /v1/send scheduled_at', () => {
  it('in the past or now → 400 invalid_scheduled_at', async () => {
    const p = await t.project({ plan: 'plus' })
    for (const at of [Date.now() - MINUTE, Date.now(), 0, -5]) {
      expect(await errorCode(await send(t, p, sendBody({ scheduled_at: at })))).toEqual([400, 'invalid_scheduled_at'])
    }
  })

  it('90 days ahead less a minute is accepted; 90 days and an hour → 400 invalid_scheduled_at', async () => {
    const p = await t.project({ plan: 'pro' })
    const ok = await send(t, p, sendBody({ scheduled_at: Date.now() + 90 * DAY - MINUTE }))
    expect(ok.statusCode).toBe(202)
    const late = await send(t, p, sendBody({ scheduled_at: Date.now() + 90 * DAY + 60 * MINUTE }))
    expect(await errorCode(late)).toEqual([400, 'invalid_scheduled_at'])
  })

  it('a scheduled broadcast is stored as scheduled with a fire_broadcast job at its time, and nothing reserved', async () => {
    const p = await t.project({ plan: 'plus' })
    const at = Date.now() + 2 * DAY
    const res = await send(t, p, sendBody({ scheduled_at: at }))
    const id = res.json().broadcast_id
    const b = (await getBroadcast(t, p, id)).json()
    expect(b).toMatchObject({ id, status: 'scheduled', scheduled_at: at, started_at: null, finished_at: null })
    const jobs = await t.ctx.db.query<{ kind: string; payload: unknown; run_at: Date }>(
      `SELECT kind, payload, run_at FROM jobs WHERE payload->>'broadcast_id' = $1`,
      [id],
    )
    expect(jobs.rows).toEqual([{ kind: 'fire_broadcast', payload: { broadcast_id: id }, run_at: new Date(at) }])
    const usage = await t.ctx.db.query('SELECT pushes FROM push_usage WHERE project_id = $1', [p.id])
    expect(usage.rows.filter((row) => Number(row.pushes) > 0)).toEqual([])
  })
})

describe('POST /v1/send check order', () => {
  it('schema errors come before plan gates', async () => {
    const free = await t.project({ plan: 'free' })
    const res = await send(t, free, sendBody({ notification: { image: IMAGE }, ttl: -1 }))
    expect(await errorCode(res)).toEqual([400, 'invalid_request'])
  })

  it('a malformed image comes before the image plan gate', async () => {
    const free = await t.project({ plan: 'free' })
    const res = await send(t, free, sendBody({ notification: { image: 'http://cdn.shop.example/b.png' } }))
    expect(await errorCode(res)).toEqual([400, 'invalid_image'])
  })

  it('the image gate comes before the scheduling gate; the scheduling gate before the time check', async () => {
    const free = await t.project({ plan: 'free' })
    const both = await send(t, free, sendBody({ notification: { image: IMAGE }, scheduled_at: Date.now() + DAY }))
    expect(await errorCode(both)).toEqual([403, 'image_requires_upgrade'])
    const hobby = await t.project({ plan: 'hobby' })
    const past = await send(t, hobby, sendBody({ scheduled_at: Date.now() - DAY }))
    expect(await errorCode(past)).toEqual([403, 'scheduling_requires_upgrade'])
  })

  it('scheduled_at is checked before the group', async () => {
    const p = await t.project({ plan: 'plus' })
    const target = { type: 'group', group_id: 'grp_00000000000000000000000000' }
    const past = await send(t, p, sendBody({ target, scheduled_at: Date.now() - DAY }))
    expect(await errorCode(past)).toEqual([400, 'invalid_scheduled_at'])
    expect(await errorCode(await send(t, p, sendBody({ target })))).toEqual([404, 'group_not_found'])
  })
})
