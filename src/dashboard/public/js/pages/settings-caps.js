// Settings: the project's frequency caps (docs/frequency-caps.md), edited as
// rows of "at most N pushes per window" and saved with PATCH /v1/me. Owners,
// admins and full keys edit them; other roles see them read-only.
import { patch } from '../api.js'
import { h, replace } from '../dom.js'
import { errorBox, onSubmit, show } from '../ui.js'

/** The windows Herald accepts (frequency-caps/caps.schemas.ts), in words. */
const WINDOWS = [
  ['1h', 'hour'], ['2h', '2 hours'], ['3h', '3 hours'], ['6h', '6 hours'], ['12h', '12 hours'],
  ['1d', 'day'], ['2d', '2 days'], ['3d', '3 days'], ['7d', 'week (7 days)'], ['14d', '14 days'], ['30d', '30 days'],
]
const MAX_RULES = 5

/** "2 a day, 5 a week (7 days)". */
export function capsText(caps) {
  if (!caps || caps.length === 0) return 'No caps: every subscriber gets every push.'
  const words = new Map(WINDOWS)
  return `At most ${caps.map((c) => `${c.max} per ${words.get(c.per) ?? c.per}`).join(', and ')} per subscriber.`
}

export function capsSection(session) {
  const slot = h('div', { class: 'slot', id: 'caps-message' })
  const current = h('p', { id: 'caps-current' })
  const intro = h('p', {}, 'Caps how many pushes each subscriber gets from this project, across every broadcast, in rolling windows. ' +
    'Transactional sends are never capped but count. Over a cap, a marketing send skips the subscriber or waits, as it says.')
  const title = h('h2', { id: 'caps-title' }, 'Frequency caps')
  const section = h('section', { class: 'card', 'aria-labelledby': 'caps-title', id: 'caps' }, title, intro, current, slot)
  current.textContent = capsText(session.me.frequency_caps)
  if (!session.can('project:write')) return section

  const rows = h('div', { class: 'caps-rows', id: 'caps-rows' })
  function ruleRow(rule = { max: 2, per: '1d' }) {
    const n = rows.children.length + 1
    const max = h('input', { name: 'cap_max', type: 'number', min: '1', max: '1000', step: '1', value: String(rule.max), 'aria-label': `Rule ${n}: at most`, class: 'narrow' })
    const per = h('select', { name: 'cap_per', 'aria-label': `Rule ${n}: per` }, WINDOWS.map(([value, text]) => h('option', { value, selected: value === rule.per }, text)))
    const row = h('div', { class: 'cap-rule' }, 'At most ', max, ' pushes per ', per, ' ',
      h('button', { type: 'button', class: 'secondary small', onclick: () => {
        row.remove()
        addButton.disabled = rows.children.length >= MAX_RULES
      } }, `Remove rule ${n}`))
    return row
  }
  const addButton = h('button', { type: 'button', class: 'secondary', id: 'caps-add', onclick: () => {
    rows.append(ruleRow())
    addButton.disabled = rows.children.length >= MAX_RULES
  } }, 'Add a rule')
  for (const rule of session.me.frequency_caps ?? []) rows.append(ruleRow(rule))
  addButton.disabled = rows.children.length >= MAX_RULES

  const form = h('form', { class: 'inline-form', id: 'caps-form', novalidate: true }, rows, addButton, ' ', h('button', { type: 'submit' }, 'Save caps'))
  onSubmit(form, slot, async () => {
    const caps = [...rows.children].map((row) => ({
      max: Number(row.querySelector('[name="cap_max"]').value),
      per: row.querySelector('[name="cap_per"]').value,
    }))
    show(slot, null)
    try {
      session.me = (await patch('/v1/me', { frequency_caps: caps })).project
    } catch (error) {
      show(slot, errorBox(error))
      return
    }
    session.go('#/settings', caps.length ? 'Frequency caps saved.' : 'Frequency caps turned off.')
  })
  replace(section, title, intro, current, slot, form)
  return section
}
