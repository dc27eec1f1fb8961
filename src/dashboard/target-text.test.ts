// A broadcast's target in words (dashboard pages/target-text.js, issue 22):
// every node of the segment grammar (docs/segments.md) is read out, nested
// and/or keep their grouping, groups go by name, and a node the page does not
// know is shown as its JSON rather than dropped. The pages use it in the
// broadcast list, a broadcast's page and under Compose's filter field
// (dashboard-compose.browser.test.ts checks them there).
import { describe, expect, it } from 'vitest'
// @ts-expect-error: a plain ES module of the dashboard, without type declarations.
import { filterText, targetText, targetNamesGroups } from './public/js/pages/target-text.js'
import type { SegmentFilter } from '../broadcasts/segment-filter.ts'

const groups = new Map([['grp_vip', 'VIP']])
const read = (filter: SegmentFilter) => filterText(filter, groups)

describe('a target in words', () => {
  it('names all, a user, a group by name (or id when unknown) and a segment by its filter', () => {
    expect(targetText({ type: 'all' })).toBe('all')
    expect(targetText({ type: 'user', external_id: 'alice' })).toBe('user alice')
    expect(targetText({ type: 'group', group_id: 'grp_vip' }, groups)).toBe('group VIP')
    expect(targetText({ type: 'group', group_id: 'grp_gone' }, groups)).toBe('group grp_gone')
    expect(targetText({ type: 'segment', filter: { tag: 'plan', eq: 'pro' } })).toBe('segment: plan = "pro"')
  })

  it('reads every leaf of the grammar', () => {
    expect(read({ tag: 'plan', eq: 'pro' })).toBe('plan = "pro"')
    expect(read({ tag: 'age', eq: 10 })).toBe('age = 10')
    expect(read({ tag: 'beta', ne: true })).toBe('beta ≠ true')
    expect(read({ tag: 'plan', in: ['pro', 'max', 3] })).toBe('plan in ("pro", "max", 3)')
    expect(read({ tag: 'plan', exists: true })).toBe('has tag plan')
    expect(read({ tag: 'plan', exists: false })).toBe('no tag plan')
    expect(read({ tag: 'age', gte: 18, lt: 65 })).toBe('age ≥ 18 and age < 65')
    expect(read({ tag: 'score', gt: 1, lte: 2 })).toBe('score > 1 and score ≤ 2')
    expect(read({ group_id: 'grp_vip' })).toBe('in group VIP')
    expect(read({ external_id: 'alice' })).toBe('user alice')
    expect(read({ external_id: { exists: true } })).toBe('has an external id')
    expect(read({ external_id: { exists: false } })).toBe('no external id')
    expect(read({ push_service: 'fcm' })).toBe('push service fcm')
    // Times as local dates and times with their zone, as the rest of the dashboard writes them.
    const at = Date.UTC(2026, 0, 1, 12, 0)
    const local = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short' }).format(new Date(at))
    expect(read({ created_at: { gte: at } })).toBe(`created ≥ ${local}`)
    expect(read({ last_seen_at: { lt: at } })).toBe(`last seen < ${local}`)
  })

  it('keeps the grouping of nested and/or, and shows an unknown node as its JSON', () => {
    expect(read({ and: [{ tag: 'a', eq: 1 }, { or: [{ tag: 'b', eq: 2 }, { tag: 'c', eq: 3 }] }] })).toBe('a = 1 and (b = 2 or c = 3)')
    expect(read({ or: [{ and: [{ tag: 'a', eq: 1 }, { tag: 'b', eq: 2 }] }, { not: { group_id: 'grp_vip' } }] })).toBe('(a = 1 and b = 2) or not in group VIP')
    expect(read({ not: { or: [{ tag: 'a', eq: 1 }, { tag: 'b', eq: 2 }] } })).toBe('not (a = 1 or b = 2)')
    expect(read({ and: [{ tag: 'a', eq: 1 }] })).toBe('a = 1')
    expect(read({ someday: 'maybe' } as unknown as SegmentFilter)).toBe('{"someday":"maybe"}')
  })

  it('knows when group names are needed', () => {
    expect(targetNamesGroups({ type: 'group', group_id: 'grp_vip' })).toBe(true)
    expect(targetNamesGroups({ type: 'segment', filter: { not: { group_id: 'grp_vip' } } })).toBe(true)
    expect(targetNamesGroups({ type: 'segment', filter: { tag: 'plan', eq: 'pro' } })).toBe(false)
    expect(targetNamesGroups({ type: 'all' })).toBe(false)
  })
})
