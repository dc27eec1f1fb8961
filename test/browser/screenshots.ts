// Screenshots of the dashboard for docs/screenshots/, taken by the browser
// tests where the state they show already exists. Only when HERALD_SCREENSHOTS=1
// (CI never sets it, so a test run does not rewrite them):
//
//   HERALD_SCREENSHOTS=1 npx vitest run --project browser test/browser/dashboard*.browser.test.ts
//
// Each shot comes at two widths: `<name>.png` at 1280 px and `phone-<name>.png`
// at 390 px, the same page resized, then put back to the size it had.
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import type { Page } from 'playwright-core'

export const SCREENSHOTS = process.env.HERALD_SCREENSHOTS === '1'
export const SCREENSHOT_DIR = path.resolve(import.meta.dirname, '../../docs/screenshots')
export const DESKTOP = { width: 1280, height: 860 }
export const PHONE = { width: 390, height: 844 }

/** Lets layout and images settle after a resize: two animation frames, then every <img> loaded or failed. */
async function settle(page: Page): Promise<void> {
  await page.evaluate(() => new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve()))))
  await page.waitForFunction(() => [...document.images].every((img) => img.complete), undefined, { timeout: 5000 }).catch(() => {})
}

/** Writes docs/screenshots/<name>.png (1280 px wide) and phone-<name>.png (390 px wide), full page. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return
  mkdirSync(SCREENSHOT_DIR, { recursive: true })
  const before = page.viewportSize()
  // Keep the pointer off the links, so no hover style shows.
  await page.mouse.move(0, 0)
  for (const [size, file] of [[DESKTOP, `${name}.png`], [PHONE, `phone-${name}.png`]] as const) {
    await page.setViewportSize(size)
    await settle(page)
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, file), fullPage: true })
  }
  if (before) await page.setViewportSize(before)
  await settle(page)
}
