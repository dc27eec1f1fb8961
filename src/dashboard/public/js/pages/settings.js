// Settings: webhooks (webhooks-section.js: status, delivery log, test, edit,
// enable, rotate), the project's default icon, subscription expiry rules and
// time settings (default time zone, quiet hours: PATCH /v1/me), its frequency
// caps (settings-caps.js), the VAPID keys for owners (vapid-keys-section.js),
// and the snippet to paste into the site.
import { patch } from '../api.js'
import { append, field, h, readAsDataUrl, replace } from '../dom.js'
import { errorBox, okBox, onSubmit, pageHeading, show } from '../ui.js'
import { webhooksSection } from './webhooks-section.js'
import { capsSection } from './settings-caps.js'
import { vapidKeysSection } from './vapid-keys-section.js'

export async function render(view, session, { flash }) {
  const me = session.me
  append(view,
    pageHeading('Settings'),
    flash ? okBox(flash) : null,
    await webhooksSection(),
    iconSection(session),
    expirySection(session),
    timeSection(session),
    capsSection(session),
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

// The two expiry rules (issue 23, docs/subscription-health.md): an empty field is off.
function expirySection(session) {
  const slot = h('div', { class: 'slot', id: 'expiry-message' })
  const me = session.me
  const failures = h('input', { name: 'expire_after_failures', type: 'number', min: '1', max: '1000', step: '1', value: me.expire_after_failures ?? '', placeholder: 'off' })
  const days = h('input', { name: 'expire_after_days_without_delivery', type: 'number', min: '1', max: '3650', step: '1', value: me.expire_after_days_without_delivery ?? '', placeholder: 'off' })
  const intro = h('p', {}, 'Expired subscribers get no more pushes and no longer count toward your plan; a browser that subscribes again comes back. A push service answering 404 or 410 expires a subscriber at once, whatever these say. FCM answers 404 for devices offline 270 days; Apple accepts pushes even for dead subscriptions, so only clicks tell (see dormant on the overview). Leave a field empty to turn its rule off.')
  if (!session.can('project:write')) {
    const text = (value, unit) => (value === null ? 'off' : `${value} ${unit}`)
    return h('section', { class: 'card', 'aria-labelledby': 'expiry-title' },
      h('h2', { id: 'expiry-title' }, 'Subscription expiry'), intro,
      h('p', { id: 'expiry-rules' }, `After failed pushes in a row: ${text(me.expire_after_failures, 'failures')}. After days of failing pushes with none accepted: ${text(me.expire_after_days_without_delivery, 'days')}. Owners and admins change these.`))
  }
  const read = (input) => (input.value.trim() === '' ? null : Number(input.value))
  const form = h('form', { class: 'inline-form', id: 'expiry-form' },
    field('Expire after this many failed pushes in a row', failures, '1-1000; empty: off.'),
    field('Expire after this many days of failing pushes with none accepted', days, '1-3650, checked every hour; empty: off. A subscriber you simply send nothing to never expires.'),
    h('button', { type: 'submit' }, 'Save expiry rules'),
  )
  onSubmit(form, slot, async () => {
    session.me = (await patch('/v1/me', { expire_after_failures: read(failures), expire_after_days_without_delivery: read(days) })).project
    session.go('#/settings', 'Expiry rules saved.')
  })
  return h('section', { class: 'card', 'aria-labelledby': 'expiry-title' },
    h('h2', { id: 'expiry-title' }, 'Subscription expiry'), intro, slot, form)
}

/** The project's default time zone and quiet hours (docs/timing.md). */
function timeSection(session) {
  const me = session.me
  const slot = h('div', { class: 'slot', id: 'time-message' })
  const zones = h('datalist', { id: 'zone-list' }, Intl.supportedValuesOf('timeZone').map((z) => h('option', { value: z })))
  const zone = h('input', { name: 'default_timezone', id: 'default-timezone', list: 'zone-list', autocomplete: 'off', value: me.default_timezone, required: true })
  const quietOn = h('input', { type: 'checkbox', name: 'quiet_on', id: 'quiet-on', checked: me.quiet_hours !== null })
  const start = h('input', { type: 'time', name: 'quiet_start', id: 'quiet-start', value: me.quiet_hours?.start ?? '22:00' })
  const end = h('input', { type: 'time', name: 'quiet_end', id: 'quiet-end', value: me.quiet_hours?.end ?? '08:00' })
  const times = h('div', { class: 'inline-fields', id: 'quiet-times' }, field('From', start), field('Until', end))
  const sync = () => { times.hidden = !quietOn.checked }
  quietOn.addEventListener('change', sync)
  const form = h('form', { class: 'inline-form', id: 'time-form' },
    field('Default time zone', zone, "An IANA name such as Europe/Paris. Used for subscribers whose browser did not say theirs."),
    h('label', { class: 'check' }, quietOn, ' Quiet hours: hold pushes at night, each subscriber\'s local time'),
    times,
    h('button', { type: 'submit' }, 'Save time settings'))
  onSubmit(form, slot, async () => {
    const body = { default_timezone: zone.value.trim(), quiet_hours: quietOn.checked ? { start: start.value, end: end.value } : null }
    session.me = (await patch('/v1/me', body)).project
    session.go('#/settings', 'Time settings saved.')
  })
  sync()
  const q = me.quiet_hours
  return h('section', { class: 'card', 'aria-labelledby': 'time-title' },
    h('h2', { id: 'time-title' }, 'Time zone and quiet hours'),
    h('p', { id: 'time-current' }, q
      ? `Quiet hours ${q.start} to ${q.end}: pushes that would arrive then wait until ${q.end} in the subscriber's time zone (never dropped). Sends with urgency high go through.`
      : 'No quiet hours: pushes go out whatever the hour.'),
    zones, slot, form)
}

export function snippetSection(me) {
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
