// Moving in and out (issue 23) in Chromium: the dashboard's Export and
// Import on the subscribers page, and the SDK's migrate mode: a visitor who granted
// permission and is subscribed with another application server key (a
// previous provider's) loads a page with Herald.init({ migrate }), and ends
// with exactly one active subscription under the project's key, without a
// permission prompt. PushManager is the stand-in of sdk-helpers.ts (headless
// Chromium has no push service); the local push service then refuses any push
// whose VAPID key is not the one the subscription was made with, so a push
// arriving proves the new subscription is under the project's key.
import { createECDH } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { browserAvailable, launchBrowser, startHerald, startSite, type RunningHerald, type Site, signInWithApiKey } from '../support/browser.ts'
import type { TestProject } from '../support/app.ts'
import { startPushService, type PushService, type TestSubscription } from '../support/push-service.ts'
import { eventually, fakePushLog, installFakePushManager } from './sdk-helpers.ts'
import { addMember, PASSWORD } from '../support/members.ts'
import { readFile } from 'node:fs/promises'

/** A previous provider's application server key: a P-256 public key that is not the project's. */
function foreignKey(): string {
  const ecdh = createECDH('prime256v1')
  ecdh.generateKeys()
  return ecdh.getPublicKey().toString('base64url')
}

describe.skipIf(!browserAvailable)('SDK migrate mode in Chromium', () => {
  let herald: RunningHerald
  let site: Site
  let browser: Browser
  let push: PushService

  beforeAll(async () => {
    herald = await startHerald()
    push = await startPushService()
    site = await startSite({
      // The previous provider's page and worker, at the usual scope '/'.
      '/old.html': `<!doctype html><title>Shop</title><script>navigator.serviceWorker.register('/old-sw.js').then(() => navigator.serviceWorker.ready).then(() => { window.oldReady = true })</script>`,
      '/old-sw.js': '// the previous provider\'s service worker\n',
      // The site after the switch: the SDK, set up from ?init= ({ project, migrate }) as a site would in its markup.
      '/index.html': `<!doctype html><title>Shop</title><script src="${herald.url}/sdk/herald.js"></script>
        <script>window.Herald.init(JSON.parse(new URLSearchParams(location.search).get('init')))</script><h1>Shop</h1>`,
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

  const api = async (project: TestProject, method: string, url: string, payload?: unknown, headers: Record<string, string> = {}) => {
    const res = await herald.t.app.inject({ method: method as 'GET', url, headers: { ...project.auth, ...headers }, payload: payload as string })
    return { status: res.statusCode, body: res.json() }
  }

  /**
   * A context where notifications were granted to the site, the previous
   * provider's worker is registered and the browser holds `old` (made with
   * `oldKey`) on every load; the next subscribe() hands out `next`. Counts
   * prompts and Herald requests, and keeps the console.
   */
  async function visitor(old: TestSubscription, oldKey: string, next: TestSubscription[]) {
    const context: BrowserContext = await browser.newContext()
    await context.grantPermissions(['notifications'], { origin: site.url })
    const page: Page = await context.newPage()
    const seen = { console: [] as string[], heraldRequests: [] as string[] }
    page.on('console', (message) => seen.console.push(`${message.type()}: ${message.text()}`))
    page.on('request', (request) => { if (request.url().startsWith(herald.url) && !request.url().includes('/sdk/')) seen.heraldRequests.push(request.url()) })
    await page.addInitScript(() => {
      const original = Notification.requestPermission.bind(Notification)
      ;(window as unknown as { __prompts: number }).__prompts = 0
      Notification.requestPermission = (...args: Parameters<typeof original>) => {
        ;(window as unknown as { __prompts: number }).__prompts++
        return original(...args)
      }
    })
    await page.addInitScript(installFakePushManager, [old, ...next])
    // The subscription the previous provider made before this load: the stand-in's first, with its key; then a clean log.
    await page.addInitScript((key: string) => {
      const bytes = Uint8Array.from(atob(key.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0))
      void PushManager.prototype.subscribe.call(null, { userVisibleOnly: true, applicationServerKey: bytes })
      const log = (globalThis as unknown as { __fakePush: { subscribeKeys: string[] } }).__fakePush
      log.subscribeKeys.length = 0
    }, oldKey)
    await page.goto(`${site.url}/old.html`)
    await page.waitForFunction(() => (window as unknown as { oldReady?: boolean }).oldReady === true)
    return { context, page, seen }
  }

  const open = (page: Page, init: Record<string, unknown>) => page.goto(`${site.url}/?init=${encodeURIComponent(JSON.stringify(init))}`)
  const migration = (page: Page) => page.evaluate(() => window.Herald.migration)
  const prompts = (page: Page) => page.evaluate(() => (window as unknown as { __prompts: number }).__prompts)

  it('moves a visitor subscribed with a foreign key to the project\'s key without a prompt; a send reaches it', async () => {
    const project = await herald.t.project()
    const group = await api(project, 'POST', '/v1/groups', { name: 'news' })
    const key = foreignKey()
    const old = push.createSubscription({ applicationServerKey: key })
    const fresh = push.createSubscription({ applicationServerKey: project.vapidPublic })
    const { context, page, seen } = await visitor(old, key, [fresh])
    try {
      // Without migrate: nothing happens, and Herald is not even asked.
      await open(page, { project: project.id })
      expect(await page.evaluate(() => window.Herald.migration)).toBeNull()
      expect(await fakePushLog(page)).toEqual({ subscribeKeys: [], unsubscribed: [] })
      expect(seen.heraldRequests).toEqual([])

      await open(page, { project: project.id, migrate: { externalId: 'user_5', groupIds: [group.body.id], tags: { moved: true } } })
      const done = await migration(page)
      expect(done).toEqual({ outcome: 'migrated', id: expect.stringMatching(/^sub_/) })
      expect(await prompts(page)).toBe(0)
      // The old subscription was dropped and the new one made with the project's key.
      expect(await fakePushLog(page)).toEqual({ subscribeKeys: [project.vapidPublic], unsubscribed: [old.endpoint] })
      expect(seen.console.some((line) => line.startsWith('info: Herald: moved') && line.includes(done!.id!))).toBe(true)
      expect(await page.evaluate(() => window.Herald.isSubscribed())).toBe(true)

      const active = await api(project, 'GET', '/v1/subscribers?status=active')
      expect(active.body.subscribers).toHaveLength(1)
      expect(active.body.subscribers[0]).toMatchObject({
        id: done!.id, endpoint: fresh.endpoint, source: 'migrated', external_id: 'user_5', group_ids: [group.body.id], tags: { moved: true },
      })
      expect((await api(project, 'GET', '/v1/subscribers?source=migrated')).body.subscribers).toHaveLength(1)

      const sent = await api(project, 'POST', '/v1/send', { target: { type: 'user', external_id: 'user_5' }, notification: { title: 'Moved', body: 'Still here' } })
      expect(sent.status).toBe(202)
      const received = await eventually(async () => push.receivedFor(fresh.endpoint), (pushes) => pushes.length > 0)
      expect(received[0].payload).toMatchObject({ broadcast_id: sent.body.broadcast_id, title: 'Moved' })
      expect(push.receivedFor(old.endpoint)).toEqual([])
    } finally {
      await context.close()
    }
  })

  it('takes over what Herald held for an imported subscription (groups, tags, external_id) and expires it; a second load does nothing', async () => {
    const project = await herald.t.project()
    const group = await api(project, 'POST', '/v1/groups', { name: 'vip' })
    const key = foreignKey()
    const old = push.createSubscription({ applicationServerKey: key })
    const fresh = push.createSubscription({ applicationServerKey: project.vapidPublic })
    // The previous provider's export, imported with its keys.
    const line = JSON.stringify({ ...old, external_id: 'user_6', groups: ['vip'], tags: { plan: 'gold' } })
    const imported = await api(project, 'POST', '/v1/subscribers/import', `${line}\n`, { 'content-type': 'application/x-ndjson' })
    expect(imported.body).toMatchObject({ imported: 1, skipped: 0 })
    const oldId = (await api(project, 'GET', '/v1/subscribers')).body.subscribers[0].id

    const { context, page } = await visitor(old, key, [fresh])
    try {
      await open(page, { project: project.id, migrate: true })
      const done = await migration(page)
      expect(done).toEqual({ outcome: 'migrated', id: expect.stringMatching(/^sub_/) })
      expect(await prompts(page)).toBe(0)
      const list = (await api(project, 'GET', '/v1/subscribers')).body.subscribers as Array<Record<string, unknown>>
      const byId = Object.fromEntries(list.map((s) => [s.id, s]))
      expect(list).toHaveLength(2)
      expect(byId[done!.id!]).toMatchObject({ status: 'active', source: 'migrated', endpoint: fresh.endpoint, external_id: 'user_6', group_ids: [group.body.id], tags: { plan: 'gold' } })
      expect(byId[oldId]).toMatchObject({ status: 'expired', source: 'import', endpoint: old.endpoint })

      // The next load finds the project's key in place: nothing more.
      await page.evaluate(() => { (globalThis as unknown as { __fakePush: { subscribeKeys: string[] } }).__fakePush.subscribeKeys.length = 0 })
      expect(await page.evaluate(() => window.Herald.migrate())).toEqual({ outcome: 'current', id: null })
      expect((await fakePushLog(page)).subscribeKeys).toEqual([])
    } finally {
      await context.close()
    }
  })

  it('dashboard: an owner exports CSV and NDJSON and imports a file, seeing the answer; a viewer exports masked endpoints and has no Import', async () => {
    const project = await herald.t.project()
    await api(project, 'POST', '/v1/groups', { name: 'vip' })
    const [a, b] = [0, 1].map(() => push.createSubscription({ applicationServerKey: project.vapidPublic }))
    const file = [JSON.stringify({ ...a, external_id: 'user_a', groups: ['vip'] }), 'not json', JSON.stringify({ ...b, tags: { plan: 'gold' } })].join('\n')
    await addMember(herald.t, project.id, 'vic@example.com', 'viewer')
    const context = await browser.newContext({ acceptDownloads: true })
    const page = await context.newPage()
    const problems: string[] = []
    page.on('pageerror', (error) => problems.push(error.message))
    try {
      await signInWithApiKey(page, herald.url, project.apiKey)
      await page.goto(`${herald.url}/dashboard/#/subscribers`)
      await page.getByRole('heading', { name: 'Subscribers', level: 1 }).waitFor()

      await page.getByLabel('File (CSV or NDJSON)').setInputFiles({ name: 'old-provider.ndjson', mimeType: 'application/x-ndjson', buffer: Buffer.from(file) })
      await page.getByRole('button', { name: 'Import', exact: true }).click()
      await page.locator('#import-counts').waitFor()
      expect(await page.locator('#import-counts').textContent()).toBe('Imported 2, updated 0, skipped 1.')
      expect(await page.locator('#import-result tbody tr').first().textContent()).toContain('2(line)')
      // The list reloads with them.
      await expect.poll(() => page.locator('tr[data-subscriber-id]').count()).toBe(2)

      const saved = async (name: string) => {
        const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name }).click()])
        return readFile((await download.path())!, 'utf8')
      }
      const csv = await saved('Export CSV')
      expect(csv.split('\n')[0]).toContain('endpoint')
      expect(csv).toContain(a.endpoint)
      const ndjson = (await saved('Export NDJSON')).trim().split('\n').map((line) => JSON.parse(line))
      expect(ndjson.map((row) => row.endpoint).sort()).toEqual([a.endpoint, b.endpoint].sort())
      expect(ndjson.find((row) => row.endpoint === a.endpoint)).toMatchObject({ external_id: 'user_a', groups: ['vip'], source: 'import' })
      expect(JSON.stringify(ndjson)).not.toContain(a.keys.auth)

      // A viewer: endpoints masked in the file, and no Import.
      await context.clearCookies()
      await page.evaluate(() => sessionStorage.clear())
      await page.goto(`${herald.url}/dashboard`)
      await page.reload()
      await page.getByLabel('Email').fill('vic@example.com')
      await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
      await page.getByRole('button', { name: 'Continue' }).click()
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
      await page.goto(`${herald.url}/dashboard/#/subscribers`)
      await page.getByRole('heading', { name: 'Subscribers', level: 1 }).waitFor()
      await page.getByRole('button', { name: 'Export NDJSON' }).waitFor()
      expect(await page.locator('#subscriber-import').count()).toBe(0)
      const masked = (await saved('Export NDJSON')).trim().split('\n').map((line) => JSON.parse(line))
      expect(masked).toHaveLength(2)
      expect(masked.every((row) => row.endpoint.includes('…') && row.endpoint !== a.endpoint && row.endpoint !== b.endpoint)).toBe(true)
      expect(problems).toEqual([])
    } finally {
      await context.close()
    }
  })

  it('never asks: without permission it does nothing, and a bad migrate option is refused at init', async () => {
    const project = await herald.t.project()
    const context = await browser.newContext()
    const page = await context.newPage()
    try {
      await page.goto(`${site.url}/old.html`)
      await open(page, { project: project.id, migrate: true })
      expect(await migration(page)).toEqual({ outcome: 'not_granted', id: null })
      const refused = await page.evaluate(() => {
        try {
          window.Herald.init({ project: 'prj_00000000000000000000000000', migrate: 'yes' as unknown as boolean })
          return null
        } catch (error) {
          return (error as { code: string }).code
        }
      })
      expect(refused).toBe('invalid_options')
      expect((await api(project, 'GET', '/v1/subscribers')).body.subscribers).toEqual([])
    } finally {
      await context.close()
    }
  })
})
