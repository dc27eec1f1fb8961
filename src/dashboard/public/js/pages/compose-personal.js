// Compose's templates, variables and languages (issue 24, docs/templates.md):
// pick a saved template (its fields fill the form) or save the form as one;
// the send's data (key=value lines), what a missing variable or a field too
// long does; versions by language. What each sample subscriber would get, and
// the share of the audience with a value for each variable, come from the dry
// run and are shown in the confirmation (personalizationSummary).
import { post } from '../api.js'
import { field, formatNumber, h } from '../dom.js'
import { errorBox, okBox, show, table } from '../ui.js'
import { checkedField } from './compose-fields.js'

/** "key=value" lines → data; numbers and true/false stay typed. Returns [data, errors]. */
function parseData(text) {
  const data = {}
  const errors = []
  text.split('\n').map((line) => line.trim()).filter(Boolean).forEach((line, i) => {
    const eq = line.indexOf('=')
    const key = eq < 0 ? '' : line.slice(0, eq).trim()
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(key)) {
      errors.push(`Data, line ${i + 1}: write key=value, the key of A-Z a-z 0-9 _ - only.`)
      return
    }
    const raw = line.slice(eq + 1).trim()
    data[key] = raw === 'true' ? true : raw === 'false' ? false : raw !== '' && Number.isFinite(Number(raw)) ? Number(raw) : raw
  })
  return [data, errors]
}

/** "variable=value" lines → defaults ({ "tags.first_name": "there" }), values as text. Returns [defaults, errors]. */
function parseDefaults(text) {
  const defaults = {}
  const errors = []
  text.split('\n').map((line) => line.trim()).filter(Boolean).forEach((line, i) => {
    const eq = line.indexOf('=')
    const path = eq < 0 ? '' : line.slice(0, eq).trim()
    if (!/^(tags\.[A-Za-z0-9_-]{1,64}|data\.[A-Za-z0-9_-]{1,64}|external_id|locale)$/.test(path)) {
      errors.push(`Defaults, line ${i + 1}: write variable=value, the variable as tags.name, data.name, external_id or locale.`)
      return
    }
    defaults[path] = line.slice(eq + 1).trim()
  })
  return [defaults, errors]
}

function languageRow(onRemove, saved = {}) {
  const n = Math.random().toString(36).slice(2, 8)
  const locale = h('input', { name: `lang_${n}_locale`, autocomplete: 'off', placeholder: 'fr, pt-BR…', value: saved.locale ?? '', 'aria-label': 'Language (BCP 47 tag)' })
  const title = h('input', { name: `lang_${n}_title`, autocomplete: 'off', value: saved.title ?? '', 'aria-label': 'Title in this language' })
  const body = h('textarea', { name: `lang_${n}_body`, rows: '2', 'aria-label': 'Body in this language' }, saved.body ?? '')
  const node = h('div', { class: 'language-row' },
    field('Language', locale), field('Its title', title), field('Its body', body),
    h('button', { type: 'button', class: 'secondary', onclick: () => onRemove(row) }, 'Remove language'))
  const row = { node, value: () => ({ locale: locale.value.trim(), title: title.value, body: body.value }) }
  return row
}

/**
 * templates: GET /v1/templates's list. canSave: whether the member may save
 * templates. onUse(template): fills the form's notification fields.
 * current(): the notification as the form holds it (for "Save as template").
 */
export function personalInputs({ templates, canSave, onUse, current, onChange }) {
  const slot = h('div', { class: 'slot', id: 'template-message' })
  const picker = h('select', { name: 'template_id', id: 'compose-template' },
    h('option', { value: '' }, templates.length ? 'Pick a template…' : 'No saved templates yet'),
    templates.map((t) => h('option', { value: t.id }, t.name)))
  const use = h('button', { type: 'button', class: 'secondary', id: 'use-template' }, 'Use template')
  const saveName = h('input', { name: 'template_name', id: 'compose-template-name', autocomplete: 'off', placeholder: 'Name' })
  const save = h('button', { type: 'button', class: 'secondary', id: 'save-template' }, 'Save as template')

  const data = checkedField('Data (optional)', h('textarea', { name: 'data', rows: '2', placeholder: 'order_id=A-1042' }),
    { hint: 'One key=value a line, used as {{ data.key }}. Subscribers\' own values: {{ tags.first_name | default: "there" }}, {{ external_id }}, {{ locale }}.' })
  const defaults = checkedField('Defaults (optional)', h('textarea', { name: 'defaults', rows: '2', placeholder: 'tags.first_name=there' }),
    { hint: 'One variable=value a line: the value a subscriber without one gets. A default filter in the text wins over it.' })
  const missing = h('select', { name: 'missing', id: 'compose-missing' },
    h('option', { value: 'default' }, 'Print it empty (or its default)'),
    h('option', { value: 'skip_subscriber' }, 'Skip that subscriber'),
    h('option', { value: 'fail' }, 'Refuse the send (data variables)'))
  const tooLong = h('select', { name: 'on_too_long', id: 'compose-too-long' },
    h('option', { value: 'truncate' }, 'Cut it, ending with …'),
    h('option', { value: 'skip' }, 'Skip that subscriber'))

  const rows = []
  const list = h('div', { id: 'compose-languages' })
  const remove = (row) => {
    rows.splice(rows.indexOf(row), 1)
    row.node.remove()
    onChange()
  }
  const addLanguage = (saved) => {
    const row = languageRow(remove, saved)
    rows.push(row)
    list.append(row.node)
    return row
  }
  const add = h('button', { type: 'button', class: 'secondary', id: 'add-language', onclick: () => {
    addLanguage().node.querySelector('input').focus()
    onChange()
  } }, 'Add a language')

  const localized = () => Object.fromEntries(rows.map((r) => r.value()).filter((v) => v.locale).map((v) => [v.locale, { title: v.title, body: v.body }]))

  use.addEventListener('click', () => {
    const template = templates.find((t) => t.id === picker.value)
    if (!template) return
    onUse(template)
    defaults.control.value = Object.entries(template.defaults ?? {}).map(([k, v]) => `${k}=${v}`).join('\n')
    for (const row of [...rows]) remove(row)
    for (const [locale, v] of Object.entries(template.localized)) addLanguage({ locale, title: v.title, body: v.body })
    show(slot, okBox(`Template “${template.name}” is in the form: change anything before sending.`))
    onChange()
  })
  save.addEventListener('click', async () => {
    try {
      const saved = await post('/v1/templates', { name: saveName.value.trim(), notification: current(), defaults: parseDefaults(defaults.control.value)[0], localized: localized() })
      templates.push(saved)
      picker.append(h('option', { value: saved.id }, saved.name))
      show(slot, okBox(`Saved as template “${saved.name}”.`))
    } catch (error) {
      show(slot, errorBox(error))
    }
  })

  return {
    nodes: h('fieldset', { class: 'card', id: 'compose-personal' }, h('legend', {}, 'Template, variables and languages (optional)'),
      h('div', { class: 'template-row' }, field('Template', picker), use),
      canSave ? h('div', { class: 'template-row' }, field('Save the form as', saveName), save) : null,
      slot,
      data.node,
      defaults.node,
      field('A variable a subscriber has no value for', missing),
      field('A field too long once filled in', tooLong),
      h('h3', {}, 'Languages'),
      h('p', { class: 'hint' }, 'Subscribers whose browser language matches get that version (pt-BR, then pt); everyone else gets the fields above.'),
      list, add),
    fields: { data, defaults },
    /** Runs the checks; returns the errors. */
    check() {
      const [, errors] = parseData(data.control.value)
      data.setError(errors[0] ?? null)
      const [, defaultErrors] = parseDefaults(defaults.control.value)
      defaults.setError(defaultErrors[0] ?? null)
      return [...errors, ...defaultErrors]
    },
    /** Adds data, defaults, missing, on_too_long and localized to the request, when set. */
    apply(request) {
      const [values] = parseData(data.control.value)
      if (Object.keys(values).length) request.data = values
      const [given] = parseDefaults(defaults.control.value)
      if (Object.keys(given).length) request.defaults = given
      if (missing.value !== 'default') request.missing = missing.value
      if (tooLong.value !== 'truncate') request.on_too_long = tooLong.value
      const versions = localized()
      if (Object.keys(versions).length) request.localized = versions
      return request
    },
    state: () => ({ data: data.control.value, defaults: defaults.control.value, missing: missing.value, on_too_long: tooLong.value, languages: rows.map((r) => r.value()) }),
    restore(d) {
      data.control.value = typeof d?.data === 'string' ? d.data : ''
      defaults.control.value = typeof d?.defaults === 'string' ? d.defaults : ''
      if (['default', 'skip_subscriber', 'fail'].includes(d?.missing)) missing.value = d.missing
      if (['truncate', 'skip'].includes(d?.on_too_long)) tooLong.value = d.on_too_long
      for (const saved of Array.isArray(d?.languages) ? d.languages : []) addLanguage(saved)
    },
  }
}

/** The dry run's preview of a personalized send: each sample subscriber's notification, and each variable's coverage. */
export function personalizationSummary(p) {
  if (!p) return null
  const percent = (share) => `${Math.round(share * 100)}%`
  const row = (cells) => h('tr', {}, cells.map((cell) => h('td', {}, cell)))
  return h('div', { class: 'personalization', id: 'confirm-personalization' },
    h('h3', {}, 'What some subscribers would get'),
    table('What some subscribers would get', ['Subscriber', 'Language', 'Notification'],
      p.samples.map((s) => row([
        s.subscriber_id,
        s.language ?? (s.locale ? `${s.locale} (default fields)` : 'default fields'),
        s.notification ? h('span', { class: 'sample' }, h('strong', {}, s.notification.title), ' — ', s.notification.body) : h('em', {}, `Skipped: ${s.skipped}`),
      ])), { emptyText: 'Nobody in the audience yet.' }),
    h('h3', {}, 'Variables'),
    table('Variables', ['Variable', 'Subscribers with a value', 'Default'],
      p.variables.map((v) => row([h('code', {}, v.variable), `${formatNumber(v.with_value)} (${percent(v.coverage)})`, v.default ?? '—'])),
      { emptyText: 'No variables: languages only.' }),
  )
}

