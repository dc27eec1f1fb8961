// An A/B test on the broadcast's page (issue 25, docs/experiments.md), in
// Chromium: the variants side by side (a bar of each one's rate, with the
// numbers in the page), the test's standing, and ending the test early with a
// chosen winner, which then goes to the rest. At 1280 px, then at 390 px.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { browserAvailable, launchBrowser, startHerald, type RunningHerald, recordPageProblems, signInWithApiKey } from '../support/browser.ts'
import { send, subscribeBrowser, waitForBroadcast } from '../support/delivery.ts'
import { startPushService, type PushService } from '../support/push-service.ts'
import type { TestProject } from '../support/app.ts'
import { DESKTOP, PHONE, screenshot } from './screenshots.ts'
import { assignVariant } from '../../src/experiments/assignment.ts'

describe.skipIf(!browserAvailable)('an A/B test on the broadcast page, in Chromium', () => {
  let herald: RunningHerald
  let push: PushService
  let browser: Browser
  let page: Page
  let project: TestProject
  let id: string
  const problems: string[] = []
  const subscribers: string[] = []

  const view = async () => (await herald.t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: project.auth })).json()

  beforeAll(async () => {
    push = await startPushService()
    herald = await startHerald({ HERALD_SCHEDULER_INTERVAL_MS: '100' })
    project = await herald.t.project({ name: 'Tested', plan: 'plus' })
    for (let i = 0; i < 16; i++) subscribers.push((await subscribeBrowser(herald.t, project, push)).id)
    id = await send(herald.t, project, {
      target: { type: 'all' },
      notification: { title: 'Spring sale', body: 'Everything must go' },
      variants: [{ key: 'a', notification: { title: 'Twenty percent off' } }, { key: 'b', notification: { title: 'Half price today' } }],
      experiment: { test_share: 0.5, min_per_variant: 1, decide_after: '2h' },
    })
    const tested = subscribers.filter((s) => assignVariant(id, s, 0.5, 2) !== null).length
    await waitForBroadcast(herald.t, project, id, (s) => (s as unknown as { experiment: { variants: Array<{ delivered: number }> } }).experiment.variants.reduce((n, v) => n + v.delivered, 0) === tested)
    // Every b clicks: b leads.
    const inB = subscribers.filter((s) => assignVariant(id, s, 0.5, 2) === 1).length
    for (let i = 0; i < inB; i++) await herald.t.app.inject({ method: 'POST', url: `/v1/events?project=${project.id}`, payload: { type: 'clicked', broadcast_id: id, variant: 'b' } })
    browser = await launchBrowser()
    const context = await browser.newContext({ viewport: DESKTOP, locale: 'en-US' })
    page = await context.newPage()
    recordPageProblems(page, problems)
    await signInWithApiKey(page, herald.url, project.apiKey)
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await herald?.close()
    await push?.close()
  })

  it('shows each variant\'s rate as a bar with its numbers, and the standing of the test', async () => {
    await page.goto(`${herald.url}/dashboard#/broadcasts/${id}`)
    await page.locator('#experiment-bars').waitFor()
    const b = (await view()).experiment
    const [a, bb] = b.variants
    expect(await page.getByRole('heading', { name: 'A/B test', level: 2 }).isVisible()).toBe(true)
    expect(await page.locator('#experiment-bars caption').textContent()).toBe('Click rate by variant (over delivered)')
    const rows = await page.locator('#experiment-bars tbody tr').allTextContents()
    expect(rows).toEqual([`a0.00% 0 of ${a.delivered}`, `b (leader)100.00% ${bb.clicked} of ${bb.delivered}`])
    // The bars' widths follow the rates: b full, a empty.
    const widths = await page.locator('#experiment-bars .hbar-fill').evaluateAll((els) => els.map((el) => (el as HTMLElement).style.width))
    expect(widths).toEqual(['0%', '100%'])
    const counts = await page.locator('#experiment tr[data-variant="b"] td').allTextContents()
    expect(counts.slice(0, 3)).toEqual(['b', 'Half price today', String(bb.audience)])
    expect(await page.locator('#experiment-decision').textContent()).toMatch(/^Testing\. Decided at .* unless ended earlier\. b leads; its lead is (not yet )?significant at 95% confidence\.$/)
    expect(await page.locator('#experiment-settings').textContent()).toContain('Test share 50% (rest: ')
  })

  it('ends the test with the winner chosen (not the leader), which goes to the rest', async () => {
    await page.getByLabel('Winner to send to the rest').selectOption('a')
    await page.getByRole('button', { name: 'End test' }).click()
    await page.getByRole('button', { name: 'Yes, end test' }).click()
    await page.getByText('Test ended: a goes to the rest of the audience.').waitFor()
    await page.locator('#experiment-decision').getByText('a: chosen by a person who ended the test early; the leader was b.').waitFor()
    expect(await page.locator('#experiment-decide').count()).toBe(0)
    const done = await waitForBroadcast(herald.t, project, id)
    expect(done).toMatchObject({ status: 'sent', delivered: 16 })
    expect((await view()).experiment).toMatchObject({ winner: 'a', decided_by: 'person', phase: 'sending_winner' })
    await page.locator('#experiment-bars').getByText('a (winner)').waitFor()
    await screenshot(page, 'broadcast-experiment')
  })

  it('fits a 390 px phone, the numbers still in the page', async () => {
    await page.setViewportSize(PHONE)
    await page.reload()
    await page.locator('#experiment-bars').waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)
    expect(await page.locator('#experiment-bars tbody tr').count()).toBe(2)
    expect(await page.locator('#experiment-bars').textContent()).toContain('100.00%')
    await page.setViewportSize(DESKTOP)
    expect(problems.filter((p) => !/status of 4\d\d/.test(p))).toEqual([])
  })
})
