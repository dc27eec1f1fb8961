// The dashboard shell: sign-in with the project's API key, hash routing
// between the pages, sign-out. Each page module exports
// render(main, session, params) and may return a cleanup function (polling).
import { clearKey, get, loadKey, setKey, whenUnauthorized } from './api.js'
import { h, replace } from './dom.js'
import { errorBox, onSubmit, pageHeading } from './ui.js'
import * as overview from './pages/overview.js'
import * as groups from './pages/groups.js'
import * as subscribers from './pages/subscribers.js'
import * as compose from './pages/compose.js'
import * as broadcasts from './pages/broadcasts.js'
import * as settings from './pages/settings.js'

const ROUTES = [
  { pattern: /^\/overview$/, page: overview, nav: 'overview' },
  { pattern: /^\/groups$/, page: groups, nav: 'groups' },
  { pattern: /^\/subscribers$/, page: subscribers, nav: 'subscribers' },
  { pattern: /^\/subscribers\/(sub_[0-9a-z]+)$/, page: subscribers, nav: 'subscribers', detail: true },
  { pattern: /^\/compose$/, page: compose, nav: 'compose' },
  { pattern: /^\/broadcasts$/, page: broadcasts, nav: 'broadcasts' },
  { pattern: /^\/broadcasts\/(bdc_[0-9a-z]+)$/, page: broadcasts, nav: 'broadcasts', detail: true },
  { pattern: /^\/settings$/, page: settings, nav: 'settings' },
]

const main = document.getElementById('main')
const nav = document.getElementById('nav')
const projectName = document.getElementById('project-name')
const signOutButton = document.getElementById('sign-out')

/** What pages share: the project (GET /v1/me), a way to refresh it, and a message to show on the next page. */
const session = {
  me: null,
  flash: null,
  async refreshMe() {
    session.me = (await get('/v1/me')).project
    showProject()
    return session.me
  },
  go(hash, flash) {
    session.flash = flash ?? null
    if (location.hash === hash) route()
    else location.hash = hash
  },
}

let cleanup = null

function showProject() {
  const p = session.me
  replace(projectName, p ? h('span', {}, p.name, ' ', h('span', { class: 'plan' }, p.plan)) : '')
}

function signedIn() {
  return session.me !== null
}

function signOut(reason) {
  clearKey()
  session.me = null
  if (cleanup) cleanup()
  cleanup = null
  nav.hidden = true
  signOutButton.hidden = true
  showProject()
  if (location.hash !== '' && location.hash !== '#/') history.replaceState(null, '', location.pathname)
  renderSignIn(reason)
}

function renderSignIn(reason) {
  const slot = h('div', { id: 'sign-in-message' })
  const input = h('input', { type: 'password', id: 'api-key', name: 'api_key', autocomplete: 'off', spellcheck: 'false', required: true, placeholder: 'hk_live_…', 'aria-describedby': 'api-key-hint' })
  const form = h('form', { class: 'card sign-in', id: 'sign-in-form' },
    h('div', { class: 'field' },
      h('label', { for: 'api-key' }, 'API key'),
      input,
      h('small', { class: 'hint', id: 'api-key-hint' },
        'The key that “herald projects create” printed (or the operator API). It stays in this tab only, in session storage, and goes to this server alone.'),
    ),
    h('button', { type: 'submit' }, 'Sign in'),
  )
  onSubmit(form, slot, async () => {
    const key = input.value.trim()
    try {
      session.me = (await get('/v1/me', { key })).project
    } catch (error) {
      if (error.status === 401) {
        error.message = 'This API key was not accepted. Check that you copied the whole key (it starts with hk_live_) and that it has not been revoked.'
      }
      throw error
    }
    setKey(key)
    input.value = ''
    enterShell()
  })
  replace(main, h('div', { class: 'sign-in-page' },
    pageHeading('Sign in to Herald'),
    h('p', {}, 'Run your project: send broadcasts, manage groups and subscribers, see what was delivered and clicked.'),
    reason ? errorBox(reason) : null,
    slot,
    form,
  ))
  input.focus()
}

function enterShell() {
  nav.hidden = false
  signOutButton.hidden = false
  showProject()
  if (!location.hash.startsWith('#/') || location.hash === '#/') history.replaceState(null, '', '#/overview')
  route()
}

async function route() {
  if (!signedIn()) return
  const path = location.hash.startsWith('#/') ? location.hash.slice(1) : '/overview'
  const match = ROUTES.map((r) => ({ r, m: r.pattern.exec(path) })).find((x) => x.m)
  if (cleanup) cleanup()
  cleanup = null
  for (const link of nav.querySelectorAll('a')) {
    if (match && link.dataset.page === match.r.nav) link.setAttribute('aria-current', 'page')
    else link.removeAttribute('aria-current')
  }
  const flash = session.flash
  session.flash = null
  replace(main, h('p', { class: 'loading', role: 'status' }, 'Loading…'))
  if (!match) {
    replace(main, pageHeading('Not found'), h('p', {}, 'There is no such page. ', h('a', { href: '#/overview' }, 'Go to the overview.')))
    return
  }
  const view = h('div', { class: 'view' })
  try {
    const params = match.m.slice(1)
    const done = await match.r.page.render(view, session, { id: params[0], detail: Boolean(match.r.detail), flash })
    if (typeof done === 'function') cleanup = done
  } catch (error) {
    if (!signedIn()) return
    replace(view, pageHeading('Something went wrong'), errorBox(error))
  }
  replace(main, view)
  const title = view.querySelector('h1')
  document.title = title ? `${title.textContent} · Herald` : 'Herald dashboard'
  // Focus moves to the new page's heading, so keyboard and screen reader users start there.
  title?.focus()
}

whenUnauthorized((error) => {
  if (!signedIn()) return
  error.message = `Signed out: ${error.message} Sign in again with a valid key.`
  signOut(error)
})

signOutButton.addEventListener('click', () => signOut())
window.addEventListener('hashchange', () => {
  if (location.hash.startsWith('#/')) route()
})
document.getElementById('skip-link').addEventListener('click', (event) => {
  event.preventDefault()
  ;(main.querySelector('h1') ?? main).focus()
})

async function start() {
  const key = loadKey()
  if (!key) return renderSignIn()
  try {
    await session.refreshMe()
    enterShell()
  } catch (error) {
    if (error.status === 401) return signOut(error)
    renderSignIn(error)
  }
}

start()
