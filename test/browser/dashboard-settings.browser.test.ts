// The Settings page's webhooks in a real browser, against a real Herald with
// its worker and a webhook receiver on localhost: a failing endpoint's
// attempts in the page, a test event's result, edit, disable and enable,
// secret rotation. Then a phone reaching every page, GET / and /docs, and a
// plan gate explained in words. HERALD_SCREENSHOTS=1 also writes Settings
// with a webhook card and its delivery log to docs/screenshots/ (screenshots.ts).
import { createHmac, timingSafeEqual } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { browserAvailable, launchBrowser, startHerald, type RunningHerald, recordPageProblems, signInWithApiKey } from '../support/browser.ts'
import { send, waitForBroadcast } from '../support/delivery.ts'
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../support/webhook-receiver.ts'
import type { TestProject } from '../support/app.ts'
import { DESKTOP, PHONE, screenshot } from './screenshots.ts'

/** True when one of the header's signatures verifies with `secret` (Standard Webhooks). */
function signedWith(secret: string, hook: ReceivedWebhook): boolean {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
  const expected = createHmac('sha256', key).update(`${hook.headers['webhook-id']}.${hook.headers['webhook-timestamp']}.${hook.body}`).digest()
  return hook.headers['webhook-signature'].split(' ').some((candidate) => {
    const given = Buffer.from(candidate.replace(/^v1,/, ''), 'base64')
    return given.length === expected.length && timingSafeEqual(given, expected)
  })
}

describe.skipIf(!browserAvailable)('the Settings page and the phone layout in Chromium', () => {
  let herald: RunningHerald
  let receiver: WebhookReceiver
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let project: TestProject
  let broadcastId: string
  let hook: { id: string; secret: string }
  const problems: string[] = []

  const api = async (method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) =>
    (await herald.t.app.inject({ method, url, headers: project.auth, payload })).json()
  const card = (): Locator => page.locator(`article[data-webhook-id="${hook.id}"]`)
  const button = (name: string): Locator => card().getByRole('button', { name, exact: true })

  async function signIn(p: Page, key: string): Promise<void> {
    await signInWithApiKey(p, herald.url, key)
  }

  async function openSettings(): Promise<void> {
    await page.goto(`${herald.url}/dashboard#/overview`)
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Settings' }).click()
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor()
  }

  beforeAll(async () => {
    receiver = await startWebhookReceiver()
    // Retries a fraction of a second apart, so a failing endpoint's attempts pile up within the test.
    herald = await startHerald({ HERALD_WEBHOOK_RETRY_BASE_MS: '100', HERALD_SCHEDULER_INTERVAL_MS: '100' })
    project = await herald.t.project({ name: 'Acme Shop', plan: 'plus' })
    // A broadcast to nobody: a click beacon against it makes a webhook event without any push.
    broadcastId = await send(herald.t, project, { target: { type: 'user', external_id: 'nobody' }, notification: { title: 'Hi', body: 'There' } })
    await waitForBroadcast(herald.t, project, broadcastId)
    browser = await launchBrowser()
    context = await browser.newContext({ viewport: DESKTOP })
    page = await context.newPage()
    recordPageProblems(page, problems)
    await signIn(page, project.apiKey)
  })

  afterAll(async () => {
    await browser?.close()
    await herald?.close()
    await receiver?.close()
  })

  it("lists a failing endpoint's attempts, newest first: the 500s, their retry times, then the success", async () => {
    hook = await api('POST', '/v1/webhooks', { url: `${receiver.url}/hook` })
    receiver.fail('/hook', { status: 500 }, 2)
    await herald.t.app.inject({ method: 'POST', url: `/v1/events?project=${project.id}`, payload: { type: 'clicked', broadcast_id: broadcastId } })
    await receiver.waitFor('/hook', 3)
    await expect.poll(async () => (await api('GET', `/v1/webhooks/${hook.id}/deliveries`)).deliveries.length, { timeout: 10_000 }).toBe(3)
    const attempts = (await api('GET', `/v1/webhooks/${hook.id}/deliveries`)).deliveries

    await openSettings()
    const rows = card().locator('tbody tr')
    await expect.poll(() => rows.count()).toBe(3)
    expect(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-attempt-id')))).toEqual(attempts.map((a: { id: string }) => a.id))
    const cells = async (i: number) => (await rows.nth(i).locator('td').allTextContents()).map((text) => text.trim())
    const [newest, second, first] = [await cells(0), await cells(1), await cells(2)]
    // Columns: time, result, event, attempt, next attempt.
    expect(newest[2]).toContain('clicked')
    expect(newest[2]).toContain(attempts[0].event_id)
    expect([newest[1], newest[3]]).toEqual([expect.stringMatching(/^delivered HTTP 200 · \d+ ms$/), '3'])
    expect([second[1], second[3]]).toEqual([expect.stringMatching(/^retrying HTTP 500 · \d+ ms$/), '2'])
    expect([first[1], first[3]]).toEqual([expect.stringMatching(/^retrying HTTP 500 · \d+ ms$/), '1'])
    // A retrying attempt names when the next one was due; the delivered one has none.
    expect(first[4]).not.toBe('—')
    expect(newest[4]).toBe('—')
    expect(await card().locator('.webhook-status').textContent()).toContain('active')
  })

  it('Send test event shows the attempt’s result, failing and then delivered, and adds it to the log', async () => {
    receiver.fail('/hook', { status: 503 }, 1)
    await button('Send test event').click()
    await card().getByRole('alert').filter({ hasText: 'Test event not delivered: HTTP 503' }).waitFor()
    await expect.poll(() => card().locator('tbody tr').count()).toBe(4)
    expect(await card().locator('tbody tr').first().locator('td').nth(2).textContent()).toContain('test')

    await button('Send test event').click()
    await card().getByRole('status').filter({ hasText: /Test event delivered: HTTP 200 · \d+ ms\./ }).waitFor()
    await expect.poll(() => card().locator('tbody tr').count()).toBe(5)
    const last = receiver.on('/hook').at(-1)!
    expect((last.json as { type: string }).type).toBe('test')
    await screenshot(page, 'settings-webhook')
  })

  it('Edit changes the URL and events; the card and the API show them', async () => {
    await button('Edit').click()
    await card().getByLabel('New URL').fill(`${receiver.url}/edited`)
    await card().getByLabel('clicked').uncheck()
    await button('Save webhook').click()
    await card().getByText('Webhook saved.').waitFor()
    expect(await card().locator('h3').textContent()).toBe(`${receiver.url}/edited`)
    expect(await card().getByText('Events:').textContent()).toBe('Events: delivered, failed, dismissed')
    expect(await api('GET', `/v1/webhooks/${hook.id}`)).toMatchObject({ url: `${receiver.url}/edited`, events: ['delivered', 'failed', 'dismissed'] })
    // A refused URL is said in words, and changes nothing.
    await button('Edit').click()
    await card().getByLabel('New URL').fill('ftp://nowhere.example')
    await button('Save webhook').click()
    await card().getByRole('alert').waitFor()
    expect((await api('GET', `/v1/webhooks/${hook.id}`)).url).toBe(`${receiver.url}/edited`)
    await button('Cancel').click()
  })

  it('Disable and Enable change the status shown, with the reason and time', async () => {
    await button('Disable').click()
    await card().getByText('Webhook disabled').waitFor()
    const status = card().locator('.webhook-status')
    expect(await status.locator('.badge').textContent()).toBe('disabled')
    const stored = await api('GET', `/v1/webhooks/${hook.id}`)
    expect(stored).toMatchObject({ status: 'disabled', disabled_reason: expect.any(String), disabled_at: expect.any(Number) })
    expect(await status.textContent()).toContain(stored.disabled_reason)
    expect(await status.textContent()).toContain(new Date(stored.disabled_at).getFullYear().toString())

    await button('Enable').click()
    await card().getByText('Webhook enabled').waitFor()
    expect(await status.locator('.badge').textContent()).toBe('active')
    expect((await api('GET', `/v1/webhooks/${hook.id}`)).status).toBe('active')
    // The log survived the redraws.
    expect(await card().locator('tbody tr').count()).toBe(5)
  })

  it('Rotate secret shows the new secret once and says the old one is signed for 24 h; both verify', async () => {
    await button('Rotate secret').click()
    await button('Yes, rotate secret').click()
    const secret = await card().getByLabel('New signing secret').inputValue()
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(secret).not.toBe(hook.secret)
    expect(await card().locator('.secret').textContent()).toContain('old secret keeps signing deliveries too for 24 hours')

    await button('Send test event').click()
    await card().getByText('Test event delivered').waitFor()
    const signed = receiver.on('/edited').at(-1)!
    expect([signedWith(secret, signed), signedWith(hook.secret, signed)]).toEqual([true, true])
    // Shown once: gone after a reload.
    await page.reload()
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor()
    expect(await page.content()).not.toContain(secret)
  })

  it('at 390×844 every nav entry is on screen, clickable, and leads to its page; the log keeps its time column in view', async () => {
    await page.setViewportSize(PHONE)
    const nav = page.getByRole('navigation', { name: 'Dashboard' })
    const links = nav.getByRole('link')
    // Signed in with a (full) API key: the Audit log and API keys too, but not Members.
    expect(await links.allTextContents()).toEqual(['Overview', 'Compose', 'Broadcasts', 'Groups', 'Subscribers', 'Settings', 'Audit log', 'API keys'])
    for (const name of await links.allTextContents()) {
      const link = nav.getByRole('link', { name, exact: true })
      const box = (await link.boundingBox())!
      expect(box.x, name).toBeGreaterThanOrEqual(0)
      expect(box.x + box.width, name).toBeLessThanOrEqual(PHONE.width)
      expect(box.y + box.height, name).toBeLessThanOrEqual(PHONE.height)
      // A trial click fails when the link is covered or outside the viewport.
      await link.click({ trial: true, timeout: 2000 })
      await link.click()
      await expect.poll(() => page.evaluate(() => location.hash)).toBe(await link.getAttribute('href'))
      // The nav marks the page once its route has rendered, which may wait on a request (the overview's health counts).
      await expect.poll(() => link.getAttribute('aria-current'), { message: name }).toBe('page')
      await page.getByRole('heading', { level: 1 }).waitFor()
    }
    // Back to Settings (API keys came last): the log's key columns, time and result, show without scrolling.
    await nav.getByRole('link', { name: 'Settings', exact: true }).click()
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor()
    const firstRow = card().locator('tbody tr').first()
    for (const i of [0, 1]) {
      const box = (await firstRow.locator('td').nth(i).boundingBox())!
      expect(box.x + box.width, `column ${i}`).toBeLessThanOrEqual(PHONE.width)
    }
    // Scrolled sideways to its end, the log still shows each row's time.
    const wrap = card().locator('.table-wrap')
    expect(await wrap.evaluate((el) => el.scrollWidth > el.clientWidth)).toBe(true)
    await wrap.evaluate((el) => { el.scrollLeft = el.scrollWidth })
    const timeBox = (await card().locator('tbody tr').first().locator('td').first().boundingBox())!
    expect(timeBox.x).toBeGreaterThanOrEqual(0)
    expect(timeBox.x + timeBox.width).toBeLessThanOrEqual(PHONE.width)
    await page.setViewportSize(DESKTOP)
  })

  it('GET / leads to the dashboard, and /docs shows the bearer example in full', async () => {
    const other = await context.newPage()
    await other.goto(`${herald.url}/`)
    expect(other.url()).toBe(`${herald.url}/dashboard`)
    await other.goto(`${herald.url}/docs`)
    const info = other.locator('.information-container .info')
    await info.getByText('Authorization: Bearer <API key>').waitFor({ timeout: 10_000 })
    expect(await info.textContent()).not.toContain('Bearer ;')
    await other.close()
  })

  it('a plan gate is explained in words: the operator and the command that lifts it', async () => {
    const free = await herald.t.project({ name: 'Tiny', plan: 'free', limits: { groups: 0 } })
    const other = await (await browser.newContext()).newPage()
    await signIn(other, free.apiKey)
    await other.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Groups' }).click()
    await other.getByLabel('Name', { exact: true }).fill('Newsletter')
    await other.getByRole('button', { name: 'Create group' }).click()
    const alert = other.getByRole('alert')
    await alert.waitFor()
    expect(await alert.textContent()).toContain(`The operator of this Herald can raise it: herald projects update ${free.id} --limit groups=N or --plan hobby`)
    await other.context().close()
  })

  it('logged no page error', async () => {
    expect(problems).toEqual([])
  })
})
