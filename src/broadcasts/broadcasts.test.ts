// GET /v1/broadcasts, GET /v1/broadcasts/:id, DELETE /v1/broadcasts/:id (decisions.md §3).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { getBroadcast, insertSubscribers, send, sendBody } from './test-fixtures.ts'

const DAY = 24 * 60 * 60 * 1000

let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
})
afterAll(async () => {
  await t.close()
})

async function sendOk(p: TestProject, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await send(t, p, sendBody(extra))
  expect(res.statusCode, res.body).toBe(202)
  return res.json().broadcast_id
}

function list(p: TestProject, query = '') {
  return t.app.inject({ method: 'GET', url: `/v1/broadcasts${query}`, headers: p.auth })
}

function cancel(p: TestProject, id: string) {
  return t.app.inject({ method: 'DELETE', url: `/v1/broadcasts/${id}`, headers: p.auth })
}

describe('GET /v1/broadcasts/:id', () => {
  it('returns the whole record in the decisions.md §3 shape', async () => {
    const p = await t.project({ plan: 'plus' })
    await insertSubscribers(t.ctx.db, p.id, 2)
    const before = Date.now()
    const id = await sendOk(p, {
      target: { type: 'user', external_id: 'u_1' },
      notification: { title: 'Sale', body: 'Today only', icon: 'https://cdn.shop.example/i.png', url: 'https://shop.example/sale' },
      ttl: 3600,
      urgency: 'low',
    })
    const res = await getBroadcast(t, p, id)
    expect(res.statusCode).toBe(200)
    const b = res.json()
    expect(b).toEqual({
      id,
      status: 'pending',
      source: 'api',
      target: { type: 'user', external_id: 'u_1' },
      notification: { title: 'Sale', body: 'Today only', icon: 'https://cdn.shop.example/i.png', image: null, url: 'https://shop.example/sale' },
      ttl: 3600,
      urgency: 'low',
      topic: null,
      audience: 0,
      delivered: 0,
      failed: 0,
      clicked: 0,
      dismissed: 0,
      failure_reason: null,
      scheduled_at: null,
      started_at: null,
      finished_at: null,
      created_at: expect.any(Number),
    })
    expect(b.created_at).toBeGreaterThanOrEqual(before - 5000)
    expect(b.created_at).toBeLessThanOrEqual(Date.now() + 5000)
  })

  it('shows counts, times and failure_reason as the store holds them', async () => {
    const p = await t.project()
    const id = await sendOk(p)
    await t.ctx.db.query(
      `UPDATE broadcasts SET status = 'failed', delivered = 4, failed = 1, clicked = 2, dismissed = 3,
              failure_reason = 'monthly_push_limit_reached', started_at = to_timestamp(1800000000), finished_at = to_timestamp(1800000060)
        WHERE id = $1`,
      [id],
    )
    expect((await getBroadcast(t, p, id)).json()).toMatchObject({
      status: 'failed', delivered: 4, failed: 1, clicked: 2, dismissed: 3,
      failure_reason: 'monthly_push_limit_reached', started_at: 1800000000000, finished_at: 1800000060000,
    })
  })

  it('an unknown id → 404 broadcast_not_found', async () => {
    const p = await t.project()
    for (const id of ['bdc_00000000000000000000000000', 'nope', 'grp_00000000000000000000000000', 'bdc_' + 'x'.repeat(90)]) {
      const res = await getBroadcast(t, p, id)
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('broadcast_not_found')
    }
  })
})

describe('GET /v1/broadcasts', () => {
  it('lists newest first; limit 1 walks every page, the last with next_cursor null', async () => {
    const p = await t.project()
    const ids = [await sendOk(p), await sendOk(p), await sendOk(p)]
    const all = (await list(p)).json()
    expect(all.broadcasts.map((b: { id: string }) => b.id)).toEqual([...ids].reverse())
    expect(all.next_cursor).toBeNull()
    expect(all.broadcasts[0]).toMatchObject({ id: ids[2], status: 'pending', notification: { title: 'Hello' } })

    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const res = await list(p, `?limit=1${cursor ? `&cursor=${cursor}` : ''}`)
      expect(res.statusCode).toBe(200)
      const page = res.json()
      expect(page.broadcasts).toHaveLength(1)
      seen.push(page.broadcasts[0].id)
      cursor = page.next_cursor
      pages++
    } while (cursor && pages < 10)
    expect(seen).toEqual([...ids].reverse())
    expect(pages).toBe(3)
  })

  it('an empty project lists nothing', async () => {
    const p = await t.project()
    expect((await list(p)).json()).toEqual({ broadcasts: [], next_cursor: null })
  })

  it('filters by status', async () => {
    const p = await t.project({ plan: 'plus' })
    const now = await sendOk(p)
    const later = await sendOk(p, { scheduled_at: Date.now() + DAY })
    expect((await list(p, '?status=scheduled')).json().broadcasts.map((b: { id: string }) => b.id)).toEqual([later])
    expect((await list(p, '?status=pending')).json().broadcasts.map((b: { id: string }) => b.id)).toEqual([now])
    expect((await list(p, '?status=sent')).json().broadcasts).toEqual([])
  })

  it('limit 1-100; a bad limit, cursor or status → 400 invalid_request', async () => {
    const p = await t.project()
    expect((await list(p, '?limit=100')).statusCode).toBe(200)
    for (const query of ['?limit=0', '?limit=101', '?limit=x', '?cursor=nonsense', '?cursor=grp_00000000000000000000000000', '?status=done']) {
      const res = await list(p, query)
      expect(res.statusCode, query).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
    }
  })
})

describe('DELETE /v1/broadcasts/:id', () => {
  it('cancels a scheduled broadcast: 200 { ok: true }, then GET shows canceled, a second cancel → 409', async () => {
    const p = await t.project({ plan: 'plus' })
    const id = await sendOk(p, { scheduled_at: Date.now() + DAY })
    const res = await cancel(p, id)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    expect((await getBroadcast(t, p, id)).json().status).toBe('canceled')
    const again = await cancel(p, id)
    expect(again.statusCode).toBe(409)
    expect(again.json().error.code).toBe('broadcast_not_cancelable')
  })

  it('any status but scheduled → 409 broadcast_not_cancelable, unchanged', async () => {
    const p = await t.project()
    const id = await sendOk(p)
    for (const status of ['pending', 'sending', 'sent', 'failed']) {
      await t.ctx.db.query('UPDATE broadcasts SET status = $2 WHERE id = $1', [id, status])
      const res = await cancel(p, id)
      expect(res.statusCode).toBe(409)
      expect(res.json().error.code).toBe('broadcast_not_cancelable')
      expect((await getBroadcast(t, p, id)).json().status).toBe(status)
    }
  })

  it('an unknown id → 404 broadcast_not_found', async () => {
    const p = await t.project()
    for (const id of ['bdc_00000000000000000000000000', 'nope']) {
      const res = await cancel(p, id)
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('broadcast_not_found')
    }
  })
})
