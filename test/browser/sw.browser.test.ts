// Herald's service worker in Chromium, imported by the customer's one-line
// service worker file: pushes delivered to it through the DevTools protocol
// (ServiceWorker.deliverPushMessage, the browser's own push event path) show
// the right notification, fetch: true pushes fetch their content, a broadcast
// is never shown twice, and the real click and close handlers send beacons
// that change the broadcast's counts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, CDPSession, Page, Worker } from 'playwright-core'
import { browserAvailable, launchBrowser, startHerald, startSite, type RunningHerald, type Site } from '../support/browser.ts'
import type { TestProject } from '../support/app.ts'
import { startPushService, type PushService } from '../support/push-service.ts'
import { eventually, fakePushLog, installFakePushManager } from './sdk-helpers.ts'

// Service worker globals, which the DOM library TypeScript checks this file with does not declare.
declare const Clients: { prototype: { openWindow(url: string): Promise<unknown> } }
declare const WindowClient: { prototype: { url: string; focus(): Promise<unknown> } }
declare const ExtendableEvent: new (type: string) => Event
declare const NotificationEvent: new (type: string, init: { notification: Notification }) => Event
type ServiceWorkerGlobalScope = typeof globalThis & { registration: ServiceWorkerRegistration }

interface ShownNotification {
  title: string
  body: string
  icon: string
  image: string
  tag: string
  data: Record<string, unknown> | null
}

describe.skipIf(!browserAvailable)('Herald service worker', () => {
  let herald: RunningHerald
  let site: Site
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let cdp: CDPSession
  let project: TestProject
  let push: PushService
  const registrations = new Map<string, string>() // scope URL → registration id

  const api = async (method: string, path: string, payload?: unknown) => {
    const res = await herald.t.app.inject({ method: method as 'GET', url: path, headers: project.auth, payload: payload as Record<string, unknown> })
    return { status: res.statusCode, body: res.json() }
  }

  async function broadcast(notification: Record<string, unknown>): Promise<string> {
    const sent = await api('POST', '/v1/send', { target: { type: 'all' }, notification })
    expect(sent.status).toBe(202)
    return sent.body.broadcast_id
  }

  beforeAll(async () => {
    herald = await startHerald()
    project = await herald.t.project({ plan: 'hobby' })
    push = await startPushService()
    site = await startSite({
      '/index.html': '<!doctype html><title>Shop</title><h1>Shop</h1>',
      '/sale': '<!doctype html><title>Sale</title><h1>Sale</h1>',
      '/herald-sw.js': `importScripts('${herald.url}/sdk/sw.js')\n`,
      // A site with a service worker of its own: one importScripts line, and its own handlers skip Herald's.
      '/own/index.html': '<!doctype html><title>Own</title><h1>Own</h1>',
      '/own/sw.js': `importScripts('${herald.url}/sdk/sw.js')
self.addEventListener('push', (event) => {
  if (self.HeraldServiceWorker.isHeraldPush(event)) return
  event.waitUntil(self.registration.showNotification('Site: ' + event.data.text(), { tag: 'site-own' }))
})
`,
    })
    browser = await launchBrowser()
    context = await browser.newContext()
    await context.grantPermissions(['notifications'], { origin: site.url })
    page = await context.newPage()
    cdp = await context.newCDPSession(page)
    cdp.on('ServiceWorker.workerRegistrationUpdated', ({ registrations: updated }) => {
      for (const registration of updated) {
        if (registration.isDeleted) registrations.delete(registration.scopeURL)
        else registrations.set(registration.scopeURL, registration.registrationId)
      }
    })
    await cdp.send('ServiceWorker.enable')
    await page.goto(site.url)
    await page.evaluate(async () => {
      await navigator.serviceWorker.register('/herald-sw.js')
      await navigator.serviceWorker.ready
    })
  })

  afterAll(async () => {
    await browser?.close()
    await site?.close()
    await push?.close()
    await herald?.close()
  })

  async function deliver(data: string, scope = `${site.url}/`): Promise<void> {
    const registrationId = await eventually(async () => registrations.get(scope), (id) => id !== undefined)
    await cdp.send('ServiceWorker.deliverPushMessage', { origin: site.url, registrationId: registrationId as string, data })
  }

  async function shown(on: Page = page): Promise<ShownNotification[]> {
    return on.evaluate(async () => {
      const registration = await navigator.serviceWorker.getRegistration(location.pathname.startsWith('/own/') ? '/own/' : '/')
      const list = await registration!.getNotifications()
      return list.map((n) => ({ title: n.title, body: n.body, icon: n.icon, image: (n as Notification & { image: string }).image, tag: n.tag, data: n.data }))
    })
  }

  async function closeAll(on: Page = page): Promise<void> {
    await on.evaluate(async () => {
      const registration = await navigator.serviceWorker.getRegistration(location.pathname.startsWith('/own/') ? '/own/' : '/')
      for (const n of await registration!.getNotifications()) n.close()
    })
  }

  async function waitForTag(tag: string, on: Page = page): Promise<ShownNotification> {
    const list = await eventually(() => shown(on), (all) => all.some((n) => n.tag === tag))
    return list.find((n) => n.tag === tag)!
  }

  function serviceWorker(path = '/herald-sw.js'): Promise<Worker> {
    return eventually(async () => context.serviceWorkers().find((w) => w.url() === `${site.url}${path}`), (w) => w !== undefined) as Promise<Worker>
  }

  async function counts(id: string) {
    const { body } = await api('GET', `/v1/broadcasts/${id}`)
    return { clicked: body.clicked as number, dismissed: body.dismissed as number }
  }

  it('shows a push as its notification: title, body, icon, image, tag and data', async () => {
    const id = await broadcast({ title: 'Sale', body: 'Half off today', url: '/sale', icon: 'https://cdn.example.com/icon.png', image: 'https://cdn.example.com/banner.png' })
    await deliver(JSON.stringify({ v: 1, project_id: project.id, broadcast_id: id, title: 'Sale', body: 'Half off today', icon: 'https://cdn.example.com/icon.png', image: 'https://cdn.example.com/banner.png', url: '/sale' }))
    const notification = await waitForTag(id)
    expect(notification).toEqual({
      title: 'Sale',
      body: 'Half off today',
      icon: 'https://cdn.example.com/icon.png',
      image: 'https://cdn.example.com/banner.png',
      tag: id,
      data: { herald: 1, broadcast_id: id, project_id: project.id, url: `${site.url}/sale` },
    })
    await closeAll()
  })

  it('fetches the content of a fetch: true push from Herald before showing it', async () => {
    const id = await broadcast({ title: 'Long read', body: 'x'.repeat(2000), url: 'https://shop.example.com/blog' })
    await deliver(JSON.stringify({ v: 1, project_id: project.id, broadcast_id: id, fetch: true }))
    const notification = await waitForTag(id)
    expect(notification).toMatchObject({ title: 'Long read', body: 'x'.repeat(2000), data: { broadcast_id: id, url: 'https://shop.example.com/blog' } })
    await closeAll()
  })

  it('still shows a notification when the content cannot be fetched', async () => {
    const missing = 'bdc_0000000000zzzzzzzzzzzzzzzz'
    await deliver(JSON.stringify({ v: 1, project_id: project.id, broadcast_id: missing, fetch: true }))
    const notification = await waitForTag(missing)
    expect(notification).toMatchObject({ title: 'localhost', body: 'You have a new notification.', data: { broadcast_id: missing, url: `${site.url}/` } })
    await closeAll()
  })

  it('never shows the same broadcast twice in one browser', async () => {
    const id = await broadcast({ title: 'Once', body: 'Only once' })
    const payload = JSON.stringify({ v: 1, project_id: project.id, broadcast_id: id, title: 'Once', body: 'Only once', url: '/' })
    await deliver(payload)
    await waitForTag(id)
    await closeAll() // the visitor dismissed it; the same broadcast arrives again (a retried push)
    await deliver(payload)
    // A later broadcast shows: by then the repeat has been handled.
    const later = await broadcast({ title: 'Later', body: 'Another one' })
    await deliver(JSON.stringify({ v: 1, project_id: project.id, broadcast_id: later, title: 'Later', body: 'Another one', url: '/' }))
    await waitForTag(later)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await shown()).map((n) => n.tag)).toEqual([later])
    await closeAll()
  })

  it('on click: beacons clicked, and opens the url (or focuses the tab already there); on close: beacons dismissed', async () => {
    const id = await broadcast({ title: 'Click me', body: 'Go to the sale', url: '/sale' })
    await deliver(JSON.stringify({ v: 1, project_id: project.id, broadcast_id: id, title: 'Click me', body: 'Go to the sale', url: '/sale' }))
    await waitForTag(id)
    expect(await counts(id)).toEqual({ clicked: 0, dismissed: 0 })

    const worker = await serviceWorker()
    // Records what the handler asks of the window clients, then lets the real call through.
    // (No DevTools command clicks a notification, and Chromium refuses to open or
    // focus a window from a click dispatched by script, which carries no user
    // gesture: so the test checks what the real handler asked for.)
    await worker.evaluate(() => {
      const calls: string[] = []
      ;(self as unknown as { __calls: string[] }).__calls = calls
      const openWindow = Clients.prototype.openWindow
      Clients.prototype.openWindow = function (url: string) {
        calls.push(`open ${url}`)
        return openWindow.call(this, url)
      }
      const focus = WindowClient.prototype.focus
      WindowClient.prototype.focus = function () {
        calls.push(`focus ${this.url}`)
        return focus.call(this)
      }
    })
    const dispatch = (type: string, tag: string) => worker.evaluate(async ({ type, tag }) => {
      const [notification] = await (self as unknown as ServiceWorkerGlobalScope).registration.getNotifications({ tag })
      self.dispatchEvent(new NotificationEvent(type, { notification }))
    }, { type, tag })

    await dispatch('notificationclick', id)
    await eventually(() => counts(id), (c) => c.clicked === 1)
    const calls = () => worker.evaluate(() => (self as unknown as { __calls: string[] }).__calls)
    expect(await eventually(calls, (c) => c.length > 0)).toEqual([`open ${site.url}/sale`])
    expect(await shown()).toEqual([]) // the click closed it

    // A tab is already at the url: it is focused instead of a new one opened.
    const home = await broadcast({ title: 'Home', body: 'Back home', url: '/' })
    await deliver(JSON.stringify({ v: 1, project_id: project.id, broadcast_id: home, title: 'Home', body: 'Back home', url: '/' }))
    await waitForTag(home)
    await dispatch('notificationclick', home)
    await eventually(() => counts(home), (c) => c.clicked === 1)
    expect(await eventually(calls, (c) => c.length > 1)).toEqual([`open ${site.url}/sale`, `focus ${site.url}/`])

    // Close: dismissed, once.
    const closing = await broadcast({ title: 'Dismiss me', body: 'Close it' })
    await deliver(JSON.stringify({ v: 1, project_id: project.id, broadcast_id: closing, title: 'Dismiss me', body: 'Close it', url: '/' }))
    await waitForTag(closing)
    await dispatch('notificationclose', closing)
    expect(await eventually(() => counts(closing), (c) => c.dismissed === 1)).toEqual({ clicked: 0, dismissed: 1 })
    expect(await counts(id)).toEqual({ clicked: 1, dismissed: 0 })
  })

  it("coexists with a site's own service worker: each side handles only its own pushes", async () => {
    const own = await context.newPage()
    try {
      await own.goto(`${site.url}/own/index.html`)
      await own.evaluate(async () => {
        await navigator.serviceWorker.register('/own/sw.js', { scope: '/own/' })
        await navigator.serviceWorker.ready
      })
      const id = await broadcast({ title: 'From Herald', body: 'Hello' })
      await deliver(JSON.stringify({ v: 1, project_id: project.id, broadcast_id: id, title: 'From Herald', body: 'Hello', url: '/' }), `${site.url}/own/`)
      await waitForTag(id, own)
      await deliver('site news', `${site.url}/own/`)
      await waitForTag('site-own', own)
      const all = await shown(own)
      expect(all.map((n) => [n.tag, n.title]).sort()).toEqual([[id, 'From Herald'], ['site-own', 'Site: site news']])

      // Closing the site's own notification sends no beacon; closing Herald's sends one.
      const worker = await serviceWorker('/own/sw.js')
      await worker.evaluate(() => {
        const sent: string[] = []
        ;(self as unknown as { __beacons: string[] }).__beacons = sent
        const original = self.fetch
        self.fetch = (input, init) => {
          if (String(input).includes('/v1/events')) sent.push(String(init?.body))
          return original(input, init)
        }
      })
      const close = (tag: string) => worker.evaluate(async (tag) => {
        const [notification] = await (self as unknown as ServiceWorkerGlobalScope).registration.getNotifications({ tag })
        self.dispatchEvent(new NotificationEvent('notificationclose', { notification }))
      }, tag)
      await close('site-own')
      await close(id)
      await eventually(() => counts(id), (c) => c.dismissed === 1)
      expect(await worker.evaluate(() => (self as unknown as { __beacons: string[] }).__beacons)).toEqual([JSON.stringify({ type: 'dismissed', broadcast_id: id })])
      await closeAll(own)
    } finally {
      await own.close()
    }
  })

  it('on pushsubscriptionchange: subscribes again with the same key, tells Herald the new endpoint and drops the old one', async () => {
    const [first, second, third] = [0, 1, 2].map(() => push.createSubscription({ applicationServerKey: project.vapidPublic }))
    const group = await api('POST', '/v1/groups', { name: 'renewed' })
    await page.addScriptTag({ url: `${herald.url}/sdk/herald.js` })
    await page.evaluate(installFakePushManager, [first])
    const firstId = await page.evaluate(({ projectId, groupId }) => {
      window.Herald.init({ project: projectId })
      return window.Herald.subscribe({ externalId: 'user_9', groupIds: [groupId] })
    }, { projectId: project.id, groupId: group.body.id })

    const worker = await serviceWorker()
    await worker.evaluate(installFakePushManager, [second, third])
    // The browser's event, dispatched to the real handler: Firefox passes the old
    // subscription, Chromium may pass neither (then the stored record is used).
    const change = (old: { endpoint: string; key: string } | null) => worker.evaluate((old) => {
      const event = new ExtendableEvent('pushsubscriptionchange')
      const oldSubscription = old && {
        endpoint: old.endpoint,
        options: { applicationServerKey: Uint8Array.from(atob(old.key.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0)).buffer },
      }
      Object.defineProperty(event, 'oldSubscription', { value: oldSubscription })
      Object.defineProperty(event, 'newSubscription', { value: null })
      self.dispatchEvent(event)
    }, old)
    const devices = async () => {
      const list = (await api('GET', '/v1/subscribers?external_id=user_9')).body.subscribers as { id: string; endpoint: string; status: string; group_ids: string[] }[]
      return Object.fromEntries(list.map((s) => [s.endpoint, { status: s.status, group_ids: s.group_ids }]))
    }
    const active = { status: 'active', group_ids: [group.body.id] }
    const gone = { status: 'unsubscribed', group_ids: [group.body.id] }

    await change({ endpoint: first.endpoint, key: project.vapidPublic })
    expect(await eventually(devices, (d) => d[first.endpoint]?.status === 'unsubscribed' && d[second.endpoint] !== undefined))
      .toEqual({ [first.endpoint]: gone, [second.endpoint]: active })
    expect((await fakePushLog(worker)).subscribeKeys).toEqual([project.vapidPublic])

    // Pushes now reach the new endpoint only.
    const sent = await api('POST', '/v1/send', { target: { type: 'user', external_id: 'user_9' }, notification: { title: 'Renewed', body: 'Still here' } })
    await eventually(async () => push.receivedFor(second.endpoint).length, (n) => n === 1)
    expect(push.receivedFor(second.endpoint)[0].payload).toMatchObject({ broadcast_id: sent.body.broadcast_id, title: 'Renewed' })
    expect(push.receivedFor(first.endpoint)).toEqual([])

    await change(null)
    expect(await eventually(devices, (d) => d[second.endpoint]?.status === 'unsubscribed' && d[third.endpoint] !== undefined))
      .toEqual({ [first.endpoint]: gone, [second.endpoint]: gone, [third.endpoint]: active })
    expect((await fakePushLog(worker)).subscribeKeys).toEqual([project.vapidPublic, project.vapidPublic])
    expect(firstId).toMatch(/^sub_/)
  })
})
