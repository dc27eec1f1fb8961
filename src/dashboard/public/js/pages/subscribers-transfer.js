// The subscribers page's Export and Import (issue 23). Export downloads
// GET /v1/subscribers/export as CSV or NDJSON, with the list's filter: Herald masks the endpoints for
// roles that see them masked (editors, viewers), so the file holds what the
// list shows. Import uploads a file to POST /v1/subscribers/import (owners,
// admins and full keys; Herald refuses anyone else) and shows its answer:
// imported, updated, skipped, and the lines it skipped with the reason.
import { query, upload } from '../api.js'
import { saveFile } from '../save-file.js'
import { field, formatNumber, h, replace } from '../dom.js'
import { errorBox, show, table } from '../ui.js'

const TYPES = { csv: 'text/csv', ndjson: 'application/x-ndjson' }

/** The two cards; `onImported` runs after an import (the list reloads). */
export function transferCards(session, onImported) {
  return [exportCard(session), session.can('subscribers:import') ? importCard(onImported) : null]
}

function exportCard(session) {
  const slot = h('div', { class: 'slot' })
  async function save(format) {
    show(slot, null)
    try {
      // The filter the list above shows (issue 25): the file holds the same subscribers.
      await saveFile(`/v1/subscribers/export${query({ ...(session.subscriberFilter ?? {}), format })}`,
        `subscribers-${session.me?.id ?? 'project'}.${format === 'csv' ? 'csv' : 'ndjson'}`)
    } catch (error) {
      show(slot, errorBox(error))
    }
  }
  return h('section', { class: 'card', 'aria-labelledby': 'export-title' },
    h('h2', { id: 'export-title' }, 'Export'),
    h('p', { class: 'hint' }, 'The subscribers the filter above shows (every one without a filter) with status, external id, groups, tags, how it arrived and timestamps; never the keys of a subscription (the operator\'s export has them). Endpoints are shown in part unless you may erase subscribers. For millions of subscribers use the CLI or the API, which stream.'),
    h('div', { class: 'row-form' },
      h('button', { type: 'button', class: 'secondary', onclick: () => save('csv') }, 'Export CSV'),
      ' ',
      h('button', { type: 'button', class: 'secondary', onclick: () => save('ndjson') }, 'Export NDJSON'),
    ),
    slot,
  )
}

function importCard(onImported) {
  const slot = h('div', { class: 'slot' })
  const result = h('div', { id: 'import-result' })
  const file = h('input', { type: 'file', name: 'file', accept: '.csv,.ndjson,.jsonl,.json,text/csv,application/x-ndjson', required: true })
  const button = h('button', { type: 'submit' }, 'Import')
  const form = h('form', { class: 'row-form', id: 'subscriber-import' },
    field('File (CSV or NDJSON)', file, 'One subscription a line: endpoint and keys (p256dh, auth), optionally external_id, groups, tags, created_at. Importing the same file again changes nothing.'),
    button)
  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    const chosen = file.files[0]
    if (!chosen) return
    show(slot, null)
    replace(result, h('p', { class: 'loading', role: 'status' }, `Importing ${chosen.name}…`))
    button.disabled = true
    try {
      const format = /\.csv$/i.test(chosen.name) || chosen.type === 'text/csv' ? 'csv' : 'ndjson'
      const answer = await upload('/v1/subscribers/import', chosen, TYPES[format])
      replace(result, summary(answer))
      onImported()
    } catch (error) {
      replace(result, '')
      show(slot, errorBox(error))
    } finally {
      button.disabled = false
    }
  })
  return h('section', { class: 'card', 'aria-labelledby': 'import-title' },
    h('h2', { id: 'import-title' }, 'Import'),
    h('p', { class: 'hint' }, 'Bring subscriptions from another provider. Bad lines are skipped and listed; the good ones are imported.'),
    form, slot, result)
}

function summary(answer) {
  const numbers = h('p', { role: 'status', id: 'import-counts' },
    `Imported ${formatNumber(answer.imported)}, updated ${formatNumber(answer.updated)}, skipped ${formatNumber(answer.skipped)}.`)
  if (!answer.errors.length) return numbers
  return h('div', {}, numbers,
    table('Skipped lines', ['Line', 'Field', 'Reason'],
      answer.errors.map((e) => h('tr', {}, h('td', {}, String(e.line)), h('td', { class: 'mono' }, e.field), h('td', {}, e.reason)))),
    answer.skipped > answer.errors.length ? h('p', { class: 'hint' }, `The first ${answer.errors.length} skipped lines are listed.`) : null)
}
