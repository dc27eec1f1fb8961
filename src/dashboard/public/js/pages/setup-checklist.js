// The overview's setup checklist (issue 25, "First use"): four steps, each
// ticked from the project's own data, never from a click here:
// - API key: a key of the project has been used (last_used_at), i.e. a server
//   calls Herald with it. Only those who manage keys can see them; others see
//   the step without a tick and who to ask.
// - SDK on the site: a subscriber arrived through POST /v1/subscribe (source
//   subscribe), which only the SDK (or a hand-written call) makes.
// - First subscriber: any subscriber, whatever its status or how it arrived
//   (an import counts). Members' test devices are never subscribers here.
// - First send: a broadcast other than a test to a member's own devices (among
//   the latest 20: a project that sent only tests has sent no more than that).
// The card is left out once every step is done, or once dismissed in this
// browser (kept per project in localStorage).
import { get } from '../api.js'
import { h } from '../dom.js'
import { snippetSection } from './settings.js'

const dismissedKey = (projectId) => `herald.setupChecklist.dismissed.${projectId}`

function isDismissed(projectId) {
  try {
    return localStorage.getItem(dismissedKey(projectId)) === '1'
  } catch {
    return false
  }
}

/** What the steps read; a read the member may not make leaves its step unknown (null). */
async function progress(session) {
  const keys = session.can('keys:manage') ? get('/v1/api-keys').then((r) => r.api_keys.some((k) => k.last_used_at !== null)) : Promise.resolve(null)
  const [keyUsed, viaSdk, counts, broadcasts] = await Promise.all([
    keys.catch(() => null),
    get('/v1/subscribers?source=subscribe&limit=1').then((r) => r.subscribers.length > 0),
    get('/v1/subscribers/counts'),
    get('/v1/broadcasts?limit=20').then((r) => r.broadcasts.some((b) => b.target.type !== 'test_devices')),
  ])
  return { keyUsed, viaSdk, subscriber: counts.active + counts.unsubscribed + counts.expired > 0, sent: broadcasts }
}

/** The checklist card, or null when there is nothing left to do (or it was dismissed). */
export async function setupChecklist(session) {
  const me = session.me
  if (!me || isDismissed(me.id)) return null
  const done = await progress(session)
  if (done.keyUsed !== false && done.viaSdk && done.subscriber && done.sent) return null
  const step = (id, ok, title, ...details) => h('li', { id, class: `setup-step${ok ? ' done' : ''}`, 'data-done': ok === null ? 'unknown' : String(ok) },
    h('span', { class: 'setup-mark', 'aria-hidden': 'true' }, ok ? '✓' : '○'),
    h('div', {}, h('strong', {}, title), h('span', { class: 'visually-hidden' }, ok ? ' (done)' : ok === null ? ' (not known to you)' : ' (to do)'), ...details))
  const steps = [
    step('setup-key', done.keyUsed, 'Call Herald from your server with an API key',
      h('p', { class: 'hint' }, done.keyUsed === null
        ? 'An owner or admin creates keys (API keys page); ticked once a key has been used.'
        : h('span', {}, 'Create one on the ', h('a', { href: '#/api-keys' }, 'API keys'), ' page and keep it on your server; ticked once a key has been used.'))),
    step('setup-sdk', done.viaSdk, 'Add the SDK to your site',
      h('p', { class: 'hint' }, `Project ${me.id}. Ticked once a visitor subscribes through it.`),
      h('details', {}, h('summary', {}, 'Show the snippet'), snippetSection(me))),
    step('setup-subscriber', done.subscriber, 'Get your first subscriber',
      h('p', { class: 'hint' }, 'Open your site, press the button and allow notifications, or import subscribers on the Subscribers page.')),
    step('setup-send', done.sent, 'Send your first broadcast',
      h('p', { class: 'hint' }, h('a', { href: '#/compose' }, 'Compose'), ' one, or send a test to your own browser first.')),
  ]
  const count = [done.keyUsed, done.viaSdk, done.subscriber, done.sent].filter(Boolean).length
  const card = h('section', { class: 'card setup-checklist', id: 'setup-checklist', 'aria-labelledby': 'setup-title' },
    h('h2', { id: 'setup-title' }, 'Get started'),
    h('p', { id: 'setup-progress' }, `${count} of 4 steps done.`),
    h('ol', { class: 'setup-steps' }, steps),
    h('button', { type: 'button', class: 'secondary small', id: 'setup-dismiss', onclick: () => {
      try {
        localStorage.setItem(dismissedKey(me.id), '1')
      } catch {
        // Storage refused: hidden until the next visit only.
      }
      card.remove()
    } }, 'Hide this checklist'),
  )
  return card
}
