// GET /v1/broadcasts/export (issue 25): the project's broadcasts with their
// counts and funnel, newest first, filtered like the list plus a date range,
// streamed a page at a time; titles an API caller wrote as formulas reach a
// spreadsheet neutralised; another project's broadcasts never appear.
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'csv-parse/sync'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { newId } from '../platform/ids.ts'
import { createHeraldClient } from '../client/index.ts'
import { BROADCAST_EXPORT_COLUMNS, BROADCAST_EXPORT_PAGE_SIZE } from './export.service.ts'

let t: TestApp
let project: TestProject
const ids: Record<string, string> = {}
const DAY = 86_400_000
const T0 = Date.UTC(2026, 9, 1)

interface Row { status?: string; source?: string; title?: string; created: number; audience?: number; delivered?: number; failed?: number; skipped?: number; clicked?: number; dismissed?: number; shown?: number }

async function insert(projectId: string, row: Row): Promise<string> {
  // Ids order by their millisecond only (the rest is random): one millisecond apart, id order is insertion order.
  await new Promise((resolve) => setTimeout(resolve, 2))
  const id = newId('bdc')
  await t.ctx.db.query(
    `INSERT INTO broadcasts (id, project_id, status, source, target, title, body, url, ttl, urgency, audience, delivered, failed, failed_skipped, failed_gone, clicked, dismissed, created_at, started_at, finished_at, shown)
     VALUES ($1, $2, $3, $4, '{"type":"all"}', $5, 'Body, with "quotes"', '/sale', 86400, 'normal', $6, $7, $8, $9, $8::int - $9::int, $10, $11, $12, $12, $12, $13)`,
    [id, projectId, row.status ?? 'sent', row.source ?? 'api', row.title ?? 'Hello', row.audience ?? 0, row.delivered ?? 0, row.failed ?? 0, row.skipped ?? 0,
      row.clicked ?? 0, row.dismissed ?? 0, new Date(row.created), row.shown ?? 0],
  )
  return id
}

beforeAll(async () => {
  t = await createTestApp()
  project = await t.project()
  // ids are time-ordered by creation, so insert oldest first: id order is created_at order.
  ids.old = await insert(project.id, { created: T0, audience: 10, delivered: 8, failed: 2, clicked: 2, dismissed: 1, shown: 5 })
  ids.dash = await insert(project.id, { created: T0 + DAY, source: 'dashboard', audience: 5, delivered: 4, failed: 1, skipped: 1, clicked: 1 })
  ids.evil = await insert(project.id, { created: T0 + 2 * DAY, title: '=HYPERLINK("http://evil.example","Click")' })
  ids.canceled = await insert(project.id, { created: T0 + 3 * DAY, status: 'canceled' })
  const other = await t.project()
  ids.foreign = await insert(other.id, { created: T0 + DAY, title: 'theirs' })
}, 300_000)
afterAll(async () => {
  await t?.close()
})

const get = (url: string, headers = project.auth) => t.app.inject({ method: 'GET', url, headers })
const rows = (body: string) => parse(body, { columns: true }) as Array<Record<string, string>>

describe('broadcast export', () => {
  it("streams CSV, newest first, with the counts and funnel; never another project's broadcasts", async () => {
    const res = await get('/v1/broadcasts/export')
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8')
    expect(res.headers['content-disposition']).toBe(`attachment; filename="broadcasts-${project.id}.csv"`)
    expect(res.body.split('\n')[0]).toBe(BROADCAST_EXPORT_COLUMNS.join(','))
    const all = rows(res.body)
    expect(all.map((r) => r.id)).toEqual([ids.canceled, ids.evil, ids.dash, ids.old])
    expect(res.body).not.toContain(ids.foreign)
    expect(all[3]).toMatchObject({
      created_at: new Date(T0).toISOString(), scheduled_at: '', status: 'sent', source: 'api', title: 'Hello', body: 'Body, with "quotes"', url: '/sale',
      target: '{"type":"all"}', audience: '10', sent: '10', delivered: '8', failed: '2', clicked: '2', dismissed: '1', click_rate: '0.25',
      // The funnel of GET /v1/broadcasts/:id: a path URL without a project domain carries no declarative form.
      cannot_report_shown: '0', shown: '5', shown_rate: '0.625', click_through_shown: '0.4',
    })
    // A personalization skip failed without being sent: 4 delivered + 1 failed, of which 1 never left Herald.
    expect(all[2]).toMatchObject({ source: 'dashboard', audience: '5', sent: '4', delivered: '4', failed: '1', click_rate: '0.25' })
    expect(all[1]!.click_rate).toBe('')
  })

  it('a title a spreadsheet would run as a formula is neutralised in CSV and left as it is in NDJSON', async () => {
    const evil = rows((await get('/v1/broadcasts/export')).body).find((r) => r.id === ids.evil)!
    expect(evil.title).toBe(`'=HYPERLINK("http://evil.example","Click")`)
    const ndjson = await get('/v1/broadcasts/export?format=ndjson')
    expect(ndjson.headers['content-type']).toBe('application/x-ndjson')
    const lines = ndjson.body.trim().split('\n').map((line) => JSON.parse(line))
    expect(lines.find((l) => l.id === ids.evil).title).toBe('=HYPERLINK("http://evil.example","Click")')
    expect(lines.find((l) => l.id === ids.old)).toMatchObject({ audience: 10, delivered: 8, click_rate: 0.25, created_at: new Date(T0).toISOString() })
  })

  it.each([
    ['status=canceled', ['canceled']],
    ['source=dashboard', ['dash']],
    [`from=${T0 + DAY}`, ['canceled', 'evil', 'dash']],
    [`from=${T0 + DAY}&to=${T0 + 3 * DAY}`, ['evil', 'dash']],
    [`status=sent&to=${T0 + DAY}`, ['old']],
    [`status=scheduled`, []],
  ])('?%s selects what it says', async (query, expected) => {
    const res = await get(`/v1/broadcasts/export?${query}`)
    expect(res.statusCode).toBe(200)
    expect(rows(res.body).map((r) => r.id)).toEqual(expected.map((name) => ids[name]))
  })

  it.each(['status=done', 'source=cli', 'from=-1', 'format=xlsx', `from=${T0}&to=${T0}`])('?%s is a 400 invalid_request', async (query) => {
    const res = await get(`/v1/broadcasts/export?${query}`)
    expect(res.statusCode).toBe(400)
    expect(res.json().error.code).toBe('invalid_request')
  })

  it(`pages through more than ${BROADCAST_EXPORT_PAGE_SIZE} broadcasts, each once, newest first`, async () => {
    const big = await t.project()
    const n = BROADCAST_EXPORT_PAGE_SIZE + 3
    await t.ctx.db.query(
      `INSERT INTO broadcasts (id, project_id, status, target, title, body, url, ttl, urgency)
       SELECT 'bdc_' || lpad(i::text, 26, '0'), $1, 'sent', '{"type":"all"}', 'T' || i, 'B', '/', 86400, 'normal' FROM generate_series(1, $2::int) i`,
      [big.id, n],
    )
    const out = rows((await get('/v1/broadcasts/export', big.auth)).body)
    expect(out).toHaveLength(n)
    expect(new Set(out.map((r) => r.id)).size).toBe(n)
    expect(out[0]!.title).toBe(`T${n}`)
  })

  it('the typed client reads it, filters included', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' })
    const client = createHeraldClient({ baseUrl: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`, apiKey: project.apiKey })
    expect(rows(await client.broadcasts.exportText({ source: 'dashboard' })).map((r) => r.id)).toEqual([ids.dash])
    let text = ''
    for await (const chunk of await client.broadcasts.export({ format: 'ndjson', status: 'canceled' })) text += Buffer.from(chunk).toString()
    expect(JSON.parse(text).id).toBe(ids.canceled)
    expect(rows(await client.subscribers.exportText({ format: 'csv', status: 'expired' }))).toEqual([])
  })
})
