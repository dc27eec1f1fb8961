// POST /v1/subscribers/import (issue 23), on the storage mode under test:
// NDJSON streamed in, bad lines reported, idempotent, capped, project-bound.
import { Readable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { IMPORT_LINE_MAX_BYTES } from './import.service.ts'
import { pushKeys, subscribe, subscription } from './subscribers.fixtures.ts'

let t: TestApp
// The machine running the suite may be busy: a fresh database can take a while.
beforeAll(async () => {
  t = await createTestApp()
}, 300_000)
afterAll(async () => {
  await t?.close()
})

const NDJSON = { 'content-type': 'application/x-ndjson' }

function ndjson(lines: unknown[]): string {
  return lines.map((line) => (typeof line === 'string' ? line : JSON.stringify(line))).join('\n') + '\n'
}
function importBody(project: TestProject, payload: string | Readable, headers: Record<string, string> = NDJSON) {
  return t.app.inject({ method: 'POST', url: '/v1/subscribers/import', headers: { ...project.auth, ...headers }, payload })
}
async function createGroup(project: TestProject, name: string): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: project.auth, payload: { name } })
  expect(res.statusCode).toBe(201)
  return res.json().id
}
async function list(project: TestProject, query = ''): Promise<any[]> {
  const res = await t.app.inject({ method: 'GET', url: `/v1/subscribers?limit=100${query}`, headers: project.auth })
  expect(res.statusCode).toBe(200)
  return res.json().subscribers
}

describe('POST /v1/subscribers/import', () => {
  it('imports the good lines, reports each bad one with its line, field and reason, and marks the new subscribers source import', async () => {
    const project = await t.project({ plan: 'pro' })
    const news = await createGroup(project, 'news')
    const a = subscription({ external_id: 'u1', tags: { plan: 'gold' }, groups: ['news'], created_at: '2024-01-02T03:04:05.000Z' })
    const b = subscription({ group_ids: [news], created_at: 1_600_000_000_000 })
    const res = await importBody(project, ndjson([
      a,
      '{not json',
      { endpoint: 'https://fcm.googleapis.com/fcm/send/x', keys: { p256dh: 'k', auth: 'a' }, tags: { 'bad key!': 1 } },
      { endpoint: 'https://fcm.googleapis.com/fcm/send/y', keys: { auth: 'a' } },
      { endpoint: 'ftp://push.example.com/z', keys: pushKeys() },
      '[1, 2]',
      '',
      b,
    ]))
    expect(res.statusCode, res.body).toBe(200)
    expect(res.json()).toEqual({
      imported: 2,
      updated: 0,
      skipped: 5,
      errors: [
        { line: 2, field: '(line)', reason: 'is not valid JSON' },
        { line: 3, field: 'tags', reason: expect.any(String) },
        { line: 4, field: 'keys.p256dh', reason: expect.stringContaining('required') },
        { line: 5, field: 'endpoint', reason: 'must be an http(s) URL' },
        { line: 6, field: '(line)', reason: 'must be a JSON object' },
      ],
    })
    const imported = await list(project, '&source=import')
    expect(imported).toHaveLength(2)
    const got = imported.find((s) => s.endpoint === a.endpoint)
    expect(got).toMatchObject({ external_id: 'u1', tags: { plan: 'gold' }, group_ids: [news], status: 'active', source: 'import', created_at: Date.parse('2024-01-02T03:04:05.000Z') })
    expect(imported.find((s) => s.endpoint === b.endpoint)).toMatchObject({ group_ids: [news], created_at: 1_600_000_000_000, external_id: null })
    expect(await list(project, '&source=subscribe')).toEqual([])
  })

  it('is idempotent on endpoint: the same file again changes nothing; a real change counts as updated and keeps source and created_at', async () => {
    const project = await t.project()
    const group = await createGroup(project, 'g')
    const own = subscription()
    const existingId = await subscribe(t, project, own)
    const lines = [subscription({ tags: { a: 1, b: true } }), subscription({ external_id: 'x' }), { ...own, group_ids: [group] }]
    const first = await importBody(project, ndjson(lines))
    expect(first.json()).toEqual({ imported: 2, updated: 1, skipped: 0, errors: [] })
    const before = await t.ctx.db.query('SELECT * FROM subscribers WHERE project_id = $1 ORDER BY id', [project.id])
    const again = await importBody(project, ndjson(lines))
    expect(again.json()).toEqual({ imported: 0, updated: 0, skipped: 0, errors: [] })
    expect((await t.ctx.db.query('SELECT * FROM subscribers WHERE project_id = $1 ORDER BY id', [project.id])).rows).toEqual(before.rows)

    const changed = await importBody(project, ndjson([{ ...lines[0], tags: { b: true, a: 2 } }, { ...lines[1] }]))
    expect(changed.json()).toEqual({ imported: 0, updated: 1, skipped: 0, errors: [] })
    // One audit entry per import that changed something: the first and the last here, not the repeat.
    const audit = await t.ctx.db.query<{ details: unknown }>("SELECT details FROM audit_log WHERE project_id = $1 AND action = 'subscriber.import' ORDER BY id", [project.id])
    expect(audit.rows.map((row) => row.details)).toEqual([{ imported: 2, updated: 1, skipped: 0 }, { imported: 0, updated: 1, skipped: 0 }])
    const mine = (await list(project)).find((s) => s.id === existingId)
    expect(mine).toMatchObject({ source: 'subscribe', group_ids: [group] })
  })

  it('reads CRLF line ends and a byte order mark, and skips a huge line without failing the others', async () => {
    const project = await t.project()
    const a = subscription()
    const b = subscription()
    const huge = JSON.stringify(subscription({ tags: { pad: 'x' } })).replace('"x"', `"${'x'.repeat(IMPORT_LINE_MAX_BYTES)}"`)
    const body = `\uFEFF${JSON.stringify(a)}\r\n${huge}\r\n${JSON.stringify(b)}\r\n`
    const res = await importBody(project, body)
    expect(res.json()).toEqual({ imported: 2, updated: 0, skipped: 1, errors: [{ line: 2, field: '(line)', reason: `is longer than ${IMPORT_LINE_MAX_BYTES} bytes` }] })
    expect((await list(project)).map((s) => s.endpoint).sort()).toEqual([a.endpoint, b.endpoint].sort())
  })

  it("counts toward the plan's subscriber cap: what is over it is skipped with the reason", async () => {
    const project = await t.project({ limits: { subscribers: 3 } })
    await subscribe(t, project)
    const res = await importBody(project, ndjson([subscription(), subscription(), subscription(), subscription()]))
    expect(res.json()).toEqual({
      imported: 2,
      updated: 0,
      skipped: 2,
      errors: [
        { line: 3, field: '(line)', reason: "over the plan's cap of 3 active subscribers" },
        { line: 4, field: '(line)', reason: "over the plan's cap of 3 active subscribers" },
      ],
    })
    expect((await t.ctx.db.query<{ n: number }>('SELECT active_subscribers AS n FROM project_counters WHERE project_id = $1', [project.id])).rows[0].n).toBe(3)
  })

  it("never imports into another project's groups, by id or by name", async () => {
    const mine = await t.project()
    const other = await t.project()
    const theirs = await createGroup(other, 'vip')
    const res = await importBody(mine, ndjson([subscription({ group_ids: [theirs] }), subscription({ groups: ['vip'] })]))
    expect(res.json()).toEqual({
      imported: 0,
      updated: 0,
      skipped: 2,
      errors: [
        { line: 1, field: 'group_ids', reason: `no group ${theirs} in this project` },
        { line: 2, field: 'groups', reason: 'no group named "vip" in this project' },
      ],
    })
    expect((await t.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM group_members WHERE group_id = $1', [theirs])).rows[0].n).toBe(0)
    expect(await list(mine)).toEqual([])
  })

  it('streams 10,500 lines in batches, and a second import of them changes nothing', async () => {
    const project = await t.project({ plan: 'max' })
    const N = 10_500
    const lines = Array.from({ length: N }, (_, i) => JSON.stringify({ endpoint: `https://fcm.googleapis.com/fcm/send/bulk-${i}`, keys: { p256dh: `p${i}`, auth: `a${i}` }, tags: { i } }))
    const stream = () => Readable.from((function* () {
      // Chunks that cut lines in the middle, as a network would.
      const text = lines.join('\n')
      for (let at = 0; at < text.length; at += 7_777) yield Buffer.from(text.slice(at, at + 7_777))
    })())
    const first = await importBody(project, stream())
    expect(first.json()).toEqual({ imported: N, updated: 0, skipped: 0, errors: [] })
    const second = await importBody(project, stream())
    expect(second.json()).toEqual({ imported: 0, updated: 0, skipped: 0, errors: [] })
    const stored = await t.ctx.db.query<{ n: number; sources: string[] }>("SELECT count(*)::int AS n, array_agg(DISTINCT source) AS sources FROM subscribers WHERE project_id = $1", [project.id])
    expect(stored.rows[0]).toEqual({ n: N, sources: ['import'] })
  }, 120_000)

  it('takes CSV with a header line (BOM, CRLF, quoted JSON cells, unknown columns ignored), and the same file twice changes nothing', async () => {
    const project = await t.project()
    await createGroup(project, 'news, daily')
    const a = subscription()
    const b = subscription()
    const k = (s: Record<string, any>) => `${s.endpoint},${s.keys.p256dh},${s.keys.auth}`
    const csv = [
      '\uFEFFendpoint,p256dh,auth,external_id,groups,tags,created_at,status',
      `${k(a)},u1,"[""news, daily""]","{""plan"":""gold"",""n"":2}",1600000000000,active`,
      `${k(b)},,,,,expired`,
      `${k(subscription())},u3,not json,,,`,
      `${k(subscription())},u4,,,,,extra`,
    ].join('\r\n')
    const csvHeaders = { 'content-type': 'text/csv; charset=utf-8' }
    const res = await importBody(project, csv, csvHeaders)
    expect(res.json()).toEqual({
      imported: 2,
      updated: 0,
      skipped: 2,
      errors: [
        { line: 4, field: 'groups', reason: expect.stringContaining('must be JSON') },
        { line: 5, field: '(line)', reason: 'has 9 cells, the header 8' },
      ],
    })
    const got = (await list(project)).find((s) => s.endpoint === a.endpoint)
    expect(got).toMatchObject({ external_id: 'u1', tags: { plan: 'gold', n: 2 }, group_ids: [expect.stringMatching(/^grp_/)], created_at: 1_600_000_000_000, source: 'import', status: 'active' })
    expect((await importBody(project, csv, csvHeaders)).json()).toMatchObject({ imported: 0, updated: 0, skipped: 2 })

    const noKeys = await importBody(project, 'endpoint,external_id\r\nhttps://fcm.googleapis.com/fcm/send/x,u\r\n', csvHeaders)
    expect(noKeys.statusCode).toBe(400)
    expect(noKeys.json().error.issues[0].path).toBe('header')
  })

  it('takes only NDJSON, and only from a key or member allowed to import', async () => {
    const project = await t.project()
    const json = await t.app.inject({ method: 'POST', url: '/v1/subscribers/import', headers: project.auth, payload: subscription() })
    expect(json.statusCode).toBe(400)
    expect(json.json().error.issues).toEqual([{ path: 'content-type', message: 'must be application/x-ndjson or text/csv' }])
    const key = await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${project.id}/api-keys`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload: { scope: 'subscribers' } })
    const scoped = { ...project, auth: { authorization: `Bearer ${key.json().api_key}` } }
    const refused = await importBody(scoped, ndjson([subscription()]))
    expect(refused.statusCode).toBe(403)
    expect(refused.json().error.code).toBe('insufficient_scope')
    expect(await list(project)).toEqual([])
  })
})
