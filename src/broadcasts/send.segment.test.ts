// Segment targets (issue 12): on a data set built to catch off-by-ones, each
// filter's audience is exactly the matching active subscribers of the
// project: streamed (the fan-out's keyset pages), counted (the send's
// estimate and cap check) and counted by push service (the dry run).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { newId } from '../platform/ids.ts'
import { countAudience, nextAudience } from './audience.store.ts'
import { countAudienceByPushService } from './audience-breakdown.store.ts'
import { getBroadcast, insertGroup, send, sendBody } from './broadcasts.fixtures.ts'
import type { SegmentFilter } from './segment-filter.ts'

let t: TestApp
let p: TestProject
/** Label → subscriber id, for the project under test. */
const id: Record<string, string> = {}
let group: string
/** A whole millisecond; `n10` is created half a millisecond after it. */
const T = 1_700_000_000_000

interface Row {
  tags?: Record<string, unknown>
  status?: 'active' | 'unsubscribed' | 'expired'
  externalId?: string
  host?: string
  /** ISO time with microseconds, for created_at and last_seen_at. */
  at?: string
}

async function insert(projectId: string, row: Row): Promise<string> {
  const sid = newId('sub')
  await t.ctx.db.query(
    `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, external_id, status, tags, created_at, last_seen_at)
     VALUES ($1, $2, $3, 'p256dh', 'auth', $4, $5, $6::jsonb, COALESCE($7::timestamptz, now()), COALESCE($7::timestamptz, now()))`,
    [sid, projectId, `https://${row.host ?? 'fcm.googleapis.com/fcm/send'}/${sid}`, row.externalId ?? null, row.status ?? 'active', JSON.stringify(row.tags ?? {}), row.at ?? null],
  )
  return sid
}

/** T + offset ms, with extra microseconds. */
const iso = (offsetMs: number, micros = 0) => new Date(T + offsetMs).toISOString().replace('Z', `${String(micros).padStart(3, '0')}Z`)

beforeAll(async () => {
  t = await createTestApp()
  p = await t.project({ plan: 'plus' })
  const other = await t.project()
  const rows: Record<string, Row> = {
    n9: { tags: { age: 9 }, at: iso(-1) },
    n10: { tags: { age: 10 }, at: iso(0, 500) },
    n10half: { tags: { age: 10.5 } },
    n11: { tags: { age: 11 }, at: iso(1) },
    s10: { tags: { age: '10' } },
    bTrue: { tags: { vip: true, age: true } },
    sTrue: { tags: { vip: 'true' } },
    bFalse: { tags: { vip: false } },
    bare: {},
    alice: { tags: { plan: 'pro' }, externalId: 'alice' },
    bob: { tags: { plan: 'free' }, externalId: 'bob' },
    moz: { tags: { plan: 'pro' }, host: 'updates.push.services.mozilla.com/wpush/v2' },
    // Never in an audience: not active.
    left10: { tags: { age: 10, plan: 'pro' }, status: 'unsubscribed', externalId: 'alice' },
    expiredPro: { tags: { plan: 'pro' }, status: 'expired' },
  }
  for (const [label, row] of Object.entries(rows)) id[label] = await insert(p.id, row)
  group = await insertGroup(t.ctx.db, p.id, [id.n9, id.n10, id.left10])
  // Another project's subscribers match every filter below and must never count.
  await insert(other.id, { tags: { age: 10, plan: 'pro', vip: true } })
  await insert(other.id, { tags: {}, externalId: 'alice' })
})
afterAll(async () => {
  await t.close()
})

const ACTIVE = ['n9', 'n10', 'n10half', 'n11', 's10', 'bTrue', 'sTrue', 'bFalse', 'bare', 'alice', 'bob', 'moz']
const except = (...labels: string[]) => ACTIVE.filter((label) => !labels.includes(label))

/** The audience as fan-out streams it (keyset pages of 2), checked against the counts. */
async function audience(filter: SegmentFilter): Promise<string[]> {
  const target = { type: 'segment' as const, filter }
  const streamed: string[] = []
  for (let after: string | null = null; ;) {
    const page: string[] = (await nextAudience(t.ctx.db, p.id, target, after, 2)).map((r) => r.id)
    if (page.length === 0) break
    streamed.push(...page)
    after = page[page.length - 1]
  }
  expect(await countAudience(t.ctx.db, p.id, target)).toBe(streamed.length)
  const byService = await countAudienceByPushService(t.ctx.db, p.id, target)
  expect(Object.values(byService).reduce((a, b) => a + b, 0)).toBe(streamed.length)
  const label = new Map(Object.entries(id).map(([k, v]) => [v, k]))
  return streamed.map((sid) => label.get(sid) ?? sid).sort()
}

describe('segment audiences', () => {
  it.each<[string, SegmentFilter, string[]]>([
    ['eq a number', { tag: 'age', eq: 10 }, ['n10']],
    ['eq the same digits as a string', { tag: 'age', eq: '10' }, ['s10']],
    ['eq true (not "true")', { tag: 'vip', eq: true }, ['bTrue']],
    ['eq "true" (not true)', { tag: 'vip', eq: 'true' }, ['sTrue']],
    ['eq false', { tag: 'vip', eq: false }, ['bFalse']],
    ['gt: the bound is out', { tag: 'age', gt: 10 }, ['n10half', 'n11']],
    ['gte: the bound is in', { tag: 'age', gte: 10 }, ['n10', 'n10half', 'n11']],
    ['lt: the bound is out', { tag: 'age', lt: 10 }, ['n9']],
    ['lte: the bound is in', { tag: 'age', lte: 10 }, ['n9', 'n10']],
    ['a range of two', { tag: 'age', gt: 9, lt: 11 }, ['n10', 'n10half']],
    ['a fractional bound', { tag: 'age', gte: 10.5, lte: 10.5 }, ['n10half']],
    ['ne: present with another value, of any type; absent is not ne', { tag: 'age', ne: 10 }, ['n9', 'n10half', 'n11', 's10', 'bTrue']],
    ['in: each value typed', { tag: 'age', in: [9, '10', true] }, ['n9', 's10', 'bTrue']],
    ['exists', { tag: 'vip', exists: true }, ['bTrue', 'sTrue', 'bFalse']],
    ['exists false', { tag: 'age', exists: false }, ['sTrue', 'bFalse', 'bare', 'alice', 'bob', 'moz']],
    ['a tag no one has', { tag: 'nope', eq: 1 }, []],
    ['not: the complement among active subscribers only', { not: { tag: 'age', eq: 10 } }, except('n10')],
    ['not over external_id keeps those without one', { not: { external_id: 'alice' } }, except('alice')],
    ['external_id', { external_id: 'alice' }, ['alice']],
    ['external_id exists', { external_id: { exists: true } }, ['alice', 'bob']],
    ['external_id exists false', { external_id: { exists: false } }, except('alice', 'bob')],
    ['push_service', { push_service: 'mozilla' }, ['moz']],
    ['push_service fcm', { push_service: 'fcm' }, except('moz')],
    ['not not', { not: { not: { tag: 'plan', eq: 'pro' } } }, ['alice', 'moz']],
    ['and', { and: [{ tag: 'plan', eq: 'pro' }, { push_service: 'fcm' }] }, ['alice']],
    ['or', { or: [{ tag: 'plan', eq: 'free' }, { tag: 'age', lt: 10 }] }, ['bob', 'n9']],
    [
      'nested and/or/not',
      { or: [{ tag: 'plan', eq: 'pro' }, { and: [{ tag: 'age', gte: 10 }, { not: { tag: 'age', gt: 10 } }] }] },
      ['alice', 'moz', 'n10'],
    ],
    ['and with an empty side is empty', { and: [{ tag: 'plan', eq: 'pro' }, { tag: 'age', exists: true }] }, []],
  ])('%s', async (_name, filter, expected) => {
    expect(await audience(filter)).toEqual([...expected].sort())
  })

  it('group_id: the active members; not: the active non-members', async () => {
    expect(await audience({ group_id: group })).toEqual(['n10', 'n9'])
    expect(await audience({ not: { group_id: group } })).toEqual(except('n9', 'n10').sort())
  })

  it('created_at compares the Unix ms the API shows: a row at T + 0.5 ms is T', async () => {
    const shown = (await t.app.inject({ method: 'GET', url: `/v1/subscribers/${id.n10}`, headers: p.auth })).json()
    expect(shown.created_at).toBe(T)
    expect(await audience({ created_at: { lte: T } })).toEqual(['n10', 'n9'])
    expect(await audience({ created_at: { lt: T } })).toEqual(['n9'])
    expect(await audience({ created_at: { gte: T, lte: T } })).toEqual(['n10'])
    expect(await audience({ created_at: { gt: T, lt: T + 2 } })).toEqual(['n11'])
    expect(await audience({ created_at: { gt: T } })).toEqual(except('n9', 'n10').sort())
    expect(await audience({ last_seen_at: { gte: T + 1, lte: T + 1 } })).toEqual(['n11'])
    expect(await audience({ last_seen_at: { gte: Date.now() - 3_600_000 } })).toEqual(except('n9', 'n10', 'n11').sort())
  })
})

describe('POST /v1/send with a segment', () => {
  const filter: SegmentFilter = { or: [{ tag: 'plan', eq: 'pro' }, { and: [{ tag: 'age', gte: 10 }, { not: { tag: 'age', gt: 10 } }] }] }

  it('dry_run counts it by push service; the send stores it and returns it as given', async () => {
    const dry = await send(t, p, sendBody({ target: { type: 'segment', filter }, dry_run: true }))
    expect(dry.statusCode, dry.body).toBe(200)
    expect(dry.json()).toMatchObject({ audience: 3, by_push_service: { fcm: 2, mozilla: 1, apple: 0, wns: 0, other: 0 } })
    const res = await send(t, p, sendBody({ target: { type: 'segment', filter } }))
    expect(res.statusCode, res.body).toBe(202)
    const broadcast = (await getBroadcast(t, p, res.json().broadcast_id)).json()
    expect(broadcast.target).toEqual({ type: 'segment', filter })
    expect(broadcast.audience).toBe(3)
    const listed = (await t.app.inject({ method: 'GET', url: '/v1/broadcasts', headers: p.auth })).json().broadcasts
    expect(listed.find((b: { id: string }) => b.id === broadcast.id).target).toEqual({ type: 'segment', filter })
  })

  it('counts against the monthly cap with its own audience', async () => {
    const small = await t.project({ limits: { monthly_pushes: 1 } })
    await insert(small.id, { tags: { plan: 'pro' } })
    await insert(small.id, { tags: { plan: 'pro' } })
    await insert(small.id, { tags: { plan: 'free' } })
    const over = await send(t, small, sendBody({ target: { type: 'segment', filter: { tag: 'plan', eq: 'pro' } } }))
    expect(over.statusCode).toBe(403)
    expect(over.json().error).toMatchObject({ code: 'monthly_push_limit_reached', limit: 1, audience: 2 })
    const fits = await send(t, small, sendBody({ target: { type: 'segment', filter: { tag: 'plan', eq: 'free' } } }))
    expect(fits.statusCode, fits.body).toBe(202)
  })

  it("a group leaf naming another project's group, or none, is 404 group_not_found naming the path", async () => {
    const other = await t.project()
    const theirs = await insertGroup(t.ctx.db, other.id)
    for (const groupId of [theirs, 'grp_00000000000000000000000000', 'nonsense']) {
      const res = await send(t, p, sendBody({ target: { type: 'segment', filter: { and: [{ push_service: 'fcm' }, { not: { group_id: groupId } }] } } }))
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('group_not_found')
      expect(res.json().error.message).toContain('target.filter.and.1.not.group_id')
    }
  })
})
