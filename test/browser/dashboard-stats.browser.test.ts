// The overview's charts of numbers over time (issue 25) in a real Chromium,
// against a real Herald with its worker and the local push service: a send,
// clicks, an unsubscribe today and an earlier day's rollup, drawn as SVG
// series at 1280 and 390 px, with the same numbers in tables for screen
// readers; no CSP violation, nothing wider than a phone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { browserAvailable, launchBrowser, recordPageProblems, startHerald, type RunningHerald, signInWithApiKey } from '../support/browser.ts'
import { startPushService, type PushService } from '../support/push-service.ts'
import { send, subscribeBrowser, waitForBroadcast } from '../support/delivery.ts'
import type { TestProject } from '../support/app.ts'
import { DESKTOP, PHONE, screenshot } from './screenshots.ts'

const DAY = 86_400_000

describe.skipIf(!browserAvailable)('the overview charts in Chromium', () => {
  let herald: RunningHerald
  let push: PushService
  let browser: Browser
  let project: TestProject
  const problems: string[] = []

  async function open(viewport: { width: number; height: number }): Promise<Page> {
    const context = await browser.newContext(viewport === PHONE ? { viewport, deviceScaleFactor: 2, isMobile: true, hasTouch: true } : { viewport })
    const page = await context.newPage()
    recordPageProblems(page, problems)
    await signInWithApiKey(page, herald.url, project.apiKey)
    return page
  }

  /** The screen-reader table of a chart: its body rows as text cells. */
  async function numbers(page: Page, name: RegExp): Promise<string[][]> {
    const table = page.getByRole('table', { name })
    return table.locator('tbody tr').evaluateAll((rows) => rows.map((row) => [...row.children].map((cell) => cell.textContent ?? '')))
  }

  beforeAll(async () => {
    push = await startPushService()
    herald = await startHerald()
    project = await herald.t.project({ name: 'Acme Shop', plan: 'plus' })
    const browsers = await Promise.all([0, 1, 2].map(() => subscribeBrowser(herald.t, project, push)))
    const bdc = await send(herald.t, project, { target: { type: 'all' }, notification: { title: 'Sale', body: 'Today only' } })
    await waitForBroadcast(herald.t, project, bdc)
    await herald.t.app.inject({ method: 'POST', url: `/v1/events?project=${project.id}`, payload: { type: 'clicked', broadcast_id: bdc } })
    await herald.t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${project.id}`, payload: { endpoint: browsers[0].endpoint } })
    // Ten days ago, as the rollup would hold it: 40 sent, 9 clicked, 5 unsubscribed.
    const tenDaysAgo = new Date(Math.floor((Date.now() - 10 * DAY) / 3_600_000) * 3_600_000)
    await herald.t.database.db.query(
      `INSERT INTO stats_hourly (project_id, hour, sent, delivered, clicked, lost_unsubscribed) VALUES ($1, $2, 40, 38, 9, 5)`,
      [project.id, tenDaysAgo],
    )
    await herald.t.database.db.query('UPDATE projects SET stats_since = $2 WHERE id = $1', [project.id, new Date(Date.now() - 60 * DAY)])
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await herald?.close()
    await push?.close()
  })

  it('at 1280 px: audience and pushes over 30 days, drawn and in tables', async () => {
    const page = await open(DESKTOP)
    const section = page.getByRole('region', { name: 'Last 30 days' })
    await section.waitFor()
    await expect.poll(() => page.locator('#trends-summary').textContent()).toContain('3 subscribers gained, 6 lost; 43 pushes sent, 41 delivered, 0 shown, 10 clicked')

    // The numbers, a row per day: today last, ten days ago with the seeded day.
    const pushes = await numbers(page, /^Pushes: sent, delivered, shown and clicked/)
    expect(pushes).toHaveLength(30)
    expect(pushes[29].slice(1)).toEqual(['3', '3', '0', '1'])
    expect(pushes.filter((row) => row.slice(1).join() === '40,38,0,9')).toHaveLength(1)
    const audience = await numbers(page, /^Audience: subscribers gained, lost and active/)
    expect(audience).toHaveLength(30)
    // Gained 3, lost 1, 2 active now; before the 5 unsubscribes of ten days ago, 5 more were active.
    expect(audience[29].slice(1)).toEqual(['3', '1', '2'])
    expect(audience[0].slice(1)).toEqual(['0', '0', '5'])

    // Drawn: a line of 30 points per push series, today's gains and the seeded losses as bars, the active line.
    const pointsOf = (selector: string) => page.locator(selector).evaluateAll((lines) => lines.map((l) => (l.getAttribute('points') ?? '').trim().split(/\s+/).length))
    expect(await pointsOf('#pushes-chart polyline.series-sent')).toEqual([30])
    expect(await pointsOf('#pushes-chart polyline.series-clicked')).toEqual([30])
    expect(await pointsOf('#audience-chart polyline.series-active')).toEqual([30])
    expect(await page.locator('#audience-chart rect.sbar-gained').count()).toBe(1)
    expect(await page.locator('#audience-chart rect.sbar-lost').count()).toBe(2)
    // The sent line rises to its highest point on the seeded day: a smaller y than today's.
    const ys = await page.locator('#pushes-chart polyline.series-sent').evaluate((l) => (l.getAttribute('points') ?? '').trim().split(/\s+/).map((p) => Number(p.split(',')[1])))
    expect(Math.min(...ys)).toBeLessThan(ys[29])
    await screenshot(page, 'overview-charts')
    await page.context().close()
  })

  it('at 390 px: the charts fill the screen, nothing is wider, no CSP violation', async () => {
    const page = await open(PHONE)
    await page.getByRole('region', { name: 'Last 30 days' }).waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)
    for (const id of ['#audience-chart svg', '#pushes-chart svg']) {
      const box = await page.locator(id).boundingBox()
      expect(box!.width).toBeGreaterThan(300)
      expect(box!.x + box!.width).toBeLessThanOrEqual(PHONE.width)
    }
    expect(await numbers(page, /^Pushes: sent/)).toHaveLength(30)
    await page.context().close()
    expect(problems).toEqual([])
  })
})
