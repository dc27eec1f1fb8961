// The browser SDK on a customer's page, in Chromium: loaded by script tag and
// as an ES module from Herald's origin, it asks nothing on load, subscribes
// through PushManager with the project's VAPID key (the one stand-in: see
// sdk-helpers.ts), stores the subscription in Herald, and a POST /v1/send then
// reaches that subscription on the local push service, decrypted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { browserAvailable, launchBrowser, startHerald, startSite, type RunningHerald, type Site } from '../support/browser.ts'
import type { TestProject } from '../support/app.ts'
import { startPushService, type PushService } from '../support/push-service.ts'
import { eventually, fakePushLog, installFakePushManager } from './sdk-helpers.ts'

describe.skipIf(!browserAvailable)('browser SDK on a customer page', () => {
  let herald: RunningHerald
  let site: Site
  let browser: Browser
  let push: PushService
  let project: TestProject

  const api = async (method: string, path: string, payload?: unknown) => {
    const res = await herald.t.app.inject({ method: method as 'GET', url: path, headers: project.auth, payload: payload as Record<string, unknown> })
    return { status: res.statusCode, body: res.json() }
  }

  beforeAll(async () => {
    herald = await startHerald()
    project = await herald.t.project()
    push = await startPushService()
    site = await startSite({
      '/index.html': `<!doctype html><title>Shop</title><script src="${herald.url}/sdk/herald.js"></script><h1>Shop</h1>`,
      '/module.html': `<!doctype html><title>Shop</title><script type="module">
        import * as all from '${herald.url}/sdk/herald.mjs'
        import Herald, { subscribe, isSubscribed } from '${herald.url}/sdk/herald.mjs'
        window.HeraldModule = { Herald, subscribe, isSubscribed, exports: Object.keys(all).sort(), same: Herald === window.Herald }
      </script><h1>Shop</h1>`,
      '/herald-sw.js': `importScripts('${herald.url}/sdk/sw.js')\n`,
    })
    browser = await launchBrowser()
  })

  afterAll(async () => {
    await browser?.close()
    await site?.close()
    await push?.close()
    await herald?.close()
  })

  async function openPage(
    path: string,
    options: { grant: boolean; subscriptions?: ReturnType<PushService['createSubscription']>[]; realPushManager?: boolean; timezoneId?: string },
  ): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext(options.timezoneId ? { timezoneId: options.timezoneId } : {})
    if (options.grant) await context.grantPermissions(['notifications'], { origin: site.url })
    const page = await context.newPage()
    await page.addInitScript(() => {
      // Counts permission prompts, to show the SDK asks only when called.
      const original = Notification.requestPermission.bind(Notification)
      ;(window as unknown as { __prompts: number }).__prompts = 0
      Notification.requestPermission = (...args: Parameters<typeof original>) => {
        ;(window as unknown as { __prompts: number }).__prompts++
        return original(...args)
      }
    })
    if (!options.realPushManager) await page.addInitScript(installFakePushManager, options.subscriptions ?? [])
    await page.goto(`${site.url}${path}`)
    return { context, page }
  }

  it('by script tag: asks nothing on load, subscribes on request, and a send reaches the subscription', async () => {
    const group = await api('POST', '/v1/groups', { name: 'news' })
    const subscription = push.createSubscription({ applicationServerKey: project.vapidPublic })
    const { context, page } = await openPage('/', { grant: true, subscriptions: [subscription] })
    try {
      await page.evaluate((projectId) => window.Herald.init({ project: projectId }), project.id)
      expect(await page.evaluate(() => (window as unknown as { __prompts: number }).__prompts)).toBe(0)
      expect(await page.evaluate(() => window.Herald.isSubscribed())).toBe(false)

      const id = await page.evaluate((groupId) => window.Herald.subscribe({ externalId: 'user_7', groupIds: [groupId] }), group.body.id)
      expect(id).toMatch(/^sub_/)
      expect(await page.evaluate(() => (window as unknown as { __prompts: number }).__prompts)).toBe(1)
      expect(await page.evaluate(() => window.Herald.permission)).toBe('granted')
      expect(await page.evaluate(() => window.Herald.isSubscribed())).toBe(true)
      // PushManager got the project's VAPID key, and a real service worker is registered for the site.
      expect((await fakePushLog(page)).subscribeKeys).toEqual([project.vapidPublic])
      expect(await page.evaluate(async () => (await navigator.serviceWorker.getRegistration('/herald-sw.js'))?.active?.scriptURL)).toBe(`${site.url}/herald-sw.js`)

      const row = await api('GET', `/v1/subscribers/${id}`)
      expect(row.status).toBe(200)
      expect(row.body).toMatchObject({ id, endpoint: subscription.endpoint, external_id: 'user_7', status: 'active', group_ids: [group.body.id] })

      const sent = await api('POST', '/v1/send', { target: { type: 'user', external_id: 'user_7' }, notification: { title: 'Sale', body: 'Half off', url: '/sale' } })
      expect(sent.status).toBe(202)
      const received = await eventually(async () => push.receivedFor(subscription.endpoint), (pushes) => pushes.length > 0)
      expect(received[0].payload).toEqual({ v: 1, project_id: project.id, broadcast_id: sent.body.broadcast_id, title: 'Sale', body: 'Half off', url: '/sale' })

      await page.evaluate(() => window.Herald.unsubscribe())
      expect((await fakePushLog(page)).unsubscribed).toEqual([subscription.endpoint])
      expect((await api('GET', `/v1/subscribers/${id}`)).body.status).toBe('unsubscribed')
      expect(await page.evaluate(() => window.Herald.isSubscribed())).toBe(false)
    } finally {
      await context.close()
    }
  })

  it('as an ES module: the same SDK, imported cross-origin', async () => {
    const subscription = push.createSubscription({ applicationServerKey: project.vapidPublic })
    const { context, page } = await openPage('/module.html', { grant: true, subscriptions: [subscription] })
    try {
      await page.waitForFunction(() => 'HeraldModule' in window)
      // The exports herald.d.ts declares, and the same object as the script tag's.
      expect(await page.evaluate(() => (window as unknown as { HeraldModule: { exports: string[]; same: boolean } }).HeraldModule))
        .toMatchObject({ exports: ['default', 'getPermission', 'init', 'isSubscribed', 'migrate', 'subscribe', 'unsubscribe'], same: true })
      const id = await page.evaluate(async (projectId) => {
        const { Herald, subscribe } = (window as unknown as { HeraldModule: { Herald: typeof window.Herald; subscribe: typeof window.Herald.subscribe } }).HeraldModule
        Herald.init({ project: projectId })
        return subscribe()
      }, project.id)
      expect(id).toMatch(/^sub_/)
      const row = await api('GET', `/v1/subscribers/${id}`)
      expect(row.body).toMatchObject({ endpoint: subscription.endpoint, external_id: null, status: 'active', group_ids: [] })
    } finally {
      await context.close()
    }
  })

  it('subscribing twice in one browser keeps one subscriber', async () => {
    const subscription = push.createSubscription({ applicationServerKey: project.vapidPublic })
    const { context, page } = await openPage('/', { grant: true, subscriptions: [subscription] })
    try {
      const ids = await page.evaluate(async (projectId) => {
        window.Herald.init({ project: projectId })
        return [await window.Herald.subscribe(), await window.Herald.subscribe({ externalId: 'user_8' })]
      }, project.id)
      expect(ids[1]).toBe(ids[0])
      expect((await fakePushLog(page)).subscribeKeys).toHaveLength(1)
      expect((await api('GET', `/v1/subscribers/${ids[0]}`)).body.external_id).toBe('user_8')
    } finally {
      await context.close()
    }
  })

  it("records the browser's time zone at subscribe, and the new one once the device's zone changed (issue 24)", async () => {
    const subscription = push.createSubscription({ applicationServerKey: project.vapidPublic })
    const { context, page } = await openPage('/', { grant: true, subscriptions: [subscription], timezoneId: 'Asia/Tokyo' })
    try {
      const id = await page.evaluate(async (projectId) => {
        window.Herald.init({ project: projectId })
        return window.Herald.subscribe({ tags: { plan: 'pro' } })
      }, project.id)
      expect((await api('GET', `/v1/subscribers/${id}`)).body).toMatchObject({ timezone: 'Asia/Tokyo', tags: { plan: 'pro' } })
      // The same zone: isSubscribed() sends nothing more.
      expect(await page.evaluate(() => window.Herald.isSubscribed())).toBe(true)
      // The device travels: its clock now says Europe/Paris.
      const subscribed = await page.evaluate(() => {
        const original = Intl.DateTimeFormat.prototype.resolvedOptions
        Intl.DateTimeFormat.prototype.resolvedOptions = function () {
          return { ...original.call(this), timeZone: 'Europe/Paris' }
        }
        return window.Herald.isSubscribed()
      })
      expect(subscribed).toBe(true)
      const row = (await api('GET', `/v1/subscribers/${id}`)).body
      expect(row).toMatchObject({ timezone: 'Europe/Paris', tags: { plan: 'pro' }, status: 'active' })
    } finally {
      await context.close()
    }
  })

  it('subscribes with tags: stored typed, merged on a repeat, and a segment send reaches it', async () => {
    const subscription = push.createSubscription({ applicationServerKey: project.vapidPublic })
    const { context, page } = await openPage('/', { grant: true, subscriptions: [subscription] })
    try {
      const ids = await page.evaluate(async (projectId) => {
        window.Herald.init({ project: projectId })
        const first = await window.Herald.subscribe({ tags: { plan: 'pro', age: 10, vip: true } })
        return [first, await window.Herald.subscribe({ tags: { age: 11, lang: 'fr' } })]
      }, project.id)
      expect(ids[1]).toBe(ids[0])
      expect((await api('GET', `/v1/subscribers/${ids[0]}`)).body.tags).toEqual({ plan: 'pro', age: 11, vip: true, lang: 'fr' })

      const bad = await page.evaluate(async () => {
        try {
          await window.Herald.subscribe({ tags: { 'not a key': 1 } })
          return null
        } catch (error) {
          return (error as { code?: string }).code
        }
      })
      expect(bad).toBe('invalid_request')

      const filter = { and: [{ tag: 'age', gt: 10 }, { tag: 'vip', eq: true }] }
      const sent = await api('POST', '/v1/send', { target: { type: 'segment', filter }, notification: { title: 'Tagged', body: 'For you' } })
      expect(sent.status).toBe(202)
      const received = await eventually(async () => push.receivedFor(subscription.endpoint), (pushes) => pushes.length > 0)
      expect(received[0].payload).toMatchObject({ broadcast_id: sent.body.broadcast_id, title: 'Tagged' })
    } finally {
      await context.close()
    }
  })

  it("records navigator.language at subscribe, and a changed one on the next init (issue 24)", async () => {
    const subscription = push.createSubscription({ applicationServerKey: project.vapidPublic })
    const { context, page } = await openPage('/', { grant: true, subscriptions: [subscription] })
    try {
      const setLanguage = (language: string) => page.evaluate((value) => Object.defineProperty(Navigator.prototype, 'language', { get: () => value, configurable: true }), language)
      await setLanguage('pt-br')
      const id = await page.evaluate(async (projectId) => {
        window.Herald.init({ project: projectId })
        return window.Herald.subscribe()
      }, project.id)
      expect((await api('GET', `/v1/subscribers/${id}`)).body.locale).toBe('pt-BR')
      // The visitor switched the browser to French; the next page load (init) records it, asking nothing.
      await setLanguage('fr-CA')
      await page.evaluate(async (projectId) => {
        window.Herald.init({ project: projectId })
        await window.Herald.ready
      }, project.id)
      expect((await api('GET', `/v1/subscribers/${id}`)).body.locale).toBe('fr-CA')
      expect(await page.evaluate(() => (window as unknown as { __prompts: number }).__prompts)).toBe(1)
    } finally {
      await context.close()
    }
  })

  it('throws clear errors: permission refused, unknown project, not initialised', async () => {
    const { context, page } = await openPage('/', { grant: false })
    try {
      const outcome = (code: string) => page.evaluate(async (run) => {
        try {
          await new Function(`return ${run}`)()
          return 'resolved'
        } catch (error) {
          const e = error as Error & { code?: string; status?: number | null }
          return { name: e.name, code: e.code, status: e.status, isError: e instanceof Error, message: e.message }
        }
      }, code)
      expect(await outcome('window.Herald.subscribe()')).toMatchObject({ isError: true, code: 'not_initialized' })
      await page.evaluate(() => window.Herald.init({ project: 'prj_00000000000000000000000000' }))
      // Headless Chromium answers a prompt nobody can see with "denied".
      const denied = await outcome('window.Herald.subscribe()')
      expect(denied).toMatchObject({ isError: true, name: 'HeraldError', code: 'permission_denied' })
      expect(await page.evaluate(() => window.Herald.permission)).not.toBe('granted')
    } finally {
      await context.close()
    }

    const granted = await openPage('/', { grant: true })
    try {
      const error = await granted.page.evaluate(async () => {
        window.Herald.init({ project: 'prj_00000000000000000000000000' })
        try {
          await window.Herald.subscribe()
          return null
        } catch (e) {
          return { code: (e as { code: string }).code, status: (e as { status: number }).status, message: (e as Error).message }
        }
      })
      expect(error).toMatchObject({ code: 'project_not_found', status: 404 })
    } finally {
      await granted.context.close()
    }
  })

  it('turns what the browser rejects with (DOMExceptions, numeric codes) into string codes, keeping the cause', async () => {
    // subscribe()'s failure as the page sees it: code, its type, and the browser's own error.
    const failure = (page: Page) => page.evaluate(async (projectId) => {
      window.Herald.init({ project: projectId })
      try {
        await window.Herald.subscribe()
        return null
      } catch (error) {
        const e = error as Error & { code: unknown; cause?: { name?: string; code?: unknown } }
        return { name: e.name, code: e.code, type: typeof e.code, causeName: e.cause?.name, causeCode: e.cause?.code }
      }
    }, project.id)

    // The real PushManager: headless Chromium has no push service, and rejects with AbortError (legacy code 20).
    const real = await openPage('/', { grant: true, realPushManager: true })
    try {
      expect(await failure(real.page)).toEqual({ name: 'HeraldError', code: 'push_service_failed', type: 'string', causeName: 'AbortError', causeCode: 20 })
    } finally {
      await real.context.close()
    }

    // A push service that refuses permission (NotAllowedError, legacy code 0).
    const refused = await openPage('/', { grant: true })
    try {
      await refused.page.evaluate(() => {
        PushManager.prototype.subscribe = async () => {
          throw new DOMException('Registration failed - permission denied', 'NotAllowedError')
        }
      })
      expect(await failure(refused.page)).toMatchObject({ code: 'permission_denied', type: 'string', causeName: 'NotAllowedError' })
    } finally {
      await refused.context.close()
    }

    // IndexedDB unavailable (as in some private modes): the subscription is made, the SDK cannot keep its record.
    const subscription = push.createSubscription({ applicationServerKey: project.vapidPublic })
    const noStorage = await openPage('/', { grant: true, subscriptions: [subscription] })
    try {
      await noStorage.page.evaluate(() => {
        indexedDB.open = () => {
          throw new DOMException('The user denied permission to access the database.', 'InvalidStateError')
        }
      })
      expect(await failure(noStorage.page)).toMatchObject({ code: 'storage_failed', type: 'string', causeName: 'InvalidStateError', causeCode: 11 })
    } finally {
      await noStorage.context.close()
    }
  })

  it("a subscription made with another project's key is replaced, not reused", async () => {
    const other = await herald.t.project({ name: 'Other shop' })
    const forOther = push.createSubscription({ applicationServerKey: other.vapidPublic })
    const forProject = push.createSubscription({ applicationServerKey: project.vapidPublic })
    const { context, page } = await openPage('/', { grant: true, subscriptions: [forOther, forProject] })
    try {
      const ids = await page.evaluate(async ({ first, second }) => {
        window.Herald.init({ project: first })
        const a = await window.Herald.subscribe()
        window.Herald.init({ project: second })
        return [a, await window.Herald.subscribe()]
      }, { first: other.id, second: project.id })
      const log = await fakePushLog(page)
      expect(log.subscribeKeys).toEqual([other.vapidPublic, project.vapidPublic])
      expect(log.unsubscribed).toEqual([forOther.endpoint])
      expect((await api('GET', `/v1/subscribers/${ids[1]}`)).body.endpoint).toBe(forProject.endpoint)
      // The SDK named the old subscription in replaces (issue 23); it is the other project's, so nothing moved and it stays active there.
      expect((await herald.t.app.inject({ method: 'GET', url: `/v1/subscribers/${ids[0]}`, headers: other.auth })).json()).toMatchObject({ status: 'active', endpoint: forOther.endpoint })

      // unsubscribe() for the first project now leaves the second project's subscription alone.
      await page.evaluate(async (first) => {
        window.Herald.init({ project: first })
        await window.Herald.unsubscribe()
      }, other.id)
      expect((await fakePushLog(page)).unsubscribed).toEqual([forOther.endpoint])
      expect((await api('GET', `/v1/subscribers/${ids[1]}`)).body.status).toBe('active')
      expect(await page.evaluate(async (second) => {
        window.Herald.init({ project: second })
        return window.Herald.isSubscribed()
      }, project.id)).toBe(true)
    } finally {
      await context.close()
    }
  })

  it('says so in a browser without web push', async () => {
    const context = await browser.newContext()
    const page = await context.newPage()
    try {
      await page.addInitScript(() => {
        delete (window as unknown as { PushManager?: unknown }).PushManager
      })
      await page.goto(site.url)
      const result = await page.evaluate(async (projectId) => {
        window.Herald.init({ project: projectId })
        const error = await window.Herald.subscribe().catch((e: { code: string }) => e.code)
        return { permission: window.Herald.permission, subscribed: await window.Herald.isSubscribed(), error }
      }, project.id)
      expect(result).toEqual({ permission: 'unsupported', subscribed: false, error: 'unsupported' })
    } finally {
      await context.close()
    }
  })
})
