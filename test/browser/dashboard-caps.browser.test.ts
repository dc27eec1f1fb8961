// Frequency caps and the segment builder in a real Chromium, against a real
// Herald with its worker and the local push service (issue 24): an owner sets
// the project's caps on the Settings page, composes a marketing send whose
// segment is built with the form (tags and groups, the JSON shown as it is
// built) and deferred over the cap, and a transactional one; checked on the
// page and in Herald's own state. Then the same at 390 px: nothing wider than
// the screen, every control usable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Locator, Page } from 'playwright-core'
import { browserAvailable, launchBrowser, recordPageProblems, startHerald, type RunningHerald, signInWithApiKey } from '../support/browser.ts'
import { startPushService, type PushService } from '../support/push-service.ts'
import { send, subscribeBrowser } from '../support/delivery.ts'
import type { TestProject } from '../support/app.ts'
import { DESKTOP, PHONE } from './screenshots.ts'

describe.skipIf(!browserAvailable)('frequency caps and the segment builder in Chromium', () => {
  let herald: RunningHerald
  let push: PushService
  let browser: Browser
  let project: TestProject
  let groupId: string
  const problems: string[] = []
  /** POST /v1/send bodies the pages sent (dry runs included). */
  const sends: Array<Record<string, unknown>> = []

  const me = async () => (await herald.t.app.inject({ method: 'GET', url: '/v1/me', headers: project.auth })).json().project

  async function open(viewport: { width: number; height: number }): Promise<Page> {
    const context = await browser.newContext({ viewport })
    const page = await context.newPage()
    recordPageProblems(page, problems)
    page.on('request', (request) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === '/v1/send') sends.push(JSON.parse(request.postData() ?? '{}'))
    })
    await signInWithApiKey(page, herald.url, project.apiKey)
    return page
  }

  async function go(page: Page, name: string): Promise<void> {
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name, exact: true }).click()
    await page.getByRole('heading', { name, level: 1 }).waitFor()
  }

  beforeAll(async () => {
    push = await startPushService()
    herald = await startHerald()
    project = await herald.t.project({ name: 'Acme Shop', plan: 'plus' })
    groupId = (await herald.t.app.inject({ method: 'POST', url: '/v1/groups', headers: project.auth, payload: { name: 'VIP' } })).json().id
    await subscribeBrowser(herald.t, project, push, { tags: { plan: 'pro' } })
    await subscribeBrowser(herald.t, project, push, { tags: { plan: 'free' }, group_ids: [groupId] })
    await subscribeBrowser(herald.t, project, push, { tags: { plan: 'free' } })
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await herald?.close()
    await push?.close()
  })

  it('at 1280 px: caps set on Settings, a segment built from a tag and a group, a deferred marketing send and a transactional one', async () => {
    const page = await open(DESKTOP)
    await go(page, 'Settings')
    const caps = page.locator('#caps')
    await expect.poll(() => caps.locator('#caps-current').textContent()).toContain('No caps')
    await caps.getByRole('button', { name: 'Add a rule' }).click()
    await caps.getByLabel('Rule 1: at most').fill('1')
    await caps.getByLabel('Rule 1: per').selectOption('1d')
    await caps.getByRole('button', { name: 'Add a rule' }).click()
    await caps.getByLabel('Rule 2: at most').fill('0')
    await caps.getByRole('button', { name: 'Save caps' }).click()
    // Herald's refusal names the rule; nothing is saved.
    await expect.poll(() => caps.getByRole('alert').textContent()).toContain('frequency_caps.1.max')
    expect((await me()).frequency_caps).toEqual([])
    await caps.getByRole('button', { name: 'Remove rule 2' }).click()
    await caps.getByRole('button', { name: 'Save caps' }).click()
    await page.getByText('Frequency caps saved.').waitFor()
    expect((await me()).frequency_caps).toEqual([{ max: 1, per: '1d' }])
    expect(await page.locator('#caps-current').textContent()).toBe('At most 1 per day per subscriber.')

    await go(page, 'Compose')
    await page.getByLabel('Title', { exact: true }).fill('Spring sale')
    await page.getByLabel('Body', { exact: true }).fill('Everything half price')
    await page.getByLabel('Send to').selectOption('segment')
    const builder = page.locator('#segment-builder')
    await builder.getByLabel('Condition 1: tag name').fill('plan')
    await builder.getByLabel('Condition 1: value').fill('pro')
    await builder.getByRole('button', { name: 'Add a condition' }).click()
    await builder.getByLabel('Condition 2: kind').selectOption('group')
    await builder.getByLabel('Condition 2: group').selectOption(groupId)
    await builder.getByLabel('Subscribers matching').selectOption('or')
    const built = { or: [{ tag: 'plan', eq: 'pro' }, { group_id: groupId }] }
    // The JSON the form built, shown in the filter field, and read back in words.
    await expect.poll(async () => JSON.parse((await page.getByLabel('Filter (JSON)').inputValue()) || 'null')).toEqual(built)
    await expect.poll(() => page.locator('#compose-filter-text').textContent()).toBe('Sends to subscribers where: plan = "pro" or in group VIP')

    await page.getByLabel('Kind of message').selectOption('marketing')
    await page.getByLabel('Subscribers over a cap').selectOption('defer')
    await page.getByRole('button', { name: 'Send', exact: true }).click()
    await page.locator('#confirm-send').click()
    await page.waitForURL(/#\/broadcasts\/bdc_/)
    const first = sends.at(-1)!
    expect(first).toMatchObject({ target: { type: 'segment', filter: built }, on_capped: 'defer' })
    expect(first.class).toBeUndefined()
    const firstId = decodeURIComponent(page.url().split('#/broadcasts/')[1])
    await expect.poll(async () => (await herald.t.app.inject({ method: 'GET', url: `/v1/broadcasts/${firstId}`, headers: project.auth })).json().delivered, { timeout: 10_000 }).toBe(2)

    // A transactional send hides the over-a-cap choice and goes out to all, caps or not.
    await go(page, 'Compose')
    await page.getByLabel('Title', { exact: true }).fill('Your order shipped')
    await page.getByLabel('Body', { exact: true }).fill('It is on its way')
    await page.getByLabel('Send to').selectOption('all')
    await page.getByLabel('Kind of message').selectOption('transactional')
    expect(await page.getByLabel('Subscribers over a cap').isVisible()).toBe(false)
    await page.getByRole('button', { name: 'Send', exact: true }).click()
    await page.locator('#confirm-send').click()
    await page.waitForURL(/#\/broadcasts\/bdc_/)
    expect(sends.at(-1)).toMatchObject({ target: { type: 'all' }, class: 'transactional' })
    const secondId = decodeURIComponent(page.url().split('#/broadcasts/')[1])
    await expect.poll(async () => (await herald.t.app.inject({ method: 'GET', url: `/v1/broadcasts/${secondId}`, headers: project.auth })).json(), { timeout: 10_000 })
      .toMatchObject({ status: 'sent', delivered: 3, capped: 0, class: 'transactional' })
    await page.locator('#broadcast-details').getByText('transactional (never capped)').waitFor()

    // A marketing send over the cap: its page counts the subscribers skipped among the failures.
    const capped = await send(herald.t, project, { target: { type: 'all' }, notification: { title: 'Again', body: 'More' } })
    await page.goto(`${herald.url}/dashboard#/broadcasts/${capped}`)
    await expect.poll(() => page.locator('[data-failure="capped"]').textContent(), { timeout: 10_000 }).toBe('3 capped')
    await page.context().close()
  })

  it('at 390 px: the caps editor and the segment builder fit the screen and every control is usable', async () => {
    const page = await open(PHONE)
    const fits = async (where: string) => expect(await page.evaluate(() => document.documentElement.scrollWidth), where).toBeLessThanOrEqual(PHONE.width)
    const usable = async (target: Locator, name: string) => {
      await target.scrollIntoViewIfNeeded()
      const box = (await target.boundingBox())!
      expect(box, name).not.toBeNull()
      expect(box.x, name).toBeGreaterThanOrEqual(0)
      expect(box.x + box.width, name).toBeLessThanOrEqual(PHONE.width)
      await target.click({ trial: true, timeout: 2000 })
    }
    await go(page, 'Settings')
    await fits('settings')
    for (const label of ['Rule 1: at most', 'Rule 1: per']) await usable(page.getByLabel(label), label)
    await usable(page.getByRole('button', { name: 'Save caps' }), 'Save caps')

    await go(page, 'Compose')
    await page.getByLabel('Send to').selectOption('segment')
    await page.locator('#segment-add').click()
    await fits('compose with the builder')
    for (const label of ['Condition 1: kind', 'Condition 1: tag name', 'Condition 1: test', 'Condition 1: value', 'Condition 2: kind', 'Filter (JSON)', 'Kind of message', 'Subscribers over a cap']) {
      await usable(page.getByLabel(label, { exact: true }), label)
    }
    await page.getByLabel('Condition 1: tag name').fill('plan')
    await page.getByLabel('Condition 1: test').selectOption('exists')
    expect(await page.getByLabel('Condition 1: value').isVisible()).toBe(false)
    await expect.poll(async () => JSON.parse((await page.getByLabel('Filter (JSON)').inputValue()) || 'null')).toEqual({ tag: 'plan', exists: true })
    // Values are typed as the segment language wants: numbers and true/false as such, "quoted" text as text.
    const filter = async () => JSON.parse((await page.getByLabel('Filter (JSON)').inputValue()) || 'null')
    await page.getByLabel('Condition 1: test').selectOption('in')
    await page.getByLabel('Condition 1: value').fill('pro, "10", 3, true')
    await expect.poll(filter).toEqual({ tag: 'plan', in: ['pro', '10', 3, true] })
    await page.getByLabel('Condition 1: test').selectOption('gte')
    await page.getByLabel('Condition 1: value').fill('10')
    await page.getByLabel('Condition 2: kind').selectOption('not_group')
    await expect.poll(filter).toEqual({ and: [{ tag: 'plan', gte: 10 }, { not: { group_id: groupId } }] })
    expect(problems).toEqual([])
    await page.context().close()
  })
})
