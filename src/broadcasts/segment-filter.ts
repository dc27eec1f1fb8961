// The filter of a segment target (issue 12): a small expression tree of
// and / or / not over leaves on tags, group membership, the user, times and
// the push service. Checked here rather than by a recursive JSON schema: Ajv
// reports a failed recursive anyOf as every alternative failing at every
// level, while this names the one field that is wrong
// (target.filter.and.1.tag, in the dotted form of every Herald issue path),
// and it stops at the depth bound before walking a hostile body any deeper.
import { AppError, type ValidationIssue } from '../platform/errors.ts'
import { PUSH_SERVICES, TAG_KEY_PATTERN, TAG_STRING_MAX, type PushService, type TagValue } from '../subscribers/subscribers.schemas.ts'

/** and/or/not nesting: the root is level 1, a leaf may sit at level 8 at most. */
export const MAX_FILTER_DEPTH = 8
/** Leaves in the whole filter: bounds the SQL a send can make. */
export const MAX_FILTER_LEAVES = 100
/** Values of one `in` list. */
export const MAX_IN_VALUES = 100
/** Unix ms a time leaf may name: 0 to the end of JavaScript's Date range (year 275760), inside PostgreSQL's. */
const MAX_TIME_MS = 8.64e15

export const COMPARISONS = ['gt', 'gte', 'lt', 'lte'] as const
export type Comparison = (typeof COMPARISONS)[number]
export type Range = Partial<Record<Comparison, number>>

export type TagLeaf =
  | { tag: string; eq: TagValue }
  | { tag: string; ne: TagValue }
  | { tag: string; in: TagValue[] }
  | { tag: string; exists: boolean }
  | ({ tag: string } & Range)

export type SegmentFilter =
  | { and: SegmentFilter[] }
  | { or: SegmentFilter[] }
  | { not: SegmentFilter }
  | TagLeaf
  | { group_id: string }
  | { external_id: string | { exists: boolean } }
  | { created_at: Range }
  | { last_seen_at: Range }
  | { push_service: PushService }

/** The keys that say what a node is; a node has exactly one of them. */
const SUBJECTS = ['and', 'or', 'not', 'tag', 'group_id', 'external_id', 'created_at', 'last_seen_at', 'push_service'] as const
const TAG_OPERATORS = ['eq', 'ne', 'in', 'exists', ...COMPARISONS] as const
const TAG_KEY = new RegExp(TAG_KEY_PATTERN)
const EXTERNAL_ID = /^[A-Za-z0-9_-]{1,256}$/
/** Enough to tell the client what to fix. */
const MAX_ISSUES = 10

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

function isTagValue(value: unknown): value is TagValue {
  if (typeof value === 'string') return value.length <= TAG_STRING_MAX
  return Number.isFinite(value) || typeof value === 'boolean'
}

class Checker {
  readonly issues: ValidationIssue[] = []
  leaves = 0
  /** Every group a leaf names, with where, so the send can check they are the project's. */
  readonly groups: Array<{ id: string; path: string }> = []

  fail(path: string, message: string): void {
    if (this.issues.length < MAX_ISSUES) this.issues.push({ path, message })
  }

  node(value: unknown, path: string, depth: number): void {
    if (this.issues.length >= MAX_ISSUES) return
    if (!isObject(value)) return this.fail(path, 'must be an object')
    const subjects = SUBJECTS.filter((key) => key in value)
    if (subjects.length !== 1) {
      return this.fail(path, `must have exactly one of ${SUBJECTS.join(', ')}`)
    }
    const subject = subjects[0]
    if (subject === 'and' || subject === 'or' || subject === 'not') {
      this.only(value, [subject], path)
      if (depth >= MAX_FILTER_DEPTH) return this.fail(`${path}.${subject}`, `nests deeper than ${MAX_FILTER_DEPTH} levels`)
      if (subject === 'not') return this.node(value.not, `${path}.not`, depth + 1)
      const items = value[subject]
      if (!Array.isArray(items) || items.length === 0) return this.fail(`${path}.${subject}`, 'must be a non-empty array')
      items.forEach((item, i) => this.node(item, `${path}.${subject}.${i}`, depth + 1))
      return
    }
    if (++this.leaves > MAX_FILTER_LEAVES) return this.fail(path, `makes the filter hold more than ${MAX_FILTER_LEAVES} leaves`)
    if (subject === 'tag') return this.tag(value, path)
    this.only(value, [subject], path)
    const at = `${path}.${subject}`
    const operand = value[subject]
    switch (subject) {
      case 'group_id':
        if (typeof operand !== 'string' || operand.length === 0 || operand.length > 64) return this.fail(at, 'must be a group id, grp_…')
        this.groups.push({ id: operand, path: at })
        return
      case 'external_id':
        if (typeof operand === 'string') {
          if (!EXTERNAL_ID.test(operand)) this.fail(at, 'must be 1-256 characters of A-Z a-z 0-9 _ -')
          return
        }
        if (!isObject(operand)) return this.fail(at, 'must be an external id, or { exists: true|false }')
        this.only(operand, ['exists'], at)
        if (typeof operand.exists !== 'boolean') this.fail(`${at}.exists`, 'must be a boolean')
        return
      case 'created_at':
      case 'last_seen_at':
        if (!isObject(operand)) return this.fail(at, 'must be an object of gt, gte, lt, lte (Unix ms)')
        this.only(operand, COMPARISONS, at)
        if (!COMPARISONS.some((op) => op in operand)) return this.fail(at, 'must have at least one of gt, gte, lt, lte')
        for (const op of COMPARISONS) {
          const ms = operand[op]
          if (ms !== undefined && !(Number.isInteger(ms) && (ms as number) >= 0 && (ms as number) <= MAX_TIME_MS)) {
            this.fail(`${at}.${op}`, `must be an integer of Unix ms from 0 to ${MAX_TIME_MS}`)
          }
        }
        return
      case 'push_service':
        if (!PUSH_SERVICES.includes(operand as PushService)) this.fail(at, `must be one of: ${PUSH_SERVICES.join(', ')}`)
        return
    }
  }

  /** `{ tag, <operator> }`: one of eq, ne, in, exists, or one or more of gt, gte, lt, lte (a range). */
  private tag(value: Record<string, unknown>, path: string): void {
    this.only(value, ['tag', ...TAG_OPERATORS], path)
    if (typeof value.tag !== 'string' || !TAG_KEY.test(value.tag)) this.fail(`${path}.tag`, 'must be a tag key: 1-64 of A-Z a-z 0-9 _ -')
    const operators = TAG_OPERATORS.filter((op) => op in value)
    const range = operators.filter((op) => (COMPARISONS as readonly string[]).includes(op))
    if (operators.length === 0 || (operators.length > 1 && range.length !== operators.length)) {
      return this.fail(path, 'must have one operator of eq, ne, in, exists, or one or more of gt, gte, lt, lte')
    }
    for (const op of operators) {
      const operand = value[op]
      const at = `${path}.${op}`
      if (op === 'eq' || op === 'ne') {
        if (!isTagValue(operand)) this.fail(at, `must be a string (at most ${TAG_STRING_MAX} characters), a number or a boolean`)
      } else if (op === 'in') {
        if (!Array.isArray(operand) || operand.length === 0 || operand.length > MAX_IN_VALUES) {
          this.fail(at, `must be an array of 1-${MAX_IN_VALUES} values`)
        } else {
          operand.forEach((item, i) => {
            if (!isTagValue(item)) this.fail(`${at}.${i}`, `must be a string (at most ${TAG_STRING_MAX} characters), a number or a boolean`)
          })
        }
      } else if (op === 'exists') {
        if (typeof operand !== 'boolean') this.fail(at, 'must be a boolean')
      } else if (!Number.isFinite(operand)) {
        // Infinity comes from a JSON number past double range (1e400).
        this.fail(at, 'must be a finite number (gt, gte, lt and lte compare numbers only)')
      }
    }
  }

  /** Refuses keys beside the allowed ones, as the rest of send's body does. */
  private only(value: Record<string, unknown>, allowed: readonly string[], path: string): void {
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key)) this.fail(path, `must NOT have additional properties: '${key}'`)
    }
  }
}

export interface CheckedFilter {
  filter: SegmentFilter
  /** The group ids its leaves name, each with its path. */
  groups: Array<{ id: string; path: string }>
}

/** The filter, checked; 400 invalid_request with every issue (up to 10) otherwise. */
export function checkSegmentFilter(value: unknown, path = 'target.filter'): CheckedFilter {
  const checker = new Checker()
  checker.node(value, path, 1)
  if (checker.issues.length > 0) {
    const first = checker.issues[0]
    throw new AppError('invalid_request', `${first.path}: ${first.message}`, { issues: checker.issues })
  }
  return { filter: value as SegmentFilter, groups: checker.groups }
}
