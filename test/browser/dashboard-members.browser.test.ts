// Team access in a real browser (issue 13): the operator's invite link →
// the first owner sets a password → signs in → joins a second project by its
// link while signed in, and a third from a fresh browser by signing in on the
// invite page (no password goes with the link for an existing account, issue
// 22) → switches between projects;
// the owner invites a viewer, who sees no Send button and whose direct API
// attempt is refused; the owner changes the viewer's role and removes them,
// the editor composes and sends; the owner's Audit log page shows the invite,
// the role change and the editor's send, filtered and at phone width; the
// last owner cannot step down.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { browserAvailable, launchBrowser, startHerald, type RunningHerald, recordPageProblems } from '../support/browser.ts'
import { ADMIN_TOKEN, type TestProject } from '../support/app.ts'
import { subscribe } from '../../src/subscribers/subscribers.fixtures.ts'
import { screenshot } from './screenshots.ts'

const PASSWORD = 'owner password 123'

function nav(page: Page, name: string) {
  return page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name, exact: true })
}

async function acceptInvite(page: Page, link: string, projectName: string, email: string, password: string) {
  await page.goto(link)
  await page.getByRole('heading', { name: `Join ${projectName}`, level: 1 }).waitFor()
  await page.getByLabel('Choose a password').fill(password)
  await page.getByLabel('Repeat the password').fill(password)
  await page.getByRole('button', { name: 'Join the project' }).click()
  await page.getByText(`You joined ${projectName}.`).waitFor()
  expect(await page.getByLabel('Email').inputValue()).toBe(email)
  await page.getByLabel('Password', { exact: true }).fill(password)
  await page.getByRole('button', { name: 'Continue' }).click()
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
}

describe.skipIf(!browserAvailable)('members in the dashboard, in Chromium', () => {
  let herald: RunningHerald
  let browser: Browser
  let ownerContext: BrowserContext
  let viewerContext: BrowserContext
  let owner: Page
  let viewer: Page
  let shop: TestProject
  let blog: TestProject
  let viewerLink: string
  const problems: string[] = []
  const db = (sql: string, params: unknown[]) => herald.t.database.db.query(sql, params).then((r) => r.rows)
  const operatorInvite = async (projectId: string, email: string, role: string) =>
    (await herald.t.app.inject({ method: 'POST', url: `/admin/v1/projects/${projectId}/members`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { email, role } })).json()

  beforeAll(async () => {
    herald = await startHerald()
    shop = await herald.t.project({ name: 'Acme Shop', plan: 'plus' })
    blog = await herald.t.project({ name: 'Beta Blog' })
    browser = await launchBrowser()
    ownerContext = await browser.newContext()
    viewerContext = await browser.newContext()
    owner = await ownerContext.newPage()
    viewer = await viewerContext.newPage()
    for (const page of [owner, viewer]) recordPageProblems(page, problems)
  })
  afterAll(async () => {
    await browser?.close()
    await herald?.close()
  })

  it('the operator\'s invite link lets the first owner set a password and sign in', async () => {
    const link = (await operatorInvite(shop.id, 'olga@example.com', 'owner')).invite_url
    expect(link.startsWith(`${herald.url}/dashboard/#/invite/`)).toBe(true)
    await acceptInvite(owner, link, 'Acme Shop', 'olga@example.com', PASSWORD)
    expect(await owner.locator('#project-name').textContent()).toContain('Acme Shop')
    expect(await owner.locator('#role').textContent()).toBe('owner')
    expect(await nav(owner, 'Members').isVisible()).toBe(true)
    // The cookie is HttpOnly: no script of the page can read it.
    expect(await owner.evaluate(() => document.cookie)).toBe('')
    expect(await owner.evaluate(() => sessionStorage.getItem('herald.apiKey'))).toBeNull()
  })

  it('signed in, the owner joins a second project by its link with one button, and acts in it', async () => {
    const link = (await operatorInvite(blog.id, 'olga@example.com', 'editor')).invite_url
    await owner.goto(link)
    await owner.getByRole('heading', { name: 'Join Beta Blog', level: 1 }).waitFor()
    await owner.getByText('You are signed in as olga@example.com.').waitFor()
    // Nothing on the page asks for a password.
    expect(await owner.locator('input[type=password]').count()).toBe(0)
    await owner.getByRole('button', { name: 'Join the project' }).click()
    await owner.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await expect.poll(() => owner.locator('#project-name').textContent()).toContain('Beta Blog')
    expect(await owner.locator('#role').textContent()).toBe('editor')
  })

  it('from a browser not signed in, an existing account cannot join with a password; it signs in on the invite page and joins', async () => {
    const gamma = await herald.t.project({ name: 'Gamma Games' })
    const link = (await operatorInvite(gamma.id, 'olga@example.com', 'viewer')).invite_url
    const context = await browser.newContext()
    const page = await context.newPage()
    recordPageProblems(page, problems)
    await page.goto(link)
    await page.getByRole('heading', { name: 'Join Gamma Games', level: 1 }).waitFor()
    // The page does not know whether the email has an account: it offers both ways.
    await page.getByRole('heading', { name: 'New to Herald', level: 2 }).waitFor()
    await page.getByRole('heading', { name: 'Already have an account', level: 2 }).waitFor()
    await page.getByLabel('Choose a password').fill('a guess at her password')
    await page.getByLabel('Repeat the password').fill('a guess at her password')
    await page.getByRole('button', { name: 'Join the project' }).click()
    await page.getByText('olga@example.com already has an account: sign in with its password below to join.').waitFor()
    expect(await db('SELECT m.role FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = $1 AND m.project_id = $2', ['olga@example.com', gamma.id])).toEqual([])
    expect(await page.getByLabel('Email').inputValue()).toBe('olga@example.com')
    await page.getByLabel('Your password').fill(PASSWORD)
    await page.getByRole('button', { name: 'Sign in and join' }).click()
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    await expect.poll(() => page.locator('#project-name').textContent()).toContain('Gamma Games')
    expect(await page.locator('#role').textContent()).toBe('viewer')
    expect(await db('SELECT m.role FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = $1 AND m.project_id = $2', ['olga@example.com', gamma.id])).toEqual([{ role: 'viewer' }])
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('heading', { name: 'Sign in to Herald' }).waitFor()
    await context.close()
  })

  it('switches between the projects the owner belongs to', async () => {
    await owner.reload()
    await owner.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    const switcher = owner.getByLabel('Project')
    expect(await switcher.isVisible()).toBe(true)
    expect(await nav(owner, 'Members').isVisible()).toBe(false)
    await owner.getByLabel('Project').selectOption(shop.id)
    await expect.poll(() => owner.locator('#project-name').textContent()).toContain('Acme Shop')
    await nav(owner, 'Members').waitFor()
  })

  it('the owner sees the VAPID keys with their counts in Settings, rotates, and retires the unused old key (issue 23)', async () => {
    await nav(owner, 'Settings').click()
    await owner.getByRole('heading', { name: 'VAPID keys', level: 2 }).waitFor()
    const rows = owner.locator('#vapid-keys tbody tr')
    await expect.poll(() => rows.count()).toBe(1)
    expect(await rows.first().textContent()).toContain('Current')
    await owner.getByRole('button', { name: 'Rotate keys', exact: true }).click()
    await owner.getByRole('button', { name: 'Yes, rotate keys' }).click()
    await owner.getByText('New key pair is current.').waitFor()
    await expect.poll(() => rows.count()).toBe(2)
    // The old key has no subscriber here: it still signs, and can be retired.
    expect(await rows.nth(0).textContent()).toContain('Still signing')
    expect(await rows.nth(1).textContent()).toContain('Current')
    await rows.nth(0).getByRole('button', { name: 'Retire', exact: true }).click()
    await owner.getByRole('button', { name: 'Yes, retire' }).click()
    await owner.getByText('Key retired.').waitFor()
    expect(await rows.nth(0).textContent()).toContain('Retired')
    const keys = await db('SELECT retired_at IS NOT NULL AS retired FROM vapid_keys WHERE project_id = $1 ORDER BY created_at, id', [shop.id])
    expect(keys).toEqual([{ retired: true }, { retired: false }])
  })

  it('the owner invites a viewer from the Members page and gets a link', async () => {
    await nav(owner, 'Members').click()
    await owner.getByRole('heading', { name: 'Members', level: 1 }).waitFor()
    await owner.getByLabel('Email').fill('vic@example.com')
    await owner.getByLabel('Role', { exact: true }).selectOption('viewer')
    await owner.getByRole('button', { name: 'Create invite link' }).click()
    viewerLink = await owner.locator('#invite-url').inputValue()
    expect(viewerLink).toMatch(/#\/invite\/[A-Za-z0-9_-]{43}$/)
    await owner.locator('tr[data-invite-id]').filter({ hasText: 'vic@example.com' }).waitFor()
  })

  it('the viewer joins, sees no Compose link and no Send button, and a direct API attempt is refused', async () => {
    await acceptInvite(viewer, viewerLink, 'Acme Shop', 'vic@example.com', 'viewer password 1')
    expect(await viewer.locator('#role').textContent()).toBe('viewer')
    expect(await nav(viewer, 'Compose').isVisible()).toBe(false)
    expect(await nav(viewer, 'Members').isVisible()).toBe(false)
    await viewer.goto(`${herald.url}/dashboard#/compose`)
    await viewer.locator('#cannot-send').waitFor()
    expect(await viewer.getByRole('button', { name: 'Send', exact: true }).count()).toBe(0)
    await nav(viewer, 'Groups').click()
    await viewer.getByRole('heading', { name: 'Groups', level: 1 }).waitFor()
    expect(await viewer.getByRole('button', { name: 'Create group' }).count()).toBe(0)
    // Straight to the API with the session and its CSRF token: the role decides.
    const attempt = await viewer.evaluate(async () => {
      const session = await (await fetch('/v1/session')).json()
      const res = await fetch('/v1/send', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': session.csrf_token },
        body: JSON.stringify({ target: { type: 'all' }, notification: { title: 'Hi', body: 'There' } }),
      })
      return { status: res.status, body: await res.json() }
    })
    expect(attempt).toEqual({ status: 403, body: { error: { code: 'insufficient_role', message: expect.any(String) } } })
    expect(await db('SELECT id FROM broadcasts WHERE project_id = $1', [shop.id])).toEqual([])
  })

  it('the viewer sees a subscriber\'s push endpoint in part, and is told why (issue 22)', async () => {
    const id = await subscribe(herald.t, shop, { external_id: 'masked-1' })
    const [{ endpoint }] = await db('SELECT endpoint FROM subscribers WHERE id = $1', [id]) as Array<{ endpoint: string }>
    await viewer.goto(`${herald.url}/dashboard#/subscribers/${id}`)
    await viewer.getByText('Shown in part: only owners and admins see a push endpoint whole.').waitFor()
    const page = await viewer.content()
    expect(page).toContain(`https://fcm.googleapis.com/…${endpoint.slice(-6)}`)
    expect(page).not.toContain(endpoint)
  })

  it('the owner changes the viewer to editor: the viewer\'s page then offers Compose', async () => {
    await owner.reload()
    await owner.getByRole('heading', { name: 'Members', level: 1 }).waitFor()
    await owner.getByLabel('Role of vic@example.com').selectOption('editor')
    await owner.getByText('vic@example.com is now editor.').waitFor()
    expect(await db("SELECT m.role FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = 'vic@example.com'", [])).toEqual([{ role: 'editor' }])
    await viewer.reload()
    await nav(viewer, 'Compose').waitFor()
  })

  it('the editor composes and sends from the dashboard', async () => {
    await subscribe(herald.t, shop)
    await nav(viewer, 'Compose').click()
    await viewer.getByLabel('Title').fill('Team news')
    await viewer.getByLabel('Body').fill('Sent by an editor.')
    await viewer.getByRole('button', { name: 'Send', exact: true }).click()
    await viewer.locator('#send-confirmation').waitFor()
    await viewer.locator('#confirm-send').click()
    await viewer.waitForURL(/#\/broadcasts\/bdc_[0-9a-z]{26}$/)
    expect(await db('SELECT source FROM broadcasts WHERE project_id = $1', [shop.id])).toEqual([{ source: 'dashboard' }])
  })

  it('the owner\'s Audit log page shows the invite, the role change and the editor\'s send; the editor has no such page', async () => {
    expect(await nav(viewer, 'Audit log').isVisible()).toBe(false)
    await owner.reload()
    await nav(owner, 'Audit log').click()
    await owner.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor()
    const rows = owner.locator('tr[data-audit-id]')
    const texts = await rows.allTextContents()
    const send = texts.findIndex((t) => t.includes('broadcast.send'))
    expect(send, texts.join('\n')).toBeGreaterThanOrEqual(0)
    // Newest first: the send, then the role change, then the invites.
    expect(texts[send]).toContain('vic@example.com')
    expect(texts.some((t) => t.includes('member.role_change') && t.includes('olga@example.com') && t.includes('vic@example.com'))).toBe(true)
    expect(texts.some((t) => t.includes('member.invite') && t.includes('olga@example.com') && t.includes('vic@example.com'))).toBe(true)
    expect(texts.some((t) => t.includes('member.invite') && t.includes('Operator'))).toBe(true)
    expect(texts.findIndex((t) => t.includes('member.role_change'))).toBeGreaterThan(send)
    await screenshot(owner, 'audit-log')

    await owner.getByLabel('Action').selectOption('broadcast.')
    await expect.poll(async () => (await rows.allTextContents()).every((t) => t.includes('broadcast.'))).toBe(true)
    expect(await rows.count()).toBe(1)
    await owner.getByLabel('Action').selectOption('')
    await expect.poll(() => rows.count()).toBeGreaterThan(1)
    const vic = ((await db("SELECT id FROM users WHERE email = 'vic@example.com'", [])) as Array<{ id: string }>)[0].id
    await owner.getByLabel('Actor').selectOption(vic)
    // Vic's entries only: joining by the invite link, his send, and his sign-ins (account events are in the log too).
    await expect.poll(async () => (await rows.allTextContents()).every((t) => t.includes('vic@example.com') && /broadcast\.send|member\.join|session\.sign_in/.test(t))).toBe(true)
    const own = await rows.allTextContents()
    expect(own.some((t) => t.includes('broadcast.send'))).toBe(true)
    expect(own.some((t) => t.includes('member.join'))).toBe(true)
    // Usable on a phone: each entry is a card, so who, the action and the target are in view without scrolling sideways.
    await owner.setViewportSize({ width: 390, height: 844 })
    expect(await owner.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    for (const cell of await rows.first().locator('td').all()) {
      const box = (await cell.boundingBox())!
      expect(box.x).toBeGreaterThanOrEqual(0)
      expect(box.x + box.width).toBeLessThanOrEqual(390)
    }
    await owner.setViewportSize({ width: 1280, height: 860 })
    await nav(owner, 'Members').click()
    await owner.getByRole('heading', { name: 'Members', level: 1 }).waitFor()
  })

  it('the last owner cannot step down, and the page says why', async () => {
    await owner.getByLabel('Role of olga@example.com').selectOption('admin')
    await owner.getByText('at least one owner').waitFor()
    expect(await owner.getByLabel('Role of olga@example.com').inputValue()).toBe('owner')
  })

  it('the owner removes the member, who loses the project at once', async () => {
    const row = owner.locator('tr[data-user-id]').filter({ hasText: 'vic@example.com' })
    await row.getByRole('button', { name: 'Remove' }).click()
    await row.getByRole('button', { name: 'Yes, remove' }).click()
    await owner.getByText('vic@example.com removed.').waitFor()
    expect(await db("SELECT m.role FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = 'vic@example.com'", [])).toEqual([])
    const status = await viewer.evaluate(async () => (await fetch('/v1/me')).status)
    expect(status).toBe(404)
  })

  it('signing out ends the session on the server too', async () => {
    await owner.getByRole('button', { name: 'Sign out' }).click()
    await owner.getByRole('heading', { name: 'Sign in to Herald' }).waitFor()
    await expect.poll(async () => (await db('SELECT 1 FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.email = $1', ['olga@example.com'])).length).toBe(0)
    await owner.reload()
    await owner.getByRole('heading', { name: 'Sign in to Herald' }).waitFor()
    expect(problems).toEqual([])
  })
})
