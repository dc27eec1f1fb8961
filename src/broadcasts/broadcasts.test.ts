// GET /v1/broadcasts, GET /v1/broadcasts/:id, DELETE /v1/broadcasts/:id (decisions.md §3).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { getBroadcast, insertSubscribers, send, sendBody } from './broadcasts.fixtures.ts'

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
      clicked_by_action: {},
      dismissed: 0,
      shown: 0,
      funnel: {
        audience: 0, sent: 0, delivered: 0, cannot_report_shown: 0, shown: 0, clicked: 0, clicked_by_action: {}, dismissed: 0,
        rates: { delivered: null, shown: null, click_through: null, click_through_shown: null },
      },
      pending: 0,
      retrying: 0,
      failures: { gone: 0, rejected: 0, unreachable: 0, skipped: 0, capped: 0, vapid_key_mismatch: 0 },
      by_push_service: {
        fcm: { delivered: 0, failed: 0, retrying: 0 },
        mozilla: { delivered: 0, failed: 0, retrying: 0 },
        apple: { delivered: 0, failed: 0, retrying: 0 },
        wns: { delivered: 0, failed: 0, retrying: 0 },
        other: { delivered: 0, failed: 0, retrying: 0 },
      },
      last_error: null,
      next_attempt_at: null,
      capped: 0,
      class: 'marketing',
      on_capped: 'skip',
      throttle_per_minute: null,
      expected_finish_at: null,
      deliver_at_local: null,
      deliver_on: null,
      past: null,
      ignore_quiet_hours: false,
      waiting: [],
      held: 0,
      skipped: 0,
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

function stop(p: TestProject, id: string) {
  return t.app.inject({ method: 'POST', url: `/v1/broadcasts/${id}/stop`, headers: p.auth })
}

async function usage(projectId: string): Promise<number> {
  const result = await t.ctx.db.query<{ n: number }>('SELECT COALESCE(sum(pushes), 0)::int AS n FROM push_usage WHERE project_id = $1', [projectId])
  return result.rows[0].n
}

describe('GET /v1/broadcasts/:id: progress', () => {
  it('shows retrying, failures by reason, the push service breakdown and last_error as the row holds them; pending is the rest of the audience', async () => {
    const p = await t.project()
    const id = await sendOk(p)
    await t.ctx.db.query(
      `UPDATE broadcasts SET status = 'sending', audience = 20, delivered = 7, failed = 4, retrying = 3,
              failed_gone = 2, failed_rejected = 1, failed_unreachable = 1,
              fcm_delivered = 5, fcm_failed = 3, fcm_retrying = 1, apple_delivered = 2, wns_failed = 1, other_retrying = 2,
              last_error_status = 503, last_error_reason = 'server_error', last_error_push_service = 'fcm',
              last_error_at = to_timestamp(1800000000.5), started_at = now()
        WHERE id = $1`,
      [id],
    )
    const b = (await getBroadcast(t, p, id)).json()
    expect(b).toMatchObject({
      audience: 20,
      delivered: 7,
      failed: 4,
      retrying: 3,
      pending: 6,
      failures: { gone: 2, rejected: 1, unreachable: 1, vapid_key_mismatch: 0 },
      by_push_service: {
        fcm: { delivered: 5, failed: 3, retrying: 1 },
        mozilla: { delivered: 0, failed: 0, retrying: 0 },
        apple: { delivered: 2, failed: 0, retrying: 0 },
        wns: { delivered: 0, failed: 1, retrying: 0 },
        other: { delivered: 0, failed: 0, retrying: 2 },
      },
      last_error: { status: 503, reason: 'server_error', push_service: 'fcm', at: 1800000000500 },
      next_attempt_at: null,
    })
    // The list carries the same fields.
    const listed = (await list(p)).json().broadcasts.find((x: { id: string }) => x.id === id)
    expect(listed).toEqual(b)
  })

  it('next_attempt_at is the earliest queued retry of a sending broadcast, null once it is no longer sending', async () => {
    const p = await t.project()
    const id = await sendOk(p)
    await t.ctx.db.query(`UPDATE broadcasts SET status = 'sending', audience = 2, retrying = 2, started_at = now() WHERE id = $1`, [id])
    const soon = 1_900_000_000_000
    for (const at of [soon + 5000, soon]) {
      await t.ctx.db.query(`INSERT INTO jobs (kind, payload, run_at) VALUES ('push_retry', $1, to_timestamp($2 / 1000.0))`, [
        JSON.stringify({ broadcast_id: id, subscriber_ids: ['sub_x'], attempt: 2 }),
        at,
      ])
    }
    expect((await getBroadcast(t, p, id)).json()).toMatchObject({ next_attempt_at: soon, pending: 0, retrying: 2 })
    expect((await list(p)).json().broadcasts[0]).toMatchObject({ id, next_attempt_at: soon })
    await t.ctx.db.query(`UPDATE broadcasts SET status = 'canceled' WHERE id = $1`, [id])
    expect((await getBroadcast(t, p, id)).json().next_attempt_at).toBeNull()
    await t.ctx.db.query(`DELETE FROM jobs WHERE payload ->> 'broadcast_id' = $1`, [id])
  })

  it.each(['canceled', 'failed'] as const)('a %s broadcast shows nothing waiting for a retry: those pushes count as not sent (pending), by push service too', async (status) => {
    const p = await t.project()
    const id = await sendOk(p)
    await t.ctx.db.query(
      `UPDATE broadcasts SET status = $2, audience = 10, delivered = 5, failed = 1, retrying = 3, failed_gone = 1,
              other_delivered = 5, other_failed = 1, fcm_retrying = 1, other_retrying = 2, started_at = now(), finished_at = now()
        WHERE id = $1`,
      [id, status],
    )
    const b = (await getBroadcast(t, p, id)).json()
    expect(b).toMatchObject({ status, audience: 10, delivered: 5, failed: 1, retrying: 0, pending: 4 })
    expect(Object.values(b.by_push_service)).toEqual(Array(5).fill(expect.objectContaining({ retrying: 0 })))
    expect(b.by_push_service.other).toEqual({ delivered: 5, failed: 1, retrying: 0 })
    expect((await list(p)).json().broadcasts.find((x: { id: string }) => x.id === id)).toEqual(b)
  })

  it('a view never shows more pushed than the audience: pending is never negative, the sum is the audience', async () => {
    const p = await t.project()
    const id = await sendOk(p)
    // A stored audience below the pushes (subscribers who joined mid fan-out, before the row was corrected).
    await t.ctx.db.query(`UPDATE broadcasts SET status = 'sending', audience = 3, delivered = 4, retrying = 1 WHERE id = $1`, [id])
    expect((await getBroadcast(t, p, id)).json()).toMatchObject({ audience: 5, delivered: 4, failed: 0, retrying: 1, pending: 0 })
  })
})

describe('POST /v1/broadcasts/:id/stop', () => {
  it('stops a pending broadcast: 200 { ok: true }, canceled with finished_at, its reserved pushes given back to the month', async () => {
    const p = await t.project()
    await insertSubscribers(t.ctx.db, p.id, 3)
    const id = await sendOk(p)
    expect(await usage(p.id)).toBe(3)
    const res = await stop(p, id)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ ok: true })
    const b = (await getBroadcast(t, p, id)).json()
    expect(b).toMatchObject({ status: 'canceled', audience: 3, delivered: 0, failed: 0, retrying: 0, pending: 3, next_attempt_at: null })
    expect(b.finished_at).toEqual(expect.any(Number))
    expect(await usage(p.id)).toBe(0)
    const again = await stop(p, id)
    expect(again.statusCode).toBe(409)
    expect(again.json().error.code).toBe('broadcast_not_stoppable')
  })

  it('stops a sending broadcast, keeping its counts, with nothing left waiting for a retry; the month keeps the pushes attempted (retries waiting included)', async () => {
    const p = await t.project()
    await insertSubscribers(t.ctx.db, p.id, 10)
    const id = await sendOk(p)
    await t.ctx.db.query(
      `UPDATE broadcasts SET status = 'sending', started_at = now(), audience = 10, delivered = 4, failed = 1, failed_gone = 1, retrying = 2 WHERE id = $1`,
      [id],
    )
    expect((await stop(p, id)).statusCode).toBe(200)
    expect((await getBroadcast(t, p, id)).json()).toMatchObject({
      // The two pushes that were waiting for a retry will not be sent: pending, not retrying (issue 22).
      status: 'canceled', audience: 10, delivered: 4, failed: 1, retrying: 0, pending: 5, failures: { gone: 1, rejected: 0, unreachable: 0, skipped: 0, capped: 0, vapid_key_mismatch: 0 },
    })
    expect(await usage(p.id)).toBe(7)
  })

  it('stops a scheduled broadcast like DELETE does: canceled, finished_at null', async () => {
    const p = await t.project({ plan: 'plus' })
    const id = await sendOk(p, { scheduled_at: Date.now() + DAY })
    expect((await stop(p, id)).statusCode).toBe(200)
    expect((await getBroadcast(t, p, id)).json()).toMatchObject({ status: 'canceled', finished_at: null })
  })

  it('a broadcast already over (sent, failed, canceled) → 409 broadcast_not_stoppable, unchanged', async () => {
    const p = await t.project()
    const id = await sendOk(p)
    for (const status of ['sent', 'failed', 'canceled']) {
      await t.ctx.db.query(`UPDATE broadcasts SET status = $2, delivered = 1, finished_at = to_timestamp(1800000000) WHERE id = $1`, [id, status])
      const before = (await getBroadcast(t, p, id)).json()
      const res = await stop(p, id)
      expect(res.statusCode, status).toBe(409)
      expect(res.json().error.code).toBe('broadcast_not_stoppable')
      expect((await getBroadcast(t, p, id)).json()).toEqual(before)
    }
  })

  it("an unknown id, a malformed one or another project's → 404 broadcast_not_found, and the other project's broadcast goes on", async () => {
    const p = await t.project()
    const other = await t.project()
    const theirs = await sendOk(other)
    for (const id of ['bdc_00000000000000000000000000', 'nope', theirs]) {
      const res = await stop(p, id)
      expect(res.statusCode, id).toBe(404)
      expect(res.json().error.code).toBe('broadcast_not_found')
    }
    expect((await getBroadcast(t, other, theirs)).json().status).toBe('pending')
  })

  it('DELETE keeps its meaning: a pending broadcast is not canceled by it', async () => {
    const p = await t.project()
    const id = await sendOk(p)
    expect((await cancel(p, id)).statusCode).toBe(409)
    expect((await getBroadcast(t, p, id)).json().status).toBe('pending')
  })
})
