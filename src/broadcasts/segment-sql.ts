// A segment filter as one SQL condition over subscribers `s`, every value a
// bound parameter (never text of the query). Tag leaves use what the GIN
// index on subscribers.tags (migration 0011) answers: containment `@>` for
// eq/ne/in and key existence `?` for exists and in front of each range
// comparison; group leaves probe group_members' primary key. The caller adds
// the project and `status = 'active'`, so `not` is the complement among the
// project's active subscribers.
import type { Comparison, Range, SegmentFilter } from './segment-filter.ts'

const SQL_COMPARISON: Record<Comparison, string> = { gt: '>', gte: '>=', lt: '<', lte: '<=' }

/** Builds the condition, appending its values to `params` (numbered after those already there). */
export function segmentCondition(filter: SegmentFilter, params: unknown[]): string {
  const bind = (value: unknown): string => {
    params.push(value)
    return `$${params.length}`
  }
  const node = (f: SegmentFilter): string => {
    if ('and' in f) return `(${f.and.map(node).join(' AND ')})`
    if ('or' in f) return `(${f.or.map(node).join(' OR ')})`
    // Only an external_id comparison can be NULL (external_id IS NULL); it
    // means "not that user", so NULL counts as false here too, where NOT
    // would otherwise keep it NULL and drop the row from the complement.
    if ('not' in f) return `(NOT COALESCE(${node(f.not)}, false))`
    if ('tag' in f) return tagCondition(f, bind)
    if ('group_id' in f) return `EXISTS (SELECT 1 FROM group_members m WHERE m.group_id = ${bind(f.group_id)} AND m.subscriber_id = s.id)`
    if ('external_id' in f) {
      if (typeof f.external_id === 'string') return `s.external_id = ${bind(f.external_id)}`
      return f.external_id.exists ? 's.external_id IS NOT NULL' : 's.external_id IS NULL'
    }
    if ('created_at' in f) return timeCondition('s.created_at', f.created_at, bind)
    if ('last_seen_at' in f) return timeCondition('s.last_seen_at', f.last_seen_at, bind)
    return `s.push_service = ${bind(f.push_service)}`
  }
  return node(filter)
}

type Bind = (value: unknown) => string
type TagFilter = Extract<SegmentFilter, { tag: string }>

/** Typed: the jsonb 10 is not the jsonb "10", nor true "true" (containment compares JSON values with their types). */
function tagCondition(f: TagFilter, bind: Bind): string {
  const has = (key: string) => `s.tags ? ${bind(key)}`
  const contains = (value: unknown) => `s.tags @> ${bind(JSON.stringify({ [f.tag]: value }))}::jsonb`
  if ('eq' in f) return contains(f.eq)
  // Present with another value: an absent tag is not "not equal".
  if ('ne' in f) return `(${has(f.tag)} AND NOT ${contains(f.ne)})`
  // One containment per value: each is an index scan, OR-ed into one bitmap.
  if ('in' in f) return `(${f.in.map(contains).join(' OR ')})`
  if ('exists' in f) return f.exists ? has(f.tag) : `NOT ${has(f.tag)}`
  // Numbers only: a string "10" never compares. CASE guarantees the cast
  // only runs on a number (AND does not promise an order).
  const value = `(s.tags -> ${bind(f.tag)})`
  const tests = comparisons(f).map(([op, n]) => `${value}::numeric ${SQL_COMPARISON[op]} ${bind(String(n))}::numeric`)
  return `(${has(f.tag)} AND CASE WHEN jsonb_typeof(${value}) = 'number' THEN ${tests.join(' AND ')} ELSE false END)`
}

function comparisons(range: Range): Array<[Comparison, number]> {
  return (Object.keys(SQL_COMPARISON) as Comparison[]).filter((op) => range[op] !== undefined).map((op) => [op, range[op]!])
}

/**
 * The API shows a time as whole Unix ms, truncated (the column keeps
 * microseconds). So that a filter agrees with the value a client read,
 * each bound is moved to the edge of its millisecond: shown ≤ X is stored
 * < X + 1 ms, shown > X is stored ≥ X + 1 ms.
 */
function timeCondition(column: string, range: Range, bind: Bind): string {
  const at = (ms: number) => `(timestamptz 'epoch' + ${bind(String(ms))}::bigint * interval '1 millisecond')`
  const tests = comparisons(range).map(([op, ms]) => {
    switch (op) {
      case 'gte': return `${column} >= ${at(ms)}`
      case 'gt': return `${column} >= ${at(ms + 1)}`
      case 'lt': return `${column} < ${at(ms)}`
      case 'lte': return `${column} < ${at(ms + 1)}`
    }
  })
  return `(${tests.join(' AND ')})`
}
