// A broadcast's target in words, for the list, a broadcast's page and the
// compose form: "all", "user alice", "group VIP", and a segment as its filter
// read out ("segment: plan = "pro" and in group VIP"). The filter grammar is
// docs/segments.md; a node this page does not know is shown as its JSON, so
// nothing a filter says is ever hidden.
import { formatTime } from '../dom.js'

const SIGNS = { gt: '>', gte: '≥', lt: '<', lte: '≤' }

const quote = (value) => (typeof value === 'string' ? JSON.stringify(value) : String(value))

function range(subject, r) {
  return Object.keys(SIGNS).filter((op) => op in r).map((op) => `${subject} ${SIGNS[op]} ${subject === 'created' || subject === 'last seen' ? formatTime(r[op]) : r[op]}`).join(' and ')
}

function tagLeaf(f) {
  if ('eq' in f) return `${f.tag} = ${quote(f.eq)}`
  if ('ne' in f) return `${f.tag} ≠ ${quote(f.ne)}`
  if ('in' in f) return `${f.tag} in (${f.in.map(quote).join(', ')})`
  if ('exists' in f) return f.exists ? `has tag ${f.tag}` : `no tag ${f.tag}`
  return range(f.tag, f)
}

/** One filter node in words; `nested` puts an and/or in brackets so the reading keeps the tree's grouping. */
export function filterText(f, groupNames = new Map(), nested = false) {
  if (f === null || typeof f !== 'object') return JSON.stringify(f)
  if (Array.isArray(f.and) || Array.isArray(f.or)) {
    const word = Array.isArray(f.and) ? 'and' : 'or'
    const text = f[word].map((child) => filterText(child, groupNames, true)).join(` ${word} `)
    return nested && f[word].length > 1 ? `(${text})` : text
  }
  if ('not' in f) return `not ${filterText(f.not, groupNames, true)}`
  if ('tag' in f) return tagLeaf(f)
  if ('group_id' in f) return `in group ${groupNames.get(f.group_id) ?? f.group_id}`
  if ('external_id' in f) {
    if (typeof f.external_id === 'string') return `user ${f.external_id}`
    return f.external_id?.exists ? 'has an external id' : 'no external id'
  }
  if ('created_at' in f) return range('created', f.created_at)
  if ('last_seen_at' in f) return range('last seen', f.last_seen_at)
  if ('push_service' in f) return `push service ${f.push_service}`
  return JSON.stringify(f)
}

export function targetText(target, groupNames = new Map()) {
  if (target.type === 'user') return `user ${target.external_id}`
  if (target.type === 'group') return `group ${groupNames.get(target.group_id) ?? target.group_id}`
  if (target.type === 'segment') return `segment: ${filterText(target.filter, groupNames)}`
  if (target.type === 'test_devices') return "test: a member's own test devices"
  return 'all'
}

/** Whether naming the target needs the project's group names. */
export function targetNamesGroups(target) {
  return target.type === 'group' || (target.type === 'segment' && JSON.stringify(target.filter).includes('"group_id"'))
}
