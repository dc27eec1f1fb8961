// The API keys page in a real browser (issue 13): an owner signs in, creates a
// send-scoped key, sees it once (with a copy button and the warning), the key
// works against the API within its scope, a reload never shows it again, the
// owner revokes it and the key is refused at once. At 390 px the table keeps
// the name, prefix, scope and Revoke in reach. HERALD_SCREENSHOTS=1 writes
// docs/screenshots/api-keys.png and phone-api-keys.png (screenshots.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { browserAvailable, launchBrowser, startHerald, type RunningHerald, recordPageProblems } from '../support/browser.ts'
import type { TestProject } from '../support/app.ts'
import { addMember, PASSWORD } from '../support/members.ts'
import { PHONE, screenshot } from './screenshots.ts'

describe.skipIf(!browserAvailable)('the API keys page in Chromium', () => {
  let herald: RunningHerald
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let project: TestProject
  let secret: string
  const problems: string[] = []

  /** A request from outside the browser, as a customer's server would make it. */
  const withKey = async (method: string, path: string, key: string, body?: unknown) => {
    const res = await fetch(`${herald.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    })
    return { status: res.status, body: await res.json() }
  }
  const nav = (name: string) => page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name, exact: true })

  beforeAll(async () => {
    herald = await startHerald()
    project = await herald.t.project({ name: 'Acme Shop', plan: 'plus' })
    await addMember(herald.t, project.id, 'olga@example.com', 'owner')
    browser = await launchBrowser()
    context = await browser.newContext()
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: herald.url })
    page = await context.newPage()
    recordPageProblems(page, problems)
  })
  afterAll(async () => {
    await browser?.close()
    await herald?.close()
  })

  it('the owner signs in and finds API keys in the navigation, with the project\'s first key listed', async () => {
    await page.goto(`${herald.url}/dashboard`)
    await page.getByLabel('Email').fill('olga@example.com')
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
    await page.getByRole('button', { name: 'Continue' }).click()
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await nav('API keys').click()
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor()
    const first = page.locator(`tr[data-key-id="${project.apiKeyId}"]`)
    await first.waitFor()
    expect(await first.textContent()).toContain(`${project.apiKey.slice(0, 14)}…`)
    expect(await first.textContent()).toContain('full')
  })

  it('creates a send key: shown once with a warning and a copy button', async () => {
    await page.getByLabel('Name').fill('Newsletter server')
    await page.getByLabel('Scope').selectOption('send')
    await page.getByRole('button', { name: 'Create key' }).click()
    const box = page.locator('#new-key')
    await box.waitFor()
    expect(await box.textContent()).toContain('it will not be shown again')
    secret = await page.locator('#new-api-key').inputValue()
    expect(secret).toMatch(/^hk_live_[0-9A-Za-z]{32}$/)
    await page.getByRole('button', { name: 'Copy' }).click()
    await page.getByText('Copied.').waitFor()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret)
    const row = page.locator('tr[data-key-id]').filter({ hasText: 'Newsletter server' })
    await row.waitFor()
    expect(await row.textContent()).toContain(secret.slice(0, 14))
    expect(await row.textContent()).toContain('send')
    expect(await row.textContent()).toContain('never')
    await screenshot(page, 'api-keys')
  })

  it('the key works against the API within its scope, and the list then says it was used', async () => {
    const sent = await withKey('POST', '/v1/send', secret, { target: { type: 'all' }, notification: { title: 'Hi', body: 'There' } })
    expect(sent.status).toBe(202)
    const groups = await withKey('GET', '/v1/groups', secret)
    expect(groups).toEqual({ status: 403, body: { error: { code: 'insufficient_scope', message: expect.any(String) } } })
    await page.reload()
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor()
    const row = page.locator('tr[data-key-id]').filter({ hasText: 'Newsletter' })
    await row.waitFor()
    expect(await row.textContent()).not.toContain('never')
    // Shown once: after a reload the page holds the prefix only.
    expect(await page.content()).not.toContain(secret)
    expect(await page.locator('#new-api-key').count()).toBe(0)
  })

  it('at 390 px the key columns and Revoke stay on screen, and the page does not scroll sideways', async () => {
    const before = page.viewportSize()!
    await page.setViewportSize(PHONE)
    const row = page.locator('tr[data-key-id]').filter({ hasText: 'Newsletter' })
    for (const cell of [row.locator('td').nth(0), row.locator('td').nth(1), row.locator('td').nth(2), row.getByRole('button', { name: 'Revoke' })]) {
      const box = (await cell.boundingBox())!
      expect(box.x).toBeGreaterThanOrEqual(0)
      expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width)
    }
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)
    await page.setViewportSize(before)
  })

  it('revokes the key after a confirmation; the key then gets 401 at once', async () => {
    const row = page.locator('tr[data-key-id]').filter({ hasText: 'Newsletter' })
    await row.getByRole('button', { name: 'Revoke' }).click()
    await row.getByText('Anything using it stops working at once.').waitFor()
    await row.getByRole('button', { name: 'Yes, revoke' }).click()
    await page.getByText('revoked.').waitFor()
    expect(await page.locator('tr[data-key-id]').filter({ hasText: 'Newsletter' }).count()).toBe(0)
    const after = await withKey('GET', '/v1/me', secret)
    expect(after).toEqual({ status: 401, body: { error: { code: 'invalid_api_key', message: expect.any(String) } } })
    // The project's first key still works.
    expect((await withKey('GET', '/v1/me', project.apiKey)).status).toBe(200)
  })

  it('a tab signed in with a key that revokes that very key is told so, then signed out; the key gets 401', async () => {
    const made = await withKey('POST', '/v1/api-keys', project.apiKey, { name: 'Laptop' })
    expect(made.status).toBe(201)
    const tab = await browser.newContext().then((c) => c.newPage())
    const tabProblems: string[] = []
    recordPageProblems(tab, tabProblems)
    try {
      await tab.goto(`${herald.url}/dashboard`)
      await tab.getByLabel('API key').fill(made.body.api_key)
      await tab.getByRole('button', { name: 'Sign in' }).click()
      await tab.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
      await tab.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'API keys', exact: true }).click()
      const row = tab.locator(`tr[data-key-id="${made.body.id}"]`)
      await row.waitFor()
      expect(await row.textContent()).toContain('(this tab)')
      await row.getByRole('button', { name: 'Revoke' }).click()
      await row.getByText('This tab is signed in with it and will be signed out.').waitFor()
      await row.getByRole('button', { name: 'Yes, revoke' }).click()
      await tab.getByLabel('API key').waitFor()
      expect(await tab.getByText(/Signed out/).count()).toBeGreaterThan(0)
      expect((await withKey('GET', '/v1/me', made.body.api_key)).status).toBe(401)
      // The owner's key and session are untouched.
      expect((await withKey('GET', '/v1/me', project.apiKey)).status).toBe(200)
    } finally {
      await tab.context().close()
    }
    // A 401 the page asked for itself is the one console error expected here.
    expect(tabProblems.filter((p) => !/401/.test(p))).toEqual([])
  })

  it('a key\'s name is shown as text, never run as markup', async () => {
    const made = await withKey('POST', '/v1/api-keys', project.apiKey, { name: '<img src=x onerror="window.pwned=1">' })
    expect(made.status).toBe(201)
    await page.reload()
    const row = page.locator(`tr[data-key-id="${made.body.id}"]`)
    await row.waitFor()
    expect(await row.locator('td').first().textContent()).toBe('<img src=x onerror="window.pwned=1">')
    expect(await row.locator('img').count()).toBe(0)
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined()
    expect(problems).toEqual([])
  })
})
