// GET /v1/subscribers/export with the list's filters (issue 25): the file holds
// what the list shows; keys and ids are written as they are (their alphabets
// make no harmful formula, and another importer must read them intact), the
// free text browsers choose (tags) sits inside JSON, and the file imports back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse } from 'csv-parse/sync'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { pushKeys, subscribe, subscription } from './subscribers.fixtures.ts'

let t: TestApp
let project: TestProject
let vip: string
beforeAll(async () => {
  t = await createTestApp()
  project = await t.project({ plan: 'max' })
  vip = (await t.app.inject({ method: 'POST', url: '/v1/groups', headers: project.auth, payload: { name: 'vip' } })).json().id
  await subscribe(t, project, { external_id: 'gold_vip', tags: { plan: 'gold' }, group_ids: [vip] })
  await subscribe(t, project, { external_id: 'gold_only', tags: { plan: 'gold' } })
  await subscribe(t, project, { external_id: 'free_vip', tags: { plan: 'free' }, group_ids: [vip] })
  const gone = subscription({ external_id: 'gold_gone', tags: { plan: 'gold' } })
  await subscribe(t, project, gone)
  await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${project.id}`, payload: { endpoint: gone.endpoint } })
}, 300_000)
afterAll(async () => {
  await t?.close()
})

const get = (url: string, headers = project.auth) => t.app.inject({ method: 'GET', url, headers })
const csvRows = (body: string) => parse(body, { columns: true }) as Array<Record<string, string>>

describe('subscriber export with filters', () => {
  it.each([
    ['tag=plan:gold', ['gold_gone', 'gold_only', 'gold_vip']],
    ['tag=plan:gold&status=active', ['gold_only', 'gold_vip']],
    ['group_id=GROUP&status=active', ['free_vip', 'gold_vip']],
    ['external_id_contains=VIP&tag=plan:free', ['free_vip']],
    ['status=expired', []],
  ])('?%s exports what the list shows, in NDJSON and CSV', async (filter, expected) => {
    const query = filter.replace('GROUP', vip)
    const listed = (await get(`/v1/subscribers?${query}`)).json().subscribers.map((s: { external_id: string }) => s.external_id).sort()
    expect(listed).toEqual(expected)
    const ndjson = await get(`/v1/subscribers/export?${query}`)
    expect(ndjson.statusCode).toBe(200)
    expect(ndjson.body.split('\n').filter(Boolean).map((line) => JSON.parse(line).external_id).sort()).toEqual(expected)
    const csv = await get(`/v1/subscribers/export?format=csv&${query}`)
    expect(csv.statusCode).toBe(200)
    expect(csvRows(csv.body).map((row) => row.external_id).sort()).toEqual(expected)
  })

  it('no filter still exports every subscriber; a bad filter is a 400 invalid_request', async () => {
    expect(csvRows((await get('/v1/subscribers/export?format=csv')).body)).toHaveLength(4)
    const bad = await get('/v1/subscribers/export?format=csv&status=sleeping')
    expect(bad.statusCode).toBe(400)
    expect(bad.json().error.code).toBe('invalid_request')
    expect((await get('/v1/subscribers/export?health=unwell')).statusCode).toBe(400)
  })

  it("a filter on another project's group finds nothing of it", async () => {
    const other = await t.project()
    const theirs = (await t.app.inject({ method: 'POST', url: '/v1/groups', headers: other.auth, payload: { name: 'theirs' } })).json().id
    await subscribe(t, other, { external_id: 'their_member', group_ids: [theirs] })
    expect((await get(`/v1/subscribers/export?group_id=${theirs}`)).body).toBe('')
  })

  it('writes keys and ids verbatim (no alphabet of theirs makes a harmful formula), keeps formulas inside the tags\' JSON, and imports back unchanged', async () => {
    const a = await t.project({ plan: 'max' })
    // A leading "-" is allowed in an external_id and comes with 1 in 64 base64url keys: another importer must read them intact.
    const keys = { ...pushKeys(), auth: Buffer.concat([Buffer.from([0xf8]), Buffer.alloc(15, 7)]).toString('base64url') }
    expect(keys.auth.startsWith('-')).toBe(true)
    await subscribe(t, a, { external_id: '-2-3', keys, tags: { note: '=HYPERLINK("http://evil.example","x")' } })
    const csv = (await get('/v1/subscribers/export?format=csv', a.auth)).body
    const [row] = csvRows(csv)
    expect(row!.external_id).toBe('-2-3')
    // The free text a browser chose (tags) is inside JSON, which never starts a formula.
    expect(row!.tags!.startsWith('{')).toBe(true)
    expect(JSON.parse(row!.tags!)).toEqual({ note: '=HYPERLINK("http://evil.example","x")' })
    expect(JSON.parse((await get('/v1/subscribers/export', a.auth)).body).external_id).toBe('-2-3')

    // The operator's CSV (with keys) carries the key as it is, and imported into another project gives back the same subscriber.
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const full = (await get(`/admin/v1/projects/${a.id}/subscribers/export?format=csv`, admin)).body
    expect(csvRows(full)[0]).toMatchObject({ external_id: '-2-3', auth: keys.auth, p256dh: keys.p256dh })
    const vapid = (await t.ctx.db.query('SELECT vapid_public, vapid_private FROM projects WHERE id = $1', [a.id])).rows[0]
    const b = (await t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: { name: 'B', ...vapid } })).json()
    const bAuth = { authorization: `Bearer ${b.api_key}` }
    const imported = await t.app.inject({ method: 'POST', url: '/v1/subscribers/import', headers: { ...bAuth, 'content-type': 'text/csv' }, payload: full })
    expect(imported.json()).toMatchObject({ imported: 1, skipped: 0 })
    expect((await get('/v1/subscribers', bAuth)).json().subscribers[0].external_id).toBe('-2-3')
    const stored = await t.ctx.db.query<{ auth: string }>('SELECT auth FROM subscribers WHERE project_id = $1', [b.id])
    expect(stored.rows).toEqual([{ auth: keys.auth }])
  })

})
