// The compose form's segment filter (target.type "segment"): built with a
// form of tag and group conditions (segment-builder.js) or typed as JSON
// (docs/segments.md), and read back in words under the field as it is typed, so
// the owner sees whom it names. The grammar is checked by the dry run, whose
// refusal names the wrong node and lands on this field.
import { h } from '../dom.js'
import { checkedField } from './compose-fields.js'
import { parseFilter } from './compose-limits.js'
import { filterText } from './target-text.js'
import { segmentBuilder } from './segment-builder.js'

export function segmentInput(groupNames, groups = []) {
  const control = h('textarea', { name: 'filter', rows: '4', class: 'mono', spellcheck: 'false', autocomplete: 'off', placeholder: '{"tag": "plan", "eq": "pro"}' })
  const field = checkedField('Filter (JSON)', control, { hint: 'Which subscribers get it: an expression of tags, groups, users, times and push services (docs/segments.md).' })
  const reading = h('p', { class: 'hint', id: 'compose-filter-text' })
  field.node.append(reading)
  // The builder writes what it builds into the JSON field, then the form checks and reads it back (its input event).
  const builder = segmentBuilder(groups, (filter) => {
    control.value = filter ? JSON.stringify(filter, null, 1).replace(/\n\s*/g, ' ') : ''
    control.form?.dispatchEvent(new Event('input'))
  })
  field.node.prepend(builder.node)

  return {
    field,
    /** Checks the JSON into the field and reads it back; returns the error or null. */
    check() {
      const { filter, error } = parseFilter(control.value)
      field.setError(error ?? null)
      reading.textContent = filter ? `Sends to subscribers where: ${filterText(filter, groupNames)}` : ''
      return error ?? null
    },
    value: () => parseFilter(control.value).filter,
  }
}
