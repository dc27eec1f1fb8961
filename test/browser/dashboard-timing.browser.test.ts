// Time zones in the dashboard (issue 24, docs/timing.md), in Chromium set to
// America/New_York: Settings sets the default zone and quiet hours; Compose
// schedules in each subscriber's time zone (local-time delivery) and in the
// project's; the broadcast's page shows the local time, what waits, and
// times with their zone. At 1280 px, then the same pages at 390 px.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { browserAvailable, launchBrowser, startHerald, type RunningHerald, recordPageProblems, signInWithApiKey } from '../support/browser.ts'
import { subscribeBrowser } from '../support/delivery.ts'
import { startPushService, type PushService } from '../support/push-service.ts'
import type { TestProject } from '../support/app.ts'
import { DESKTOP, PHONE } from './screenshots.ts'

describe.skipIf(!browserAvailable)('time zones in the dashboard, in Chromium', () => {
  let herald: RunningHerald
  let push: PushService
  let browser: Browser
  let page: Page
  let project: TestProject
  const problems: string[] = []

  const me = async () => (await herald.t.app.inject({ method: 'GET', url: '/v1/me', headers: project.auth })).json().project
  const fits = async (where: string) => expect(await page.evaluate(() => document.documentElement.scrollWidth), where).toBeLessThanOrEqual(PHONE.width)

  /**
   * Saves the time settings and waits for the page that the save renders again. Not for the words alone: a
   * save before may have left them on screen, and the page this save renders would then come back after
   * the test had moved on (a Compose page turned back into Settings, docs/testing.md).
   */
  async function saveTimeSettings(): Promise<void> {
    await page.locator('main .view').evaluate((view) => view.setAttribute('data-before-save', ''))
    await page.getByRole('button', { name: 'Save time settings' }).click()
    await page.locator('main .view:not([data-before-save])').getByText('Time settings saved.').waitFor()
  }

  async function open(hash: string, heading: string): Promise<void> {
    await page.goto(`${herald.url}/dashboard#/${hash}`)
    await page.getByRole('heading', { name: heading, level: 1 }).waitFor()
  }

  /** Fills Compose and sends it through the dry-run confirmation; the broadcast's id. */
  async function compose(title: string, schedule: string, zone: 'browser' | 'project' | 'subscriber'): Promise<string> {
    await open('compose', 'Compose')
    await page.getByLabel('Title').fill(title)
    await page.getByLabel('Body').fill('Local time')
    await page.getByLabel('Schedule (optional)').fill(schedule)
    await page.getByLabel('Time zone of the schedule').selectOption(zone)
    await page.locator('#send-button').click()
    if (zone === 'subscriber') expect(await page.locator('#confirm-waiting').textContent()).toMatch(/^Waiting: 2 subscribers at their local time, from .* (EST|EDT)\.$/)
    await page.locator('#confirm-send').click()
    await page.waitForURL(/#\/broadcasts\/bdc_/)
    return page.url().split('/').at(-1)!
  }

  beforeAll(async () => {
    push = await startPushService()
    herald = await startHerald({ HERALD_SCHEDULER_INTERVAL_MS: '100' })
    project = await herald.t.project({ name: 'Timely', plan: 'plus' })
    await subscribeBrowser(herald.t, project, push, { timezone: 'Asia/Tokyo' })
    await subscribeBrowser(herald.t, project, push)
    browser = await launchBrowser()
    const context = await browser.newContext({ viewport: DESKTOP, timezoneId: 'America/New_York', locale: 'en-US' })
    page = await context.newPage()
    recordPageProblems(page, problems)
    await signInWithApiKey(page, herald.url, project.apiKey)
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await herald?.close()
    await push?.close()
  })

  it('Settings: sets the default time zone and quiet hours that wrap midnight, then turns them off', async () => {
    await open('settings', 'Settings')
    expect(await page.locator('#time-current').textContent()).toContain('No quiet hours')
    await page.getByLabel('Default time zone').fill('Europe/Paris')
    await page.locator('#quiet-on').check()
    await page.getByLabel('From').fill('22:00')
    await page.getByLabel('Until').fill('07:30')
    await saveTimeSettings()
    expect(await page.locator('#time-current').textContent()).toContain('Quiet hours 22:00 to 07:30')
    const saved = await me()
    expect([saved.default_timezone, saved.quiet_hours]).toEqual(['Europe/Paris', { start: '22:00', end: '07:30' }])
    // A zone Herald does not know: refused in words, nothing changed.
    await page.getByLabel('Default time zone').fill('Europe/Atlantis')
    await page.getByRole('button', { name: 'Save time settings' }).click()
    await page.locator('#time-message').getByText('default_timezone').first().waitFor()
    expect((await me()).default_timezone).toBe('Europe/Paris')
    await page.getByLabel('Default time zone').fill('Europe/Paris')
    await page.locator('#quiet-on').uncheck()
    await saveTimeSettings()
    expect((await me()).quiet_hours).toBeNull()
  })

  it('a save that ends after the person has moved to another page leaves them on that page', async () => {
    await open('settings', 'Settings')
    // The answer to the save is held back until the person is on Compose.
    let release = (): void => {}
    const held = new Promise<void>((resolve) => (release = resolve))
    await page.route('**/v1/me', async (route) => {
      if (route.request().method() !== 'PATCH') return route.fallback()
      await held
      await route.continue()
    })
    try {
      await page.getByLabel('Default time zone').fill('Asia/Tokyo')
      await page.getByRole('button', { name: 'Save time settings' }).click()
      await open('compose', 'Compose')
      const answered = page.waitForEvent('requestfinished', (r) => r.url().endsWith('/v1/me') && r.method() === 'PATCH')
      release()
      expect((await (await answered).response())?.status()).toBe(200)
      // The save took effect, and the page it would have rendered again (Settings) did not replace Compose.
      await expect.poll(async () => (await me()).default_timezone).toBe('Asia/Tokyo')
      await page.waitForTimeout(500)
      expect(new URL(page.url()).hash).toBe('#/compose')
      expect(await page.locator('main h1').textContent()).toBe('Compose')
    } finally {
      release()
      await page.unroute('**/v1/me')
      // The project's zone as the next test expects it, even if this one failed.
      await herald.t.app.inject({ method: 'PATCH', url: '/v1/me', headers: project.auth, payload: { default_timezone: 'Europe/Paris' } })
    }
    // And in the page's copy of the project, as a save there sets it.
    await open('settings', 'Settings')
    await page.getByLabel('Default time zone').fill('Europe/Paris')
    await saveTimeSettings()
  })

  it("Compose: in each subscriber's time zone (local-time delivery) and in the project's; the broadcast shows them with zones", async () => {
    const day = new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10)
    const local = await compose('Each their own nine', `${day}T09:00`, 'subscriber')
    const sent = (await herald.t.app.inject({ method: 'GET', url: `/v1/broadcasts/${local}`, headers: project.auth })).json()
    expect([sent.deliver_at_local, sent.deliver_on, sent.scheduled_at]).toEqual(['09:00', day, null])
    await page.locator('#broadcast-waiting li').first().waitFor()
    expect(await page.locator('#broadcast-local-time').textContent()).toContain(`09:00 on ${day}, each subscriber's time zone`)
    // Tokyo's 09:00 and Paris's (the project's default, for the subscriber without a zone), shown in this browser's zone.
    const waiting = await page.locator('#broadcast-waiting li').allTextContents()
    expect(waiting).toHaveLength(2)
    for (const line of waiting) expect(line).toMatch(/^1 at .* (EST|EDT) \(their local time\)$/)
    expect(await page.locator('#broadcast-details').textContent()).toMatch(/Created.*(EST|EDT)/)

    // The project's zone: 09:00 in Paris, whatever this browser's zone.
    const paris = await compose('Nine in Paris', `${day}T09:00`, 'project')
    const scheduled = (await herald.t.app.inject({ method: 'GET', url: `/v1/broadcasts/${paris}`, headers: project.auth })).json()
    const parisNine = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Paris', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(scheduled.scheduled_at))
    expect(parisNine).toBe('09:00')
  })

  it('the same pages fit a 390 px phone', async () => {
    await page.setViewportSize(PHONE)
    await open('settings', 'Settings')
    await fits('settings')
    await open('compose', 'Compose')
    await page.getByLabel('Time zone of the schedule').selectOption('subscriber')
    expect(await page.getByLabel('Where that time has already passed').isVisible()).toBe(true)
    await fits('compose')
    await page.setViewportSize(DESKTOP)
    expect(problems.filter((p) => !/status of 4\d\d/.test(p))).toEqual([])
  })
})
