// Real-browser tests: Debian's Chromium driven by playwright-core (never a
// browser downloaded by a test tool), against a real Herald listening on a
// port, with its worker, and a customer's site on another origin.
//
// Files named *.browser.test.ts run in the vitest project "browser" (see
// vitest.config.ts), once, on the embedded database. Where Chromium is not
// installed they are skipped with a message, except in CI (CI=true), where a
// missing browser fails the run: .ci/run installs it.
import fs from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chromium, type Browser, type Page } from 'playwright-core'
import { createTestApp, type TestApp } from './app.ts'

export const CHROMIUM_PATH = process.env.HERALD_CHROMIUM ?? '/usr/bin/chromium'

export const browserAvailable = fs.existsSync(CHROMIUM_PATH)

if (!browserAvailable) {
  const message = `Chromium not found at ${CHROMIUM_PATH} (apt-get install chromium, or set HERALD_CHROMIUM)`
  if (process.env.CI === 'true') throw new Error(`${message}: browser tests cannot be skipped in CI.`)
  console.warn(`${message}: browser tests skipped.`)
}

/**
 * Collects what a page should never show into `problems`: uncaught errors and
 * console errors, except the browser's own line for a 4xx answer (pages that
 * show a refusal on purpose).
 */
export function recordPageProblems(page: Page, problems: string[]): void {
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
  page.on('console', (message) => {
    if (message.type() === 'error' && !/status of 4\d\d/.test(message.text())) problems.push(`console: ${message.text()}`)
  })
}

/** Opens the dashboard and signs in with a project's API key, up to its Overview. */
export async function signInWithApiKey(page: Page, heraldUrl: string, apiKey: string): Promise<void> {
  await page.goto(`${heraldUrl}/dashboard`)
  await page.getByLabel('API key').fill(apiKey)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor()
}

/**
 * Headless Chromium as root in a sandbox-less container, with everything that
 * would reach out to Google's servers turned off (this machine has no
 * internet, and those connection attempts slow the browser down).
 */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  })
}

/** A port nobody listens on right now (the server's public URL must be known before it starts). */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

export interface RunningHerald {
  /** The test app: its database, context and project helper. */
  t: TestApp
  /** Herald's origin as the browser sees it, e.g. http://127.0.0.1:41234 (also HERALD_PUBLIC_URL). */
  url: string
  close(): Promise<void>
}

/**
 * Herald listening on 127.0.0.1 with its worker (`--role all`), so pushes go
 * out to the local push service. 127.0.0.1 is a secure context for the
 * browser, as localhost is, so service workers and push work over plain HTTP.
 */
export async function startHerald(env: Record<string, string> = {}): Promise<RunningHerald> {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const t = await createTestApp({ PORT: String(port), HERALD_PUBLIC_URL: url, HERALD_PUSH_RETRY_BASE_MS: '200', ...env }, { worker: true })
  await t.app.listen({ port, host: '127.0.0.1' })
  return { t, url, close: () => t.close() }
}

export interface Site {
  /** The site's origin, e.g. http://localhost:41235: another origin than Herald's. */
  url: string
  close(): Promise<void>
}

/** A customer's site: static files by path ('/index.html' → content), on localhost. */
export async function startSite(files: Record<string, string>): Promise<Site> {
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname
    const body = files[path === '/' ? '/index.html' : path]
    if (body === undefined) {
      res.writeHead(404).end()
      return
    }
    const type = path.endsWith('.js') ? 'text/javascript' : 'text/html'
    res.writeHead(200, { 'content-type': `${type}; charset=utf-8`, 'cache-control': 'no-store' }).end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://localhost:${port}`,
    close: () => new Promise((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}
