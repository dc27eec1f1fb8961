// Passwords in a real browser (issue 22, finding 7): a member changes their
// password on the Account page (a wrong current password is refused and
// nobody is signed out), and their other browser is signed out at its next
// request while this one goes on; the operator's reset link sets a new
// password on its page, refuses a weak one in words, and cannot be used
// twice. Each page at 1280 and 390 px, none wider than the screen. Removing
// a member who made an API key names the key that still works.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { browserAvailable, launchBrowser, startHerald, type RunningHerald, recordPageProblems } from '../support/browser.ts'
import { ADMIN_TOKEN, type TestProject } from '../support/app.ts'
import { addMember, PASSWORD } from '../support/members.ts'
import { DESKTOP, PHONE, screenshot } from './screenshots.ts'

const NEW_PASSWORD = 'plum orchard lantern'

async function signIn(page: Page, url: string, email: string, password: string): Promise<void> {
  await page.goto(`${url}/dashboard`)
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password', { exact: true }).fill(password)
  await page.getByRole('button', { name: 'Continue' }).click()
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
}

async function fitsWidth(page: Page, width: number, where: string): Promise<void> {
  expect(await page.evaluate(() => document.documentElement.scrollWidth), where).toBeLessThanOrEqual(width)
}

describe.skipIf(!browserAvailable)('password change and reset in the dashboard, in Chromium', () => {
  let herald: RunningHerald
  let browser: Browser
  let shop: TestProject
  const problems: string[] = []

  beforeAll(async () => {
    herald = await startHerald()
    shop = await herald.t.project({ name: 'Acme Shop', plan: 'plus' })
    await addMember(herald.t, shop.id, 'ann@example.com', 'owner')
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    await herald?.close()
  })

  it('Account: a wrong current password is refused; a change signs the other browser out and this one goes on (1280 and 390 px)', async () => {
    const here = await (await browser.newContext({ viewport: DESKTOP })).newPage()
    const there = await (await browser.newContext({ viewport: PHONE })).newPage()
    for (const page of [here, there]) recordPageProblems(page, problems)
    await signIn(here, herald.url, 'ann@example.com', PASSWORD)
    await signIn(there, herald.url, 'ann@example.com', PASSWORD)

    await here.getByRole('link', { name: 'Account', exact: true }).click()
    await here.getByRole('heading', { name: 'Account', level: 1 }).waitFor()
    expect(await here.locator('#account-email').textContent()).toContain('ann@example.com')
    await fitsWidth(here, DESKTOP.width, 'account page at 1280')

    await here.getByLabel('Current password').fill('not my password')
    await here.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD)
    await here.getByLabel('Repeat the new password').fill(NEW_PASSWORD)
    await here.getByRole('button', { name: 'Change password' }).click()
    await here.getByRole('alert').filter({ hasText: 'The current password is wrong.' }).waitFor()
    // Still signed in, on the same page.
    expect(await here.getByRole('heading', { name: 'Account', level: 1 }).isVisible()).toBe(true)

    await here.getByLabel('Current password').fill(PASSWORD)
    await here.getByLabel('New password', { exact: true }).fill('password1234')
    await here.getByLabel('Repeat the new password').fill('password1234')
    await here.getByRole('button', { name: 'Change password' }).click()
    await here.getByRole('alert').filter({ hasText: 'most common passwords' }).waitFor()

    await here.getByLabel('Current password').fill(PASSWORD)
    await here.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD)
    await here.getByLabel('Repeat the new password').fill(NEW_PASSWORD)
    await here.getByRole('button', { name: 'Change password' }).click()
    await here.getByRole('status').filter({ hasText: 'Password changed.' }).waitFor()
    await screenshot(here, 'account-password')

    // The other browser's next request is refused: it lands on sign-in and says why.
    await there.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Groups', exact: true }).click()
    await there.getByRole('heading', { name: 'Sign in to Herald', level: 1 }).waitFor()
    expect(await there.getByRole('alert').textContent()).toContain('Signed out')

    // This browser goes on with its renewed session: a change that needs the new CSRF token works.
    await here.getByLabel('Current password').fill(NEW_PASSWORD)
    await here.getByLabel('New password', { exact: true }).fill(`${NEW_PASSWORD} again`)
    await here.getByLabel('Repeat the new password').fill(`${NEW_PASSWORD} again`)
    await here.getByRole('button', { name: 'Change password' }).click()
    await here.getByRole('status').filter({ hasText: 'Password changed.' }).waitFor()
    await here.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Groups', exact: true }).click()
    await here.getByRole('heading', { name: 'Groups', level: 1 }).waitFor()

    // The page at phone width: the form and the topbar's Account link fit.
    await signIn(there, herald.url, 'ann@example.com', `${NEW_PASSWORD} again`)
    await there.getByRole('link', { name: 'Account', exact: true }).click()
    await there.getByRole('heading', { name: 'Account', level: 1 }).waitFor()
    expect(await there.getByRole('button', { name: 'Change password' }).isVisible()).toBe(true)
    await fitsWidth(there, PHONE.width, 'account page at 390')
    expect(problems).toEqual([])
  })

  it('Reset: the operator\'s link sets a new password, refuses a weak one, then is used up (1280 and 390 px)', async () => {
    await addMember(herald.t, shop.id, 'bea@example.com', 'editor')
    for (const [viewport, password] of [[DESKTOP, 'desk lamp meadow river'], [PHONE, 'phone harbor violet oak']] as const) {
      const page = await (await browser.newContext({ viewport })).newPage()
      recordPageProblems(page, problems)
      const made = await herald.t.app.inject({ method: 'POST', url: '/admin/v1/users/password-reset', headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { email: 'bea@example.com' } })
      const link = made.json().reset_url
      expect(link.startsWith(`${herald.url}/dashboard/#/reset/`)).toBe(true)

      await page.goto(link)
      await page.getByRole('heading', { name: 'Reset your password', level: 1 }).waitFor()
      expect(await page.locator('#reset-form').textContent()).toContain('bea@example.com')
      await fitsWidth(page, viewport.width, `reset page at ${viewport.width}`)

      await page.getByLabel('New password', { exact: true }).fill('bea@example.com')
      await page.getByLabel('Repeat the new password').fill('bea@example.com')
      await page.getByRole('button', { name: 'Set the new password' }).click()
      await page.getByRole('alert').filter({ hasText: 'must not be your email address' }).waitFor()
      if (viewport === PHONE) await screenshot(page, 'reset-password')

      await page.getByLabel('New password', { exact: true }).fill(password)
      await page.getByLabel('Repeat the new password').fill(password)
      await page.getByRole('button', { name: 'Set the new password' }).click()
      await page.getByText('Your password is set. Sign in with it.').waitFor()
      expect(await page.getByLabel('Email').inputValue()).toBe('bea@example.com')
      await page.getByLabel('Password', { exact: true }).fill(password)
      await page.getByRole('button', { name: 'Continue' }).click()
      await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()

      // The link is used up.
      const again = await (await browser.newContext({ viewport })).newPage()
      await again.goto(link)
      await again.getByRole('alert').filter({ hasText: 'unknown, already used or expired' }).waitFor()
      await fitsWidth(again, viewport.width, `used link at ${viewport.width}`)
    }
    expect(problems).toEqual([])
  })

  it('Members: removing a member who made an API key says which of their keys still work', async () => {
    const adaId = await addMember(herald.t, shop.id, 'ada@example.com', 'admin')
    const ada = await herald.t.app.inject({ method: 'POST', url: '/v1/session', payload: { email: 'ada@example.com', password: PASSWORD } })
    const adaHeaders = { cookie: `herald_session=${/herald_session=([^;]*)/.exec(String(ada.headers['set-cookie']))![1]}`, 'x-csrf-token': ada.json().csrf_token }
    const key = (await herald.t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: adaHeaders, payload: { name: 'Ada deploy' } })).json()

    const page = await (await browser.newContext({ viewport: DESKTOP })).newPage()
    recordPageProblems(page, problems)
    await signIn(page, herald.url, 'ann@example.com', `${NEW_PASSWORD} again`)
    await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Members', exact: true }).click()
    const row = page.locator(`tr[data-user-id="${adaId}"]`)
    await row.getByRole('button', { name: 'Remove' }).click()
    await row.getByRole('button', { name: 'Yes, remove' }).click()
    const message = page.getByRole('status').filter({ hasText: 'ada@example.com removed.' })
    await message.waitFor()
    expect(await message.textContent()).toContain(`Ada deploy (${key.prefix}…)`)
    expect(problems).toEqual([])
  })
})
