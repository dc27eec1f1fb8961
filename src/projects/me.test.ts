import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { newId } from '../platform/ids.ts'
import { PLANS } from './plans.ts'
import { updateProject } from './projects.store.ts'

let t: TestApp
let a: TestProject
let b: TestProject
beforeAll(async () => {
  t = await createTestApp()
  a = await t.project({ name: 'Shop A', plan: 'hobby', limits: { groups: 50 } })
  b = await t.project({ name: 'Blog B' })
})
afterAll(async () => {
  await t.close()
})

async function insertSubscriber(projectId: string, status: 'active' | 'unsubscribed' | 'expired'): Promise<void> {
  const id = newId('sub')
  await t.database.db.query('INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, status) VALUES ($1, $2, $3, $4, $5, $6)', [
    id,
    projectId,
    `https://fcm.googleapis.com/fcm/send/${id}`,
    'k',
    'a',
    status,
  ])
}

/** 'YYYY-MM-01' of the current UTC month, or `offset` months from it. */
function monthKey(offset = 0): string {
  const now = new Date()
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1)).toISOString().slice(0, 10)
}

function me(headers: Record<string, string>) {
  return t.app.inject({ method: 'GET', url: '/v1/me', headers })
}

describe('GET /v1/me', () => {
  it("describes the key's project with effective limits and zero usage", async () => {
    const res = await me(b.auth)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      project: {
        id: b.id,
        name: 'Blog B',
        domain: null,
        vapid_public: b.vapidPublic,
        plan: 'free',
        default_icon: null,
        default_timezone: 'UTC',
        quiet_hours: null,
        limits: PLANS.free,
        frequency_caps: [],
        usage: { subscribers: 0, pushes_this_month: 0 },
        expire_after_failures: null,
        expire_after_days_without_delivery: null,
      },
    })
  })

  it("applies the project's overrides on top of its plan", async () => {
    const res = await me(a.auth)
    expect(res.json().project.plan).toBe('hobby')
    expect(res.json().project.limits).toEqual({ ...PLANS.hobby, groups: 50 })
  })

  it('shows domain and default icon once set', async () => {
    await t.database.db.query("UPDATE projects SET domain = 'shop.example.com' WHERE id = $1", [a.id])
    await updateProject(t.database.db, a.id, { default_icon: 'https://shop.example.com/icon.png' })
    const project = (await me(a.auth)).json().project
    expect(project.domain).toBe('shop.example.com')
    expect(project.default_icon).toBe('https://shop.example.com/icon.png')
  })

  it('counts active subscribers and the pushes of the current UTC month only', async () => {
    for (const status of ['active', 'active', 'active', 'unsubscribed', 'expired'] as const) await insertSubscriber(a.id, status)
    await insertSubscriber(b.id, 'active')
    await t.database.db.query('INSERT INTO push_usage (project_id, month, pushes) VALUES ($1, $2, 1234), ($1, $3, 99), ($1, $4, 7), ($5, $2, 5)', [
      a.id,
      monthKey(),
      monthKey(-1),
      monthKey(1),
      b.id,
    ])
    expect((await me(a.auth)).json().project.usage).toEqual({ subscribers: 3, pushes_this_month: 1234 })
    expect((await me(b.auth)).json().project.usage).toEqual({ subscribers: 1, pushes_this_month: 5 })
  })

  it("never shows another project's data", async () => {
    const text = (await me(b.auth)).body
    expect(JSON.parse(text).project.id).toBe(b.id)
    for (const secretOfA of [a.id, a.vapidPublic, 'Shop A', 'shop.example.com']) expect(text).not.toContain(secretOfA)
  })

  it('shows no secret: no VAPID private key, no API key, no key hash or prefix', async () => {
    const res = await me(a.auth)
    const text = res.body
    const project = await t.database.db.query<{ vapid_private: string }>('SELECT vapid_private FROM projects WHERE id = $1', [a.id])
    const keys = await t.database.db.query<{ hash: string; prefix: string }>('SELECT hash, prefix FROM api_keys WHERE project_id = $1', [a.id])
    expect(project.rows[0].vapid_private.length).toBeGreaterThan(10)
    expect(keys.rows.length).toBeGreaterThan(0)
    const secrets = [project.rows[0].vapid_private, a.apiKey, ...keys.rows.flatMap((k) => [k.hash, k.prefix])]
    for (const secret of secrets) expect(text).not.toContain(secret)
    expect(Object.keys(res.json().project).sort()).toEqual(['default_icon', 'default_timezone', 'domain', 'expire_after_days_without_delivery', 'expire_after_failures', 'frequency_caps', 'id', 'limits', 'name', 'plan', 'quiet_hours', 'usage', 'vapid_public'])
    const allKeys = (value: unknown): string[] =>
      value && typeof value === 'object' ? Object.entries(value).flatMap(([k, v]) => [k, ...allKeys(v)]) : []
    expect(allKeys(res.json()).filter((k) => /private|hash|prefix|key|secret/i.test(k))).toEqual([])
  })

  it('answers 401 invalid_api_key without a key, with a bad key and with a revoked key', async () => {
    const revoked = await t.project({ name: 'Revoked' })
    await t.database.db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [revoked.apiKeyId])
    const cases = [{}, { authorization: 'Bearer hk_live_nope' }, { authorization: a.apiKey }, { authorization: `Bearer ${a.apiKey}x` }, revoked.auth]
    for (const headers of cases) {
      const res = await me(headers)
      expect(res.statusCode).toBe(401)
      expect(res.json().error.code).toBe('invalid_api_key')
    }
  })

  it('answers 429 rate_limited over the rate limit', async () => {
    const limited = await t.project({ name: 'Limited', limits: { requests_per_minute: 0 } })
    const res = await me(limited.auth)
    expect(res.statusCode).toBe(429)
    expect(res.json().error.code).toBe('rate_limited')
    expect(res.headers['retry-after']).toBeDefined()
  })

  it('is not open to browsers (no CORS on a bearer route)', async () => {
    const res = await me({ ...a.auth, origin: 'https://evil.example.com' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['access-control-allow-origin']).toBeUndefined()
  })
})

describe('GET /v1/vapid-public-key', () => {
  it('answers the public key without any auth, with CORS and caching', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/v1/vapid-public-key?project=${a.id}`, headers: { origin: 'https://shop.example.com' } })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ vapid_public: a.vapidPublic })
    expect(res.headers['access-control-allow-origin']).toBe('https://shop.example.com')
    expect(res.headers['cache-control']).toBe('public, max-age=3600')
    const other = await t.app.inject({ method: 'GET', url: `/v1/vapid-public-key?project=${b.id}` })
    expect(other.json()).toEqual({ vapid_public: b.vapidPublic })
    expect(b.vapidPublic).not.toBe(a.vapidPublic)
  })

  it('answers 400 missing_project without the parameter (the header does not count)', async () => {
    for (const request of [
      { url: '/v1/vapid-public-key' },
      { url: '/v1/vapid-public-key?project=' },
      { url: '/v1/vapid-public-key', headers: { 'x-service-project': a.id } },
    ]) {
      const res = await t.app.inject({ method: 'GET', ...request })
      expect(res.statusCode).toBe(400)
      expect(res.json().error.code).toBe('missing_project')
    }
  })

  it('answers 404 project_not_found for an unknown project', async () => {
    for (const project of ['prj_doesnotexist', 'x'.repeat(300)]) {
      const res = await t.app.inject({ method: 'GET', url: `/v1/vapid-public-key?project=${project}` })
      expect(res.statusCode).toBe(404)
      expect(res.json().error.code).toBe('project_not_found')
    }
  })

  it('answers 429 rate_limited over the rate limit', async () => {
    const limited = await t.project({ name: 'Limited key', limits: { requests_per_minute: 0 } })
    const res = await t.app.inject({ method: 'GET', url: `/v1/vapid-public-key?project=${limited.id}` })
    expect(res.statusCode).toBe(429)
    expect(res.json().error.code).toBe('rate_limited')
  })
})
