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
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ ok: true })
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
