// The broadcasts page's Export (issue 25): GET /v1/broadcasts/export as CSV,
// with a status, a source and a date range (the browser's days: from the
// first day's midnight to the end of the last day), every broadcast without.
import { query } from '../api.js'
import { field, h } from '../dom.js'
import { onSubmit } from '../ui.js'
import { saveFile } from '../save-file.js'

/** Unix ms of the local midnight starting the day (after: the day after), from an <input type="date"> value; undefined when empty. */
function midnight(value, after = 0) {
  if (!value) return undefined
  const day = new Date(`${value}T00:00:00`)
  day.setDate(day.getDate() + after)
  return day.getTime()
}

export function exportCard(session) {
  const slot = h('div', { class: 'slot' })
  const status = h('select', { name: 'status' },
    h('option', { value: '' }, 'Any status'),
    ['scheduled', 'pending', 'sending', 'sent', 'failed', 'canceled'].map((s) => h('option', { value: s }, s)))
  const source = h('select', { name: 'source' },
    h('option', { value: '' }, 'API and dashboard'),
    h('option', { value: 'api' }, 'API'),
    h('option', { value: 'dashboard' }, 'Dashboard'))
  const from = h('input', { type: 'date', name: 'from' })
  const to = h('input', { type: 'date', name: 'to' })
  const form = h('form', { class: 'filters', id: 'broadcast-export' },
    field('Status', status),
    field('Source', source),
    field('From', from, 'Created on or after this day.'),
    field('To', to, 'Created on or before this day.'),
    h('div', { class: 'field' }, h('button', { type: 'submit', class: 'secondary' }, 'Export CSV')),
  )
  // onSubmit shows Herald's answer to a bad range (to before from) in the slot.
  onSubmit(form, slot, () => saveFile(
    `/v1/broadcasts/export${query({ format: 'csv', status: status.value, source: source.value, from: midnight(from.value), to: midnight(to.value, 1) })}`,
    `broadcasts-${session.me?.id ?? 'project'}.csv`))
  return h('section', { class: 'card', 'aria-labelledby': 'broadcast-export-title' },
    h('h2', { id: 'broadcast-export-title' }, 'Export'),
    h('p', { class: 'hint' }, 'The broadcasts with their counts (audience, sent, delivered, shown, failed, clicked, dismissed) as CSV for a spreadsheet, newest first.'),
    form, slot)
}
