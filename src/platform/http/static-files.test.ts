import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import Fastify from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from './app-type.ts'
import { registerStaticFolder } from './static-files.ts'

describe('registerStaticFolder', () => {
  const app = Fastify() as unknown as App
  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'herald-static-'))
    writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>x</title>')
    mkdirSync(path.join(dir, 'js'))
    writeFileSync(path.join(dir, 'js', 'app.js'), 'export const a = 1\n')
    writeFileSync(path.join(dir, '.hidden'), 'secret')
    registerStaticFolder(app, { prefix: '/site/', dir, cacheControl: 'no-cache', headers: { 'Content-Security-Policy': "default-src 'self'" }, index: 'index.html' })
    await app.ready()
  })
  afterAll(() => app.close())

  it('serves each file with its type, cache policy, ETag, nosniff and extra headers', async () => {
    const response = await app.inject({ url: '/site/js/app.js' })
    expect(response.statusCode).toBe(200)
    expect(response.body).toBe('export const a = 1\n')
    expect(response.headers['content-type']).toBe('text/javascript; charset=utf-8')
    expect(response.headers['cache-control']).toBe('no-cache')
    expect(response.headers['x-content-type-options']).toBe('nosniff')
    expect(response.headers['content-security-policy']).toBe("default-src 'self'")
    expect(response.headers.etag).toMatch(/^"[\w-]{22}"$/)
  })

  it('answers 304 to a matching If-None-Match', async () => {
    const first = await app.inject({ url: '/site/js/app.js' })
    const again = await app.inject({ url: '/site/js/app.js', headers: { 'if-none-match': first.headers.etag as string } })
    expect(again.statusCode).toBe(304)
    expect(again.body).toBe('')
  })

  it('serves the index at the prefix with and without its slash', async () => {
    for (const url of ['/site', '/site/', '/site/index.html']) {
      const response = await app.inject({ url })
      expect(response.statusCode, url).toBe(200)
      expect(response.headers['content-type']).toBe('text/html; charset=utf-8')
    }
  })

  it('serves nothing else: hidden files, traversal and unknown names are 404', async () => {
    for (const url of ['/site/.hidden', '/site/../package.json', '/site/js/../../etc/passwd', '/site/nope.js']) {
      expect((await app.inject({ url })).statusCode, url).toBe(404)
    }
  })
})
