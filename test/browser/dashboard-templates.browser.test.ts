// Compose with templates, variables and languages (issue 24), in a real
// Chromium against a real Herald and its worker: pick a saved template, add a
// language and the send's data, see each sample subscriber's notification and
// each variable's coverage in the confirmation (from the dry run), send, and
// check what each browser received as the local push service decrypted it;
// then save the form as a template. The same page at 390 px fits the screen.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { browserAvailable, launchBrowser, startHerald, type RunningHerald, signInWithApiKey } from '../support/browser.ts'
import { startPushService, type PushService } from '../support/push-service.ts'
import type { TestProject } from '../support/app.ts'
import { DESKTOP, PHONE, screenshot } from './screenshots.ts'

describe.skipIf(!browserAvailable)('compose with templates and languages in Chromium', () => {
  let herald: RunningHerald
  let push: PushService
  let browser: Browser
  let page: Page
  let project: TestProject
  const problems: string[] = []
  const subscribers: Record<string, { endpoint: string }> = {}

  const api = async (method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) =>
    (await herald.t.app.inject({ method, url, headers: project.auth, payload })).json()

  beforeAll(async () => {
    push = await startPushService()
    herald = await startHerald()
    project = await herald.t.project({ name: 'Acme Shop', plan: 'plus' })
    for (const [name, extra] of Object.entries({ ana: { tags: { first_name: 'Ana' }, locale: 'fr-FR' }, bob: { tags: { first_name: 'Bob' } }, nameless: {} })) {
      const subscription = push.createSubscription()
      const res = await herald.t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: { ...subscription, ...extra } })
      if (res.statusCode !== 201) throw new Error(`subscribe ${name}: ${res.statusCode} ${res.body}`)
      subscribers[name] = subscription
    }
    await api('POST', '/v1/templates', {
      name: 'Order shipped',
      notification: { title: 'Hi {{ tags.first_name | default: "there" }}', body: 'Order {{ data.order_id }} is on its way', url: '/orders/{{data.order_id}}' },
    })
    browser = await launchBrowser()
    page = await (await browser.newContext({ viewport: DESKTOP })).newPage()
    page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()) })
    page.on('pageerror', (e) => problems.push(e.message))
    await signInWithApiKey(page, herald.url, project.apiKey)
  })

  afterAll(async () => {
    await browser?.close()
    await herald?.close()
    await push?.close()
  })

  it('picks a template, adds a language and data, previews samples and coverage, sends what each subscriber should get; saves as template', async () => {
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Compose', exact: true }).click()
    await page.getByRole('heading', { name: 'Compose', level: 1 }).waitFor()
    await page.locator('#compose-template').selectOption({ label: 'Order shipped' })
    await page.getByRole('button', { name: 'Use template' }).click()
    expect(await page.getByLabel('Title', { exact: true }).inputValue()).toBe('Hi {{ tags.first_name | default: "there" }}')
    await page.getByLabel('Data (optional)').fill('order_id=A-1042')
    await page.getByLabel('Defaults (optional)').fill('tags.first_name=friend')
    await page.getByRole('button', { name: 'Add a language' }).click()
    await page.getByLabel('Language (BCP 47 tag)').fill('fr')
    await page.getByLabel('Title in this language').fill('Bonjour {{ tags.first_name }}')
    await page.getByLabel('Body in this language').fill('Commande {{ data.order_id }} en route')
    await page.locator('#compose-missing').selectOption('skip_subscriber')

    await page.getByRole('button', { name: 'Send', exact: true }).click()
    const preview = page.locator('#confirm-personalization')
    await preview.waitFor()
    const text = await preview.textContent()
    expect(text, text ?? '').toContain('Bonjour Ana')
    expect(text).toContain('Hi Bob')
    // The template's default filter fills the name in: not missing, so not skipped.
    expect(text).toContain('Hi there')
    expect(text).toContain('tags.first_name')
    expect(text).toContain('2 (67%)')
    await screenshot(page, 'compose-personalized-confirmation')

    await page.locator('#confirm-send').click()
    await page.getByText('Broadcast sent.').waitFor()
    expect(await page.locator('[data-failure="skipped"]').textContent()).toBe('0 skipped')
    await expect.poll(() => push.received.length, { timeout: 15_000 }).toBe(3)
    const got = (name: string) => push.receivedFor(subscribers[name].endpoint)[0]?.payload as Record<string, unknown> | undefined
    expect(got('ana')).toMatchObject({ title: 'Bonjour Ana', body: 'Commande A-1042 en route', url: '/orders/A-1042' })
    expect(got('bob')).toMatchObject({ title: 'Hi Bob', body: 'Order A-1042 is on its way' })
    expect(got('nameless')).toMatchObject({ title: 'Hi there' })

    // Duplicate keeps the data, the choices and the languages.
    await page.getByRole('button', { name: 'Duplicate' }).click()
    await page.getByRole('heading', { name: 'Compose', level: 1 }).waitFor()
    expect(await page.getByLabel('Data (optional)').inputValue()).toBe('order_id=A-1042')
    // The send's defaults went to the API and came back with the broadcast.
    expect(await page.getByLabel('Defaults (optional)').inputValue()).toBe('tags.first_name=friend')
    expect(await page.getByLabel('Language (BCP 47 tag)').inputValue()).toBe('fr')
    expect(await page.getByLabel('Title in this language').inputValue()).toBe('Bonjour {{ tags.first_name }}')
    expect(await page.locator('#compose-missing').inputValue()).toBe('skip_subscriber')

    // Save as template: the duplicated form with a fresh title and body (its French version goes with it).
    await page.getByLabel('Title', { exact: true }).fill('Welcome {{ tags.first_name }}')
    await page.getByLabel('Body', { exact: true }).fill('Glad you are here')
    await page.getByLabel('Save the form as').fill('Welcome')
    await page.getByRole('button', { name: 'Save as template' }).click()
    await page.getByText('Saved as template “Welcome”.').waitFor()
    const saved = (await api('GET', '/v1/templates')).templates.map((t: { name: string; variables: string[] }) => [t.name, t.variables])
    expect(saved).toEqual([['Order shipped', ['data.order_id', 'tags.first_name']], ['Welcome', ['data.order_id', 'tags.first_name']]])
    expect((await api('GET', '/v1/templates')).templates[1].localized).toEqual({ fr: { title: 'Bonjour {{ tags.first_name }}', body: 'Commande {{ data.order_id }} en route' } })

    await page.setViewportSize(PHONE)
    await page.getByRole('button', { name: 'Add a language' }).click()
    await page.locator('#compose-personal').scrollIntoViewIfNeeded()
    for (const id of ['#compose-template', '#use-template', '#add-language', '#compose-missing']) {
      const box = (await page.locator(id).boundingBox())!
      expect(box.x + box.width, id).toBeLessThanOrEqual(PHONE.width)
    }
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)
    await screenshot(page, 'compose-languages-phone')
    expect(problems.filter((p) => !/status of 4\d\d/.test(p))).toEqual([])
  })
})
