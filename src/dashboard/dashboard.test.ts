// /dashboard: served from memory with a strict Content-Security-Policy that
// names where hosted icons live, revalidated on every load.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../../test/support/app.ts'
import { dashboardCsp } from './dashboard.routes.ts'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp({ HERALD_CDN_URL: 'http://media.localhost:4000/base', HERALD_PUBLIC_URL: 'https://push.example.com/' })
})
afterAll(async () => {
  await t.close()
})

describe('/dashboard', () => {
  it('is where GET / leads (302, so browsers do not keep it forever)', async () => {
    for (const method of ['GET', 'HEAD'] as const) {
      const res = await t.app.inject({ method, url: '/' })
      expect(res.statusCode, method).toBe(302)
      expect(res.headers.location, method).toBe('/dashboard')
    }
    expect((await t.app.inject({ method: 'GET', url: '/?x=1' })).headers.location).toBe('/dashboard')
  })

  it('allows images from the CDN origin (icons hosted there), and nothing looser', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/dashboard/' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' https: data: http://media.localhost:4000; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    )
    expect(res.headers['x-frame-options']).toBe('DENY')
    expect(res.headers['referrer-policy']).toBe('no-referrer')
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(dashboardCsp('https://cdn.example.com/x')).toContain("img-src 'self' https: data: https://cdn.example.com;")
  })

  it('carries HERALD_PUBLIC_URL for the site snippet (sites reach Herald by that name, not the dashboard\'s)', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/dashboard' })
    expect(res.body).toContain('<meta name="herald-public-url" content="https://push.example.com">')
    expect(res.body).not.toContain('__HERALD_PUBLIC_URL__')
  })

  it('is revalidated (no-cache) and answers 304 to its ETag', async () => {
    for (const url of ['/dashboard', '/dashboard/js/app.js', '/dashboard/dashboard.css']) {
      const first = await t.app.inject({ method: 'GET', url })
      expect(first.headers['cache-control'], url).toBe('no-cache')
      const again = await t.app.inject({ method: 'GET', url, headers: { 'if-none-match': String(first.headers.etag) } })
      expect(again.statusCode, url).toBe(304)
    }
  })

  it('serves every module the pages import', async () => {
    const seen = new Set<string>()
    const queue = ['/dashboard/js/app.js']
    while (queue.length) {
      const url = queue.pop()!
      if (seen.has(url)) continue
      seen.add(url)
      const res = await t.app.inject({ method: 'GET', url })
      expect(res.statusCode, url).toBe(200)
      expect(res.headers['content-type'], url).toBe('text/javascript; charset=utf-8')
      for (const [, spec] of res.body.matchAll(/^import .* from '([^']+)'/gm)) queue.push(new URL(spec, `http://x${url}`).pathname)
    }
    expect(seen.size).toBeGreaterThanOrEqual(10)
  })

  it('answers no CORS: another site cannot read it with the key', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { origin: 'https://evil.example.com' } })
    expect(res.headers['access-control-allow-origin']).toBeUndefined()
  })
})
