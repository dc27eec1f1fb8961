// The dashboard shell: sign-in (a member's account, or the project's API
// key), the invite page, the project switcher, hash routing between the
// pages, sign-out. Each page module exports render(main, session, params) and
// may return a cleanup function (polling). Pages ask session.can(permission)
// to leave out what the role cannot do; Herald refuses it anyway (403).
import { clearKey, del, get, loadKey, patch, setCsrfToken, setKey, whenUnauthorized } from './api.js'
import { h, replace } from './dom.js'
import { errorBox, pageHeading } from './ui.js'
import { renderInvite, renderSignIn as signInPage } from './sign-in.js'
import { renderReset } from './reset-password.js'
import * as account from './pages/account.js'
import * as members from './pages/members.js'
import * as auditLog from './pages/audit-log.js'
import * as apiKeys from './pages/api-keys.js'
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
  { pattern: /^\/members$/, page: members, nav: 'members', needs: 'members:manage' },
  { pattern: /^\/audit-log$/, page: auditLog, nav: 'audit-log', needs: 'audit:read' },
  { pattern: /^\/api-keys$/, page: apiKeys, nav: 'api-keys', needs: 'keys:manage' },
  { pattern: /^\/account$/, page: account, nav: 'account' },
]

/** An invite link's fragment: #/invite/<token>. */
const INVITE_HASH = /^#\/invite\/([A-Za-z0-9_-]+)$/

const main = document.getElementById('main')
const nav = document.getElementById('nav')
const projectName = document.getElementById('project-name')
const signOutButton = document.getElementById('sign-out')
const accountLink = document.getElementById('account-link')
const switcher = document.getElementById('project-switcher')

/** What a key may do (its scope is not known to the page): everything but managing people and VAPID keys. */
const KEY_CANNOT = ['members:manage', 'vapid_keys:manage']

/**
 * What pages share: the project (GET /v1/me), the signed-in member (GET
 * /v1/session; null with an API key), what they may do, a way to refresh the
 * project, and a message to show on the next page.
 */
const session = {
  me: null,
  user: null,
  flash: null,
  can(permission) {
    return session.user ? session.user.permissions.includes(permission) : !KEY_CANNOT.includes(permission)
  },
  async refreshMe() {
    session.me = (await get('/v1/me')).project
    showProject()
    return session.me
  },
  /** A renewed session (after a password change): its new CSRF token from now on. */
  renew(view) {
    useAccount(view)
  },
  go(hash, flash) {
    session.flash = flash ?? null
    if (location.hash === hash) route()
    else location.hash = hash
  },
}

let cleanup = null
/** Counts the pages shown: a page's session sends the browser elsewhere only while that page is still the one shown. */
let shown = 0

/**
 * The session a page is given: the same object for everything, but its go()
 * does nothing once the person has moved to another page (a save that ends
 * after they left would otherwise take them back to where they saved).
 */
function pageSession() {
  const mine = shown
  // Still on this page, or asking for the page that is shown (a second save on it, ending after the first re-rendered it).
  const go = (hash, flash) => {
    if (mine === shown || location.hash === hash) session.go(hash, flash)
  }
  return new Proxy(session, { get: (target, key) => (key === 'go' ? go : Reflect.get(target, key)) })
}

function showProject() {
  const p = session.me
  const role = session.user?.project ? h('span', { class: 'plan', id: 'role' }, session.user.project.role) : null
  replace(projectName, p ? h('span', {}, p.name, ' ', h('span', { class: 'plan' }, p.plan), ' ', role) : '')
  const projects = session.user?.projects ?? []
  switcher.hidden = projects.length < 2
  replace(switcher, projects.map((x) => h('option', { value: x.id, selected: x.id === p?.id }, `${x.name} (${x.role})`)))
  // Links to what the role cannot do are left out.
  for (const link of nav.querySelectorAll('a[data-needs]')) link.closest('li').hidden = !session.can(link.dataset.needs)
}

/** A member's session as GET/POST/PATCH /v1/session answer it. */
function useAccount(view) {
  session.user = view
  setCsrfToken(view.csrf_token)
}

function signedIn() {
  return session.me !== null
}

function signOut(reason, notice) {
  if (session.user) del('/v1/session').catch(() => {})
  clearKey()
  session.me = null
  session.user = null
  if (cleanup) cleanup()
  cleanup = null
  nav.hidden = true
  signOutButton.hidden = true
  accountLink.hidden = true
  showProject()
  if (location.hash !== '' && location.hash !== '#/') history.replaceState(null, '', location.pathname)
  renderSignIn(reason, notice)
}

function renderSignIn(reason, notice, email) {
  signInPage(main, {
    reason,
    notice,
    email,
    async onAccount(view) {
      useAccount(view)
      if (!view.project) throw new Error('You are not a member of any project yet. Ask an owner for an invite.')
      await session.refreshMe()
      enterShell()
    },
    onKey(key, project) {
      setKey(key)
      session.me = project
      enterShell()
    },
  })
}

function enterShell() {
  nav.hidden = false
  signOutButton.hidden = false
  // An API key has no account (no password to change).
  accountLink.hidden = !session.user
  showProject()
  if (!location.hash.startsWith('#/') || location.hash === '#/') history.replaceState(null, '', '#/overview')
  route()
}

async function route() {
  if (!signedIn()) return
  const mine = ++shown
  const path = location.hash.startsWith('#/') ? location.hash.slice(1) : '/overview'
  const match = ROUTES.map((r) => ({ r, m: r.pattern.exec(path) })).find((x) => x.m && (!x.r.needs || session.can(x.r.needs)))
  if (cleanup) cleanup()
  cleanup = null
  for (const link of [...nav.querySelectorAll('a'), accountLink]) {
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
    const done = await match.r.page.render(view, pageSession(), { id: params[0], detail: Boolean(match.r.detail), flash })
    // Another page was shown while this one loaded: it stays, and this one stops what it started (polling).
    if (mine !== shown) {
      if (typeof done === 'function') done()
      return
    }
    if (typeof done === 'function') cleanup = done
  } catch (error) {
    if (!signedIn() || mine !== shown) return
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
  error.message = session.user ? `Signed out: ${error.message}` : `Signed out: ${error.message} Sign in again with a valid key.`
  signOut(error)
})

signOutButton.addEventListener('click', () => signOut())
switcher.addEventListener('change', async () => {
  try {
    useAccount(await patch('/v1/session', { project: switcher.value }))
    await session.refreshMe()
    session.go('#/overview')
  } catch (error) {
    replace(main, pageHeading('Something went wrong'), errorBox(error))
  }
})
window.addEventListener('hashchange', () => {
  // An invite link opened in a tab already on the dashboard: the invite page starts from a fresh load, as in a new tab.
  if (INVITE_HASH.test(location.hash)) return location.reload()
  if (location.hash.startsWith('#/')) route()
})
document.getElementById('skip-link').addEventListener('click', (event) => {
  event.preventDefault()
  ;(main.querySelector('h1') ?? main).focus()
})

async function start() {
  const reset = /^#\/reset\/([A-Za-z0-9_-]+)$/.exec(location.hash)
  if (reset) {
    return renderReset(main, reset[1], (email) => {
      history.replaceState(null, '', location.pathname)
      renderSignIn(null, 'Your password is set. Sign in with it.', email)
    })
  }
  const invite = INVITE_HASH.exec(location.hash)
  if (invite) {
    return renderInvite(main, invite[1], {
      onNewAccount(email, projectName) {
        history.replaceState(null, '', location.pathname)
        renderSignIn(null, `You joined ${projectName}. Sign in with your email and password.`, email)
      },
      async onSignedIn(view) {
        history.replaceState(null, '', location.pathname)
        // The session now acts in the joined project; an API key this tab held gives way to it.
        clearKey()
        useAccount(view)
        await session.refreshMe()
        enterShell()
      },
    })
  }
  const key = loadKey()
  if (!key) {
    try {
      useAccount(await get('/v1/session'))
      await session.refreshMe()
      return enterShell()
    } catch {
      session.user = null
      return renderSignIn()
    }
  }
  try {
    await session.refreshMe()
    enterShell()
  } catch (error) {
    if (error.status === 401) return signOut(error)
    renderSignIn(error)
  }
}

start()
