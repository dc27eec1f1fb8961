// API keys (owners and admins: keys:manage): the project's keys that work,
// with their scope and when each was last used; a form that creates one and
// shows it this once, with a copy button; Revoke, after a confirmation, which
// stops the key at once. Herald never shows a key again: lists have a prefix.
import { currentKey, del, get, post } from '../api.js'
import { field, h, replace, shortTime } from '../dom.js'
import { confirmButton, errorBox, okBox, onSubmit, pageHeading, show, table } from '../ui.js'

const SCOPES = [
  ['full', 'full: everything but members'],
  ['send', 'send: send, schedule, stop and read broadcasts'],
  ['subscribers', 'subscribers: read, tag and erase subscribers'],
  ['groups', 'groups: groups and who is in them'],
  ['webhooks', 'webhooks: webhooks and their deliveries'],
]

/** Copies the text; falls back to selecting it for Ctrl+C where the clipboard API is refused. */
async function copy(input) {
  try {
    await navigator.clipboard.writeText(input.value)
    return true
  } catch {
    input.focus()
    input.select()
    return false
  }
}

function secretBox(created) {
  const input = h('input', { id: 'new-api-key', class: 'mono', readonly: true, value: created.api_key, spellcheck: 'false', onfocus: (e) => e.target.select() })
  const copied = h('span', { class: 'small', role: 'status', id: 'copy-status' })
  const button = h('button', { type: 'button', class: 'secondary', id: 'copy-api-key', onclick: async () => {
    copied.textContent = (await copy(input)) ? 'Copied.' : 'Selected: press Ctrl+C (⌘C) to copy.'
  } }, 'Copy')
  return h('div', { class: 'message ok secret', id: 'new-key' },
    h('p', {}, h('strong', {}, `Key “${created.name ?? 'unnamed'}” created (${created.scope}).`), ' Copy it now: it will not be shown again. Herald keeps only its hash.'),
    h('label', { for: 'new-api-key' }, 'New API key'),
    h('div', { class: 'copy-row' }, input, button),
    copied,
  )
}

export async function render(view) {
  const slot = h('div', { class: 'slot', id: 'keys-message' })
  const secretSlot = h('div')
  const listSlot = h('div')

  const name = h('input', { type: 'text', name: 'name', maxlength: 128, autocomplete: 'off', placeholder: 'e.g. Newsletter server' })
  const scope = h('select', { name: 'scope' }, SCOPES.map(([value, label]) => h('option', { value }, label)))
  const form = h('form', { class: 'card inline-form', id: 'create-key' },
    h('h2', {}, 'Create a key'),
    field('Name', name, 'Optional: what will use the key.'),
    field('Scope', scope, 'What the key may do. A request outside it is refused (403 insufficient_scope).'),
    h('button', { type: 'submit' }, 'Create key'),
  )
  onSubmit(form, slot, async () => {
    const body = { scope: scope.value }
    if (name.value.trim()) body.name = name.value.trim()
    const created = await post('/v1/api-keys', body)
    name.value = ''
    replace(secretSlot, secretBox(created))
    await load()
    secretSlot.querySelector('input').focus()
  })

  async function load() {
    const { api_keys: keys } = await get('/v1/api-keys')
    const signedInWith = currentKey()
    const rows = keys.map((k) => {
      const mine = Boolean(signedInWith && signedInWith.startsWith(k.prefix))
      const label = k.name ?? 'unnamed'
      const question = mine
        ? `Revoke “${label}”? This tab is signed in with it and will be signed out.`
        : `Revoke “${label}”? Anything using it stops working at once.`
      const revoke = confirmButton('Revoke', question, async () => {
        try {
          await del(`/v1/api-keys/${k.id}`)
          replace(secretSlot)
          // The list first, as the other pages do: once the message says revoked, the key is gone from the list too.
          await load()
          show(slot, okBox(`Key “${label}” revoked.`))
        } catch (error) {
          show(slot, errorBox(error))
        }
      })
      return h('tr', { 'data-key-id': k.id },
        h('td', {}, k.name ?? h('span', { class: 'muted' }, 'unnamed'), mine ? h('span', { class: 'muted small' }, ' (this tab)') : null),
        // data-label names the value where a phone shows each key as a card (dashboard.css).
        h('td', { class: 'mono', 'data-label': 'Prefix' }, `${k.prefix}…`),
        h('td', { 'data-label': 'Scope' }, k.scope),
        h('td', { class: 'when', 'data-label': 'Created' }, shortTime(k.created_at)),
        h('td', { class: 'when', 'data-label': 'Last used' }, k.last_used_at === null ? h('span', { class: 'muted' }, 'never') : shortTime(k.last_used_at)),
        h('td', { class: 'actions' }, revoke),
      )
    })
    const headers = ['Name', 'Prefix', 'Scope', 'Created', 'Last used', '']
    replace(listSlot, h('h2', {}, 'Keys'), table('API keys', headers, rows, { emptyText: 'No keys: every key of this project is revoked.' }))
    listSlot.querySelector('table')?.classList.add('card-table')
  }

  await load()
  replace(view,
    pageHeading('API keys'),
    h('p', {}, 'Keys let your servers call Herald. Give each one only the scope it needs, and revoke a key you no longer use: it stops working at once.'),
    slot, form, secretSlot, listSlot,
  )
}
