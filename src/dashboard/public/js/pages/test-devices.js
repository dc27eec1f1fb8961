// "Send a test to me" (issue 25, docs/first-use.md). The dashboard is served by
// Herald, which also serves the service worker (/sdk/sw.js): this browser
// registers it (scope /sdk/, so it never controls the dashboard's pages),
// subscribes with the project's VAPID key through the browser's Push API and
// hands the subscription to POST /v1/test-devices as one of the signed-in
// member's test devices. A test device is never a subscriber; a test is a
// broadcast (source dashboard) to the member's own test devices only.
import { del, get, post } from '../api.js'
import { h, replace, shortTime } from '../dom.js'
import { confirmButton, errorBox, okBox, show, table } from '../ui.js'

const WORKER = '/sdk/sw.js'
/**
 * One registration per project (a scope under the worker's folder): a push
 * subscription belongs to its registration, and one made with another
 * project's key would be unsubscribed to make this one, taking that
 * project's test device with it.
 */
const scopeOf = (projectId) => `/sdk/test-devices/${projectId}/`

function bytesOf(base64url) {
  const text = atob(base64url.replace(/-/g, '+').replace(/_/g, '/'))
  return Uint8Array.from(text, (c) => c.charCodeAt(0))
}

function sameKey(a, b) {
  if (!a || a.byteLength !== b.byteLength) return false
  const x = new Uint8Array(a)
  return x.every((byte, i) => byte === b[i])
}

/** "Chrome on Linux", from the user agent: only a name for the member's list. */
export function browserLabel(ua = navigator.userAgent) {
  const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /Chrome\//.test(ua) ? 'Chrome' : /Safari\//.test(ua) ? 'Safari' : 'Browser'
  const system = /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Mac OS X/.test(ua) ? 'macOS' : /Windows/.test(ua) ? 'Windows' : /Linux/.test(ua) ? 'Linux' : ''
  return system ? `${browser} on ${system}` : browser
}

/** The worker once active (a first registration installs it first). */
function activeWorker(registration) {
  if (registration.active) return Promise.resolve(registration.active)
  const worker = registration.installing ?? registration.waiting
  return new Promise((resolve, reject) => {
    worker.addEventListener('statechange', () => {
      if (worker.state === 'activated') resolve(worker)
      else if (worker.state === 'redundant') reject(new Error('The service worker could not be installed.'))
    })
  })
}

/** Subscribes this browser with the project's key and records it as the member's test device. */
export async function addThisBrowser(me) {
  if (!('serviceWorker' in navigator) || typeof PushManager === 'undefined') throw new Error('This browser cannot receive web push notifications.')
  const permission = await Notification.requestPermission()
  if (permission !== 'granted') throw new Error("Notifications are blocked for this site: allow them in the browser's site settings, then try again.")
  const registration = await navigator.serviceWorker.register(WORKER, { scope: scopeOf(me.id) })
  await activeWorker(registration)
  const key = bytesOf(me.vapid_public)
  let subscription = await registration.pushManager.getSubscription()
  // Made with another key (this project's keys were rotated): a push service refuses a second key for one subscription.
  if (subscription && !sameKey(subscription.options?.applicationServerKey, key)) {
    await subscription.unsubscribe()
    subscription = null
  }
  subscription ??= await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key })
  const json = subscription.toJSON()
  return post('/v1/test-devices', { endpoint: json.endpoint, keys: { p256dh: json.keys.p256dh, auth: json.keys.auth }, label: browserLabel() })
}

/** "Send a test to me": the notification given (a draft), or Herald's fixed test message. */
export function sendTest(notification) {
  return post('/v1/test-devices/send', notification ? { notification } : {})
}

/** The button for the compose page: sends what `draft()` returns (null: the fixed message) to the member's test devices. */
export function sendTestButton(session, draft, slot) {
  if (!session.user || !session.can('test_devices:use')) return null
  return h('button', { type: 'button', class: 'secondary', id: 'send-test-button', onclick: async (event) => {
    const button = event.currentTarget
    button.disabled = true
    show(slot, null)
    try {
      const sent = await sendTest(draft())
      show(slot, okBox(`Test sent to your ${sent.audience === 1 ? 'test device' : `${sent.audience} test devices`}.`))
    } catch (error) {
      show(slot, errorBox(error))
    } finally {
      button.disabled = false
    }
  } }, 'Send a test to me')
}

/** The overview's card: the member's test devices, "Use this browser", Remove, and "Send a test to me". */
export async function testDevicesCard(session) {
  if (!session.user || !session.can('test_devices:use')) return null
  const slot = h('div', { class: 'slot' })
  const list = h('div', { id: 'test-device-list' })
  async function load() {
    const { test_devices: devices } = await get('/v1/test-devices')
    replace(list, table('Your test devices', ['Device', 'Added', 'Last delivered', ''],
      devices.map((d) => h('tr', { 'data-test-device-id': d.id },
        h('td', {}, d.label, d.consecutive_failures > 0 ? h('span', { class: 'muted small' }, ` (last ${d.consecutive_failures} failed: remove it and add the browser again)`) : null),
        h('td', { class: 'when' }, shortTime(d.created_at)),
        h('td', { class: 'when' }, d.last_delivered_at === null ? h('span', { class: 'muted' }, 'never') : shortTime(d.last_delivered_at)),
        h('td', {}, confirmButton('Remove', `Remove ${d.label} from your test devices?`, async () => {
          try {
            await del(`/v1/test-devices/${d.id}`)
            await run(`${d.label} removed.`)
          } catch (error) {
            show(slot, errorBox(error))
          }
        })),
      )), { emptyText: 'None yet: add this browser to receive your tests.' }))
    return devices
  }
  async function run(message) {
    try {
      await load()
      show(slot, message ? okBox(message) : null)
    } catch (error) {
      show(slot, errorBox(error))
    }
  }
  const action = (label, id, work) => h('button', { type: 'button', class: 'secondary', id, onclick: async (event) => {
    const button = event.currentTarget
    button.disabled = true
    show(slot, null)
    try {
      await run(await work())
    } catch (error) {
      show(slot, errorBox(error))
    } finally {
      button.disabled = false
    }
  } }, label)
  await load()
  return h('section', { class: 'card', id: 'test-devices', 'aria-labelledby': 'test-devices-title' },
    h('h2', { id: 'test-devices-title' }, 'Send a test to me'),
    h('p', { class: 'hint' }, "Your own browsers, to see a notification as your subscribers will. They are never subscribers: no broadcast, count or export includes them, and nobody else can send to them."),
    list,
    h('div', { class: 'row-form' },
      action('Use this browser as a test device', 'add-test-device', async () => {
        const device = await addThisBrowser(session.me)
        return `${device.label} is one of your test devices.`
      }),
      ' ',
      action('Send a test to me', 'send-test', async () => {
        const sent = await sendTest(null)
        return `Test sent to your ${sent.audience === 1 ? 'test device' : `${sent.audience} test devices`}.`
      }),
    ),
    slot)
}
