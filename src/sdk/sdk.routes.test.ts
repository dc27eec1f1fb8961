// /sdk/*: what a site embeds, served with Herald's URL written in, cacheable
// briefly and revalidated by ETag, and loadable from any origin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../../test/support/app.ts'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp({ HERALD_PUBLIC_URL: 'https://push.shop.example' })
})
afterAll(() => t.close())

describe('GET /sdk/*', () => {
  it('serves the SDK, its ES module, the service worker and the types', async () => {
    const types: Record<string, string> = {
      '/sdk/herald.js': 'text/javascript; charset=utf-8',
      '/sdk/herald.mjs': 'text/javascript; charset=utf-8',
      '/sdk/sw.js': 'text/javascript; charset=utf-8',
      '/sdk/herald.d.ts': 'text/plain; charset=utf-8',
    }
    for (const [url, type] of Object.entries(types)) {
      const res = await t.app.inject({ url })
      expect(res.statusCode, url).toBe(200)
      expect(res.headers['content-type'], url).toBe(type)
      expect(res.headers['cache-control'], url).toBe('public, max-age=300')
      expect(res.headers['access-control-allow-origin'], url).toBe('*')
      expect(res.headers['cross-origin-resource-policy'], url).toBe('cross-origin')
      expect(res.headers['x-content-type-options'], url).toBe('nosniff')
    }
  })

  it('writes HERALD_PUBLIC_URL into the scripts, and the ETag covers it', async () => {
    for (const url of ['/sdk/herald.js', '/sdk/sw.js']) {
      const res = await t.app.inject({ url })
      expect(res.body, url).toContain("var BASE_URL = 'https://push.shop.example'")
      expect(res.body, url).not.toContain('__HERALD_BASE_URL__')
    }
    const other = await createTestApp({ HERALD_PUBLIC_URL: 'https://other.example' })
    try {
      const a = await t.app.inject({ url: '/sdk/sw.js' })
      const b = await other.app.inject({ url: '/sdk/sw.js' })
      expect(b.body).toContain("var BASE_URL = 'https://other.example'")
      expect(b.headers.etag).not.toBe(a.headers.etag)
    } finally {
      await other.close()
    }
  })

  it('answers 304 to a matching If-None-Match', async () => {
    const first = await t.app.inject({ url: '/sdk/herald.js' })
    const again = await t.app.inject({ url: '/sdk/herald.js', headers: { 'if-none-match': first.headers.etag as string } })
    expect(again.statusCode).toBe(304)
    expect(again.headers['access-control-allow-origin']).toBe('*')
  })

  it('the ES module exports the same SDK as the script tag', async () => {
    const res = await t.app.inject({ url: '/sdk/herald.mjs' })
    expect(res.body).toContain("import './herald.js'")
    expect(res.body).toMatch(/export default Herald/)
  })

  it('serves nothing else under /sdk/', async () => {
    for (const url of ['/sdk/', '/sdk/sdk.routes.ts', '/sdk/../app.ts', '/sdk/nope.js']) {
      expect((await t.app.inject({ url })).statusCode, url).toBe(404)
    }
  })
})
