// Settings: webhooks (webhooks-section.js: status, delivery log, test, edit,
// enable, rotate), the project's default icon (PATCH /v1/me), the VAPID keys
// for owners (vapid-keys-section.js), and the snippet to paste into the site.
import { patch } from '../api.js'
import { append, field, h, readAsDataUrl, replace } from '../dom.js'
import { errorBox, okBox, onSubmit, pageHeading, show } from '../ui.js'
import { webhooksSection } from './webhooks-section.js'
import { vapidKeysSection } from './vapid-keys-section.js'

export async function render(view, session, { flash }) {
  const me = session.me
  append(view,
    pageHeading('Settings'),
    flash ? okBox(flash) : null,
    await webhooksSection(),
    iconSection(session),
    // Owners only (vapid_keys:manage): rotating or retiring a key can silence subscribers.
    session.can('vapid_keys:manage') ? await vapidKeysSection(session) : null,
    snippetSection(me),
  )
}

function iconSection(session) {
  const slot = h('div', { class: 'slot', id: 'icon-message' })
  const current = h('div', { class: 'current-icon', id: 'current-icon' })
  function drawCurrent() {
    const icon = session.me.default_icon
    replace(current, icon
      ? h('span', {}, h('img', { src: icon, alt: 'Current default icon', width: '48', height: '48' }), ' ', h('span', { class: 'mono break' }, icon))
      : h('span', { class: 'muted' }, 'No default icon: notifications sent without an icon show none.'))
  }
  const url = h('input', { name: 'default_icon', type: 'text', inputmode: 'url', placeholder: 'https://…', autocomplete: 'off' })
  const file = h('input', { name: 'default_icon_file', type: 'file', accept: 'image/png,image/jpeg,image/webp' })
  const form = h('form', { class: 'inline-form', id: 'icon-form' },
    field('Icon URL', url, 'An HTTPS URL, or upload a square PNG, JPEG or WebP (at most 256 KB) that Herald hosts.'),
    field('…or upload a file', file),
    h('button', { type: 'submit' }, 'Save icon'), ' ',
    session.me.default_icon ? h('button', { type: 'button', class: 'secondary', onclick: () => save(null) }, 'Remove icon') : null,
  )
  async function save(value) {
    show(slot, null)
    try {
      session.me = (await patch('/v1/me', { default_icon: value })).project
      session.go('#/settings', value === null ? 'Default icon removed.' : 'Default icon saved.')
    } catch (error) {
      show(slot, errorBox(error))
    }
  }
  onSubmit(form, slot, async () => {
    const value = file.files[0] ? await readAsDataUrl(file.files[0]) : url.value.trim()
    if (!value) throw new Error('Give an icon URL or pick a file.')
    await save(value)
  })
  drawCurrent()
  return h('section', { class: 'card', 'aria-labelledby': 'icon-title' },
    h('h2', { id: 'icon-title' }, 'Default icon'),
    h('p', {}, 'Shown on notifications sent without their own icon.'),
    current, slot, form)
}

function snippetSection(me) {
  // HERALD_PUBLIC_URL, written into the page by Herald (sites must reach Herald by
  // that name); this page's own origin if the page was opened without it.
  const base = document.querySelector('meta[name="herald-public-url"]')?.content || location.origin
  const pageCode = [
    `<script src="${base}/sdk/herald.js"></script>`,
    '<button type="button" id="notify-me">Get notifications</button>',
    '<script>',
    `  Herald.init({ project: '${me.id}' })`,
    "  document.getElementById('notify-me').addEventListener('click', () => Herald.subscribe())",
    '</script>',
  ].join('\n')
  const workerCode = `importScripts('${base}/sdk/sw.js')`
  const block = (id, label, code) => [
    h('h3', { id: `${id}-title` }, label),
    h('pre', { class: 'code', id, tabindex: '0', 'aria-labelledby': `${id}-title` }, h('code', {}, code)),
    h('button', { type: 'button', class: 'secondary small', onclick: async (e) => {
      try {
        await navigator.clipboard.writeText(code)
        e.target.textContent = 'Copied'
      } catch {
        e.target.textContent = 'Select the text and copy it'
      }
    } }, 'Copy'),
  ]
  return h('section', { class: 'card', 'aria-labelledby': 'snippet-title' },
    h('h2', { id: 'snippet-title' }, 'Add Herald to your site'),
    h('p', {}, 'Two pieces: a script on your pages, and a one-line service worker file at the root of your site. Browsers ask for permission only when a visitor presses the button.'),
    block('snippet-page', 'On your pages', pageCode),
    block('snippet-worker', 'In /herald-sw.js, at the root of your site', workerCode),
    h('p', { class: 'hint' }, `Project id ${me.id}. The page must be served over HTTPS (or from localhost).`),
  )
}
