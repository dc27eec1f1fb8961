// Shared pieces of the pages: messages, errors in words, confirmations,
// tables and the page heading that takes focus after navigation.
import { h, replace } from './dom.js'

/** An API error (or any error) as a message a person can act on. */
export function errorBox(error) {
  const issues = error && Array.isArray(error.issues) ? error.issues : []
  return h('div', { class: 'message error', role: 'alert' },
    h('p', {}, error && error.message ? error.message : String(error)),
    issues.length ? h('ul', {}, issues.map((issue) => h('li', {}, issue.path ? `${issue.path}: ${issue.message}` : issue.message))) : null,
  )
}

export function okBox(text) {
  return h('div', { class: 'message ok', role: 'status' }, h('p', {}, text))
}

/** Puts a message in a slot, replacing the previous one. */
export function show(slot, box) {
  replace(slot, box ?? '')
}

/**
 * A button that asks before acting: the first press shows "Really …?" with
 * the action and Cancel, so nothing is erased by one stray click.
 */
export function confirmButton(label, question, action, { danger = true } = {}) {
  const wrap = h('span', { class: 'confirm' })
  const start = h('button', { type: 'button', class: danger ? 'danger' : 'secondary', onclick: ask }, label)
  wrap.append(start)
  function ask() {
    const yes = h('button', { type: 'button', class: 'danger', onclick: async () => {
      yes.disabled = true
      try {
        await action()
      } finally {
        yes.disabled = false
      }
    } }, `Yes, ${label.toLowerCase()}`)
    const no = h('button', { type: 'button', class: 'secondary', onclick: reset }, 'Cancel')
    replace(wrap, h('span', { class: 'question' }, question), ' ', yes, ' ', no)
    yes.focus()
  }
  function reset() {
    replace(wrap, start)
    start.focus()
  }
  return wrap
}

/** A table in a scrolling wrapper (narrow screens), with a caption for screen readers. */
export function table(caption, headers, rows, { emptyText = 'Nothing yet.' } = {}) {
  if (!rows.length) return h('p', { class: 'empty' }, emptyText)
  return h('div', { class: 'table-wrap' },
    h('table', {},
      h('caption', { class: 'visually-hidden' }, caption),
      h('thead', {}, h('tr', {}, headers.map((header) => h('th', { scope: 'col', class: header.num ? 'num' : null }, header.label ?? header)))),
      h('tbody', {}, rows),
    ),
  )
}

export function pageHeading(text, ...extra) {
  return h('div', { class: 'page-head' }, h('h1', { tabindex: '-1', id: 'page-title' }, text), ...extra)
}

export function statusBadge(status) {
  return h('span', { class: `badge badge-${status}` }, status)
}

/** Runs an async form handler with the submit button disabled and errors shown in the slot. */
export function onSubmit(form, slot, handler) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    const buttons = form.querySelectorAll('button[type=submit]')
    buttons.forEach((b) => { b.disabled = true })
    show(slot, null)
    try {
      await handler(event)
    } catch (error) {
      show(slot, errorBox(error))
    } finally {
      buttons.forEach((b) => { b.disabled = false })
    }
  })
  return form
}
