// A broadcast's source (decisions.md §3: api or dashboard): the dashboard
// sends X-Herald-Source: dashboard; everything else is api.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { sendBody } from './broadcasts.fixtures.ts'

let t: TestApp
let p: TestProject
beforeAll(async () => {
  t = await createTestApp()
  p = await t.project({ plan: 'plus' })
})
afterAll(async () => {
  await t.close()
})

async function sendWith(headers: Record<string, string>, body = sendBody()) {
  return t.app.inject({ method: 'POST', url: '/v1/send', headers: { ...p.auth, ...headers }, payload: body })
}

async function source(id: string): Promise<{ api: string; db: string }> {
  const api = (await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: p.auth })).json().source
  const db = (await t.database.db.query<{ source: string }>('SELECT source FROM broadcasts WHERE id = $1', [id])).rows[0].source
  return { api, db }
}

describe('broadcast source', () => {
  it('is api by default and when the header says api', async () => {
    for (const headers of [{}, { 'x-herald-source': 'api' }] as Record<string, string>[]) {
      const res = await sendWith(headers)
      expect(res.statusCode).toBe(202)
      expect(await source(res.json().broadcast_id)).toEqual({ api: 'api', db: 'api' })
    }
  })

  it('is dashboard with X-Herald-Source: dashboard, for immediate and scheduled sends', async () => {
    const now = await sendWith({ 'x-herald-source': 'dashboard' })
    expect(await source(now.json().broadcast_id)).toEqual({ api: 'dashboard', db: 'dashboard' })
    const later = await sendWith({ 'X-Herald-Source': 'dashboard' }, sendBody({ scheduled_at: Date.now() + 3_600_000 }))
    expect(later.statusCode).toBe(202)
    expect(await source(later.json().broadcast_id)).toEqual({ api: 'dashboard', db: 'dashboard' })
  })

  it('refuses any other value with 400 invalid_request, creating nothing', async () => {
    const before = (await t.database.db.query('SELECT count(*)::int AS n FROM broadcasts WHERE project_id = $1', [p.id])).rows[0].n
    for (const value of ['Dashboard', 'cli', '']) {
      const res = await sendWith({ 'x-herald-source': value })
      expect(res.statusCode, value).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
    }
    const after = (await t.database.db.query('SELECT count(*)::int AS n FROM broadcasts WHERE project_id = $1', [p.id])).rows[0].n
    expect(after).toBe(before)
  })
})
