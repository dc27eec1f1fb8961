import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from './support/app.ts'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('platform', () => {
  it('answers /healthz and /readyz', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ ok: true, version: expect.any(String) })
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' })
    expect(ready.statusCode).toBe(200)
  })

  it('answers an unknown route with 404 not_found', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/nothing-here' })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toEqual({ error: { code: 'not_found', message: expect.any(String) } })
  })

  it('answers a known route with the wrong method with 405 method_not_allowed', async () => {
    const res = await t.app.inject({ method: 'PUT', url: '/healthz' })
    expect(res.statusCode).toBe(405)
    expect(res.json().error.code).toBe('method_not_allowed')
    expect(res.headers.allow).toBe('GET')
  })

  it('serves the OpenAPI document', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' })
    expect(res.statusCode).toBe(200)
    expect(res.json().openapi).toBe('3.1.0')
  })

  it('keeps <…> in the OpenAPI texts inside code spans: /docs renders them as Markdown and drops bare tags ("Bearer ;")', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    const texts: string[] = []
    const walk = (node: unknown): void => {
      if (!node || typeof node !== 'object') return
      for (const [key, value] of Object.entries(node)) {
        if ((key === 'description' || key === 'summary') && typeof value === 'string') texts.push(value)
        else walk(value)
      }
    }
    walk(doc)
    expect(texts.length).toBeGreaterThan(50)
    const outsideCode = (text: string) => text.replace(/`[^`]*`/g, '')
    expect(texts.filter((text) => /<[A-Za-z!/][^>]*>/.test(outsideCode(text)))).toEqual([])
    expect(doc.info.description).toContain('`Authorization: Bearer <API key>`')
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'hk_live_…' })
  })
})

describe('router errors', () => {
  it('answers an over-long path parameter with Herald\'s error body', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/subscribers/${'x'.repeat(1100)}` })
    expect(res.statusCode).toBe(400)
    expect(res.json().error.code).toBe('invalid_request')
  })

  it('answers a malformed URL with Herald\'s error body', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/groups/%E0%A4%A' })
    expect(res.statusCode).toBe(400)
    expect(res.json().error.code).toBe('invalid_request')
  })
})

describe('request bodies', () => {
  it('answers a body that is not JSON with 400 invalid_json', async () => {
    const project = await t.project()
    for (const [type, payload] of [['text/plain', '{"name":"x"}'], ['application/json', '{"name":'], ['application/x-www-form-urlencoded', 'name=x']]) {
      const res = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: { ...project.auth, 'content-type': type }, payload })
      expect(res.statusCode, type).toBe(400)
      expect(res.json().error.code, type).toBe('invalid_json')
    }
    const groups = await t.app.inject({ method: 'GET', url: '/v1/groups', headers: project.auth })
    expect(groups.json().groups).toEqual([])
  })

  it('answers a body over the limit with 413 payload_too_large', async () => {
    const project = await t.project()
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/groups',
      headers: { ...project.auth, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'x', description: 'y'.repeat(70_000) }),
    })
    expect(res.statusCode).toBe(413)
    expect(res.json().error.code).toBe('payload_too_large')
  })
})
