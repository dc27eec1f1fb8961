// A form that builds a segment filter (docs/segments.md) from tags and
// groups, for owners who would rather not write JSON: conditions joined by
// "all of" (and) or "any of" (or). Each change writes the filter it builds
// into the JSON field (compose-segment.js), which shows it and is what is
// sent: the builder only ever produces JSON one could have typed. Editing the
// JSON by hand is still possible; the builder then starts again from its rows.
import { h } from '../dom.js'

const TAG_OPS = [
  ['eq', 'is'], ['ne', 'is not'], ['in', 'is one of'], ['exists', 'is set'], ['missing', 'is not set'],
  ['gt', '>'], ['gte', '≥'], ['lt', '<'], ['lte', '≤'],
]
const RANGE_OPS = new Set(['gt', 'gte', 'lt', 'lte'])

/**
 * A typed value as the segment language takes it (values are typed: 10 is
 * not "10"): a number, true/false, or "quoted" text stay what they are;
 * anything else is text.
 */
export function typedValue(text) {
  const trimmed = text.trim()
  try {
    const value = JSON.parse(trimmed)
    if (['string', 'number', 'boolean'].includes(typeof value)) return value
  } catch {
    // Not JSON: plain text.
  }
  return trimmed
}

/** One condition's leaf, or null while it is incomplete. */
function leafOf(row) {
  if (row.kind === 'group' || row.kind === 'not_group') {
    if (!row.group) return null
    return row.kind === 'group' ? { group_id: row.group } : { not: { group_id: row.group } }
  }
  const tag = row.tag.trim()
  if (!tag) return null
  if (row.op === 'exists') return { tag, exists: true }
  if (row.op === 'missing') return { tag, exists: false }
  if (row.value.trim() === '') return null
  if (row.op === 'in') return { tag, in: row.value.split(',').map(typedValue).filter((v) => v !== '') }
  if (RANGE_OPS.has(row.op)) {
    const n = Number(row.value.trim())
    return { tag, [row.op]: Number.isFinite(n) ? n : row.value.trim() }
  }
  return { tag, [row.op]: typedValue(row.value) }
}

/** The filter the rows make: one leaf alone, several under and/or; null when no condition is complete. */
export function buildFilter(match, rows) {
  const leaves = rows.map(leafOf).filter(Boolean)
  if (leaves.length === 0) return null
  if (leaves.length === 1) return leaves[0]
  return { [match]: leaves }
}

/** The builder's nodes; onFilter(filter) is called with what it builds on every change. */
export function segmentBuilder(groups, onFilter) {
  const match = h('select', { name: 'segment_match', id: 'segment-match', 'aria-label': 'Subscribers matching' },
    h('option', { value: 'and' }, 'all of these conditions'),
    h('option', { value: 'or' }, 'any of these conditions'))
  const rows = h('div', { class: 'segment-rows', id: 'segment-rows' })
  const readRows = () => [...rows.children].map((row) => ({
    kind: row.querySelector('[name="segment_kind"]').value,
    tag: row.querySelector('[name="segment_tag"]').value,
    op: row.querySelector('[name="segment_op"]').value,
    value: row.querySelector('[name="segment_value"]').value,
    group: row.querySelector('[name="segment_group"]').value,
  }))
  const emit = () => onFilter(buildFilter(match.value, readRows()))

  function conditionRow() {
    const n = rows.children.length + 1
    const kind = h('select', { name: 'segment_kind', 'aria-label': `Condition ${n}: kind` },
      h('option', { value: 'tag' }, 'Tag'),
      h('option', { value: 'group', disabled: groups.length === 0 }, 'In group'),
      h('option', { value: 'not_group', disabled: groups.length === 0 }, 'Not in group'))
    const tag = h('input', { name: 'segment_tag', autocomplete: 'off', placeholder: 'plan', 'aria-label': `Condition ${n}: tag name`, class: 'narrow' })
    const op = h('select', { name: 'segment_op', 'aria-label': `Condition ${n}: test` }, TAG_OPS.map(([value, text]) => h('option', { value }, text)))
    const value = h('input', { name: 'segment_value', autocomplete: 'off', placeholder: 'pro', 'aria-label': `Condition ${n}: value`, class: 'narrow' })
    const group = h('select', { name: 'segment_group', 'aria-label': `Condition ${n}: group` }, groups.map((g) => h('option', { value: g.id }, g.name)))
    const remove = h('button', { type: 'button', class: 'secondary small' }, `Remove condition ${n}`)
    const row = h('div', { class: 'segment-row' }, kind, ' ', tag, ' ', op, ' ', value, ' ', group, ' ', remove)
    const layout = () => {
      const isTag = kind.value === 'tag'
      tag.hidden = !isTag
      op.hidden = !isTag
      value.hidden = !isTag || op.value === 'exists' || op.value === 'missing'
      group.hidden = isTag
    }
    row.addEventListener('change', layout)
    remove.addEventListener('click', () => {
      row.remove()
      emit()
    })
    layout()
    return row
  }

  const add = h('button', { type: 'button', class: 'secondary', id: 'segment-add' }, 'Add a condition')
  add.addEventListener('click', () => {
    rows.append(conditionRow())
    rows.lastElementChild.querySelector('select').focus()
  })
  rows.append(conditionRow())
  const node = h('fieldset', { class: 'segment-builder', id: 'segment-builder' },
    h('legend', {}, 'Build the filter'),
    h('p', { class: 'hint' }, 'Subscribers matching ', match, '. Values are typed: 10 is a number, true a yes/no, "10" (in quotes) text; "is one of" takes values separated by commas.'),
    rows, add)
  // Listening on the builder itself: it runs before the form's own listener, so the form checks the JSON just written.
  node.addEventListener('input', (event) => {
    event.stopPropagation()
    emit()
  })
  node.addEventListener('change', (event) => {
    event.stopPropagation()
    emit()
  })
  return { node }
}
