// A page on a customer's site calling Herald from a real browser: the browser
// routes answer CORS, the bearer routes do not (an API key pasted into a web
// page cannot be used from it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Browser, Page } from 'playwright-core'
import { browserAvailable, launchBrowser, startHerald, startSite, type RunningHerald, type Site } from '../support/browser.ts'
import type { TestProject } from '../support/app.ts'

describe.skipIf(!browserAvailable)('cross-origin calls from a customer page', () => {
  let herald: RunningHerald
  let site: Site
  let browser: Browser
  let page: Page
  let project: TestProject

  beforeAll(async () => {
    herald = await startHerald()
    project = await herald.t.project()
    site = await startSite({ '/index.html': '<!doctype html><title>Shop</title><h1>Shop</h1>' })
    browser = await launchBrowser()
    page = await browser.newPage()
    await page.goto(site.url)
  })

  afterAll(async () => {
    await browser?.close()
    await site?.close()
    await herald?.close()
  })

  it('reads the project VAPID key from the site origin', async () => {
    const result = await page.evaluate(async (url) => {
      const res = await fetch(url)
      return { status: res.status, body: await res.json() }
    }, `${herald.url}/v1/vapid-public-key?project=${project.id}`)
    expect(result).toEqual({ status: 200, body: { vapid_public: project.vapidPublic } })
  })

  it('cannot read a bearer route from the site origin, even with a valid key', async () => {
    const outcome = await page.evaluate(async ({ url, key }) => {
      try {
        await fetch(url, { headers: { authorization: `Bearer ${key}` } })
        return 'read'
      } catch (err) {
        return err instanceof TypeError ? 'blocked' : String(err)
      }
    }, { url: `${herald.url}/v1/me`, key: project.apiKey })
    expect(outcome).toBe('blocked')
  })
})
