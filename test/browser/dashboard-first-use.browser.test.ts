// First use and exports in Chromium (issue 25): an owner of an empty project
// sees the setup checklist, ticked from the project's data only; adds this
// browser as a test device (the real service worker at /sdk/sw.js registered
// on Herald's origin, the real Notification permission; only PushManager's
// subscribe is the local push service's stand-in, as in every browser test,
// since headless Chromium reaches no real push service); "Send a test to me"
// goes out through the real fan-out, the local push service decrypts it, and
// the payload it received is delivered to that service worker through the
// DevTools protocol (the browser's own push event path), which shows it.
// Then the checklist disappears once every step is done, and the broadcasts
// and subscribers pages download CSV exports of what they show.
import { readFile } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core'
import { parse } from 'csv-parse/sync'
import { browserAvailable, launchBrowser, recordPageProblems, startHerald, type RunningHerald } from '../support/browser.ts'
import type { TestProject } from '../support/app.ts'
import { addMember, PASSWORD } from '../support/members.ts'
import { startPushService, type PushService, type TestSubscription } from '../support/push-service.ts'
import { eventually, fakePushLog, installFakePushManager } from './sdk-helpers.ts'
import { PHONE, screenshot } from './screenshots.ts'

describe.skipIf(!browserAvailable)('first use and exports in Chromium', () => {
  let herald: RunningHerald
  let push: PushService
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let cdp: CDPSession
  let project: TestProject
  let device: TestSubscription
  const registrations = new Map<string, string>()
  const problems: string[] = []

  const api = async (method: string, path: string, payload?: unknown) => {
    const res = await herald.t.app.inject({ method: method as 'GET', url: path, headers: project.auth, payload: payload as Record<string, unknown> })
    return res.json()
  }
  const steps = () => page.locator('#setup-checklist li').evaluateAll((items) => Object.fromEntries(items.map((li) => [li.id, (li as HTMLElement).dataset.done])))

  beforeAll(async () => {
    herald = await startHerald()
    push = await startPushService()
    project = await herald.t.project({ name: 'New Shop', plan: 'plus' })
    await addMember(herald.t, project.id, 'nina@example.com', 'owner')
    device = push.createSubscription({ applicationServerKey: project.vapidPublic })
    browser = await launchBrowser()
    context = await browser.newContext()
    await context.grantPermissions(['notifications'], { origin: herald.url })
    page = await context.newPage()
    recordPageProblems(page, problems)
    await page.addInitScript(installFakePushManager, [device])
    cdp = await context.newCDPSession(page)
    cdp.on('ServiceWorker.workerRegistrationUpdated', ({ registrations: updated }) => {
      for (const r of updated) if (!r.isDeleted) registrations.set(r.scopeURL, r.registrationId)
    })
    await cdp.send('ServiceWorker.enable')
  })
  afterAll(async () => {
    await browser?.close()
    await push?.close()
    await herald?.close()
  })

  it("an empty project's overview shows the checklist with nothing done, and the SDK snippet with this project's id and Herald's URL", async () => {
    await page.goto(`${herald.url}/dashboard`)
    await page.getByLabel('Email').fill('nina@example.com')
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
    await page.getByRole('button', { name: 'Continue' }).click()
    await page.getByRole('heading', { name: 'Get started' }).waitFor()
    expect(await steps()).toEqual({ 'setup-key': 'false', 'setup-sdk': 'false', 'setup-subscriber': 'false', 'setup-send': 'false' })
    expect(await page.locator('#setup-progress').textContent()).toBe('0 of 4 steps done.')
    await page.getByText('Show the snippet').click()
    const snippet = await page.locator('#setup-checklist #snippet-page').textContent()
    expect(snippet).toContain(`${herald.url}/sdk/herald.js`)
    expect(snippet).toContain(`project: '${project.id}'`)
    await screenshot(page, 'setup-checklist')
  })

  it('adds this browser as a test device and sends a test that its service worker shows; the test is no subscriber and no first send', async () => {
    await page.getByRole('button', { name: 'Use this browser as a test device' }).click()
    const row = page.locator('#test-device-list tr[data-test-device-id]')
    await row.waitFor()
    expect(await row.textContent()).toContain('Chrome on Linux')
    expect((await fakePushLog(page)).subscribeKeys).toEqual([project.vapidPublic])

    await page.locator('#test-devices').getByRole('button', { name: 'Send a test to me' }).click()
    await page.getByText('Test sent to your test device.').waitFor()
    const received = await eventually(async () => push.receivedFor(device.endpoint), (list) => list.length === 1)
    const payload = received[0]!.payload as { broadcast_id: string; title: string }
    expect(payload).toMatchObject({ project_id: project.id, title: 'Test from Herald' })

    // The payload Herald sent, delivered to the worker registered on Herald's origin, which shows it.
    const registrationId = await eventually(async () => registrations.get(`${herald.url}/sdk/test-devices/${project.id}/`), (id) => id !== undefined)
    const shown = () => page.evaluate(async (scope) => {
      const registration = await navigator.serviceWorker.getRegistration(scope)
      return (await registration!.getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag }))
    }, `/sdk/test-devices/${project.id}/`)
    let list: Array<{ title: string; body: string; tag: string }> = []
    for (let attempt = 0; attempt < 3 && list.length === 0; attempt++) {
      await cdp.send('ServiceWorker.deliverPushMessage', { origin: herald.url, registrationId: registrationId!, data: JSON.stringify(payload) })
      list = await eventually(shown, (l) => l.length > 0, 5_000).catch(() => [])
    }
    expect(list).toEqual([{ title: 'Test from Herald', body: 'Notifications from this project reach this browser.', tag: payload.broadcast_id }])

    expect(await api('GET', '/v1/subscribers/counts')).toEqual({ active: 0, unsubscribed: 0, expired: 0 })
    await page.reload()
    await page.getByRole('heading', { name: 'Get started' }).waitFor()
    expect(await steps()).toMatchObject({ 'setup-subscriber': 'false', 'setup-send': 'false' })
    await screenshot(page, 'overview-test-devices')
  })

  it("compose's Send a test to me sends the draft to the test device only", async () => {
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Compose', exact: true }).click()
    await page.getByLabel('Title', { exact: true }).fill('Draft title')
    await page.getByLabel('Body', { exact: true }).fill('Draft body')
    await page.getByRole('button', { name: 'Send a test to me' }).click()
    await page.getByText('Test sent to your test device.').waitFor()
    const received = await eventually(async () => push.receivedFor(device.endpoint), (list) => list.length === 2)
    expect(received[1]!.payload).toMatchObject({ title: 'Draft title', body: 'Draft body' })
    await page.getByRole('button', { name: 'Discard draft' }).click()
    await page.getByRole('button', { name: 'Yes, discard draft' }).click()
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Overview', exact: true }).click()
    await page.getByRole('heading', { name: 'Get started' }).waitFor()
  })

  it('at 390 px the checklist and test devices fit the screen', async () => {
    const before = page.viewportSize()!
    await page.setViewportSize(PHONE)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)
    await page.setViewportSize(before)
  })

  it('each step ticks from real data; with all four done the checklist is gone', async () => {
    // A visitor subscribes through the SDK's call, the server uses its key, and sends.
    const visitor = push.createSubscription({ applicationServerKey: project.vapidPublic })
    await herald.t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: { ...visitor, external_id: '-2-3' } })
    await page.reload()
    await page.getByRole('heading', { name: 'Get started' }).waitFor()
    // The key step ticked when this test's server side first called Herald with the project's key (the counts above).
    expect(await steps()).toEqual({ 'setup-key': 'true', 'setup-sdk': 'true', 'setup-subscriber': 'true', 'setup-send': 'false' })
    const sent = await fetch(`${herald.url}/v1/send`, {
      method: 'POST', headers: { authorization: `Bearer ${project.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ target: { type: 'all' }, notification: { title: '=Sale', body: 'Half off' } }),
    })
    expect(sent.status).toBe(202)
    await page.reload()
    await page.getByRole('heading', { name: 'Subscribers', level: 2 }).waitFor()
    expect(await page.locator('#setup-checklist').count()).toBe(0)
  })

  it('the broadcasts page downloads the CSV export, with the funnel and formulas neutralised; the subscribers page exports what its filter shows', async () => {
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Broadcasts', exact: true }).click()
    await page.getByRole('heading', { name: 'Export' }).waitFor()
    await page.locator('#broadcast-export').getByLabel('Source').selectOption('api')
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()])
    expect(download.suggestedFilename()).toBe(`broadcasts-${project.id}.csv`)
    const rows = parse(await readFile((await download.path())!, 'utf8'), { columns: true }) as Array<Record<string, string>>
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ title: "'=Sale", source: 'api', audience: '1' })
    const before = page.viewportSize()!
    await page.setViewportSize(PHONE)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)
    await page.setViewportSize(before)

    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Subscribers', exact: true }).click()
    await page.locator('#subscriber-filters').getByLabel('Status').selectOption('unsubscribed')
    await page.getByRole('button', { name: 'Filter' }).click()
    await page.getByText('No subscribers match.', { exact: false }).waitFor()
    const [none] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()])
    expect((await readFile((await none.path())!, 'utf8')).trim().split('\n')).toHaveLength(1)
    await page.locator('#subscriber-filters').getByLabel('Status').selectOption('active')
    await page.getByRole('button', { name: 'Filter' }).click()
    await page.locator('tr[data-subscriber-id]').first().waitFor()
    const [active] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()])
    const subscribers = parse(await readFile((await active.path())!, 'utf8'), { columns: true }) as Array<Record<string, string>>
    expect(subscribers.map((s) => s.external_id)).toEqual(['-2-3'])
    expect(problems).toEqual([])
  })
})
