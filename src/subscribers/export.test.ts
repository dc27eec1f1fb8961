// GET /v1/subscribers/export and the operator's export (issue 23): streamed in
// id order, keys only for the operator, and an import of the operator's export
// into another project gives back the same subscriptions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { EXPORT_PAGE_SIZE } from './export.service.ts'
import { subscribe, subscription } from './subscribers.fixtures.ts'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
}, 300_000)
afterAll(async () => {
  await t?.close()
})

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

async function createGroup(project: TestProject, name: string): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: project.auth, payload: { name } })
  expect(res.statusCode).toBe(201)
  return res.json().id
}

/** What must survive a move: everything but the id, source and last_seen_at (a new project's own). */
async function subscriptions(projectId: string) {
  const rows = await t.ctx.db.query(
    `SELECT s.endpoint, s.p256dh, s.auth, s.external_id, s.status, s.tags, s.created_at,
            COALESCE((SELECT array_agg(g.name ORDER BY g.name) FROM group_members m JOIN groups g ON g.id = m.group_id WHERE m.subscriber_id = s.id), '{}') AS groups
       FROM subscribers s WHERE s.project_id = $1 ORDER BY s.endpoint`,
    [projectId],
  )
  return rows.rows
}

function ndjsonLines(body: string): any[] {
  return body.split('\n').filter(Boolean).map((line) => JSON.parse(line))
}

describe('subscriber export', () => {
  it('streams every subscriber without keys to the project, with them and the VAPID pair to the operator; the import of that export round-trips exactly', async () => {
    const a = await t.project({ plan: 'max' })
    const vip = await createGroup(a, 'vip')
    await createGroup(a, 'news, daily')
    await subscribe(t, a, { external_id: 'u1', group_ids: [vip], tags: { plan: 'gold', seats: 3, beta: true } })
    const gone = subscription()
    await subscribe(t, a, gone)
    await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${a.id}`, payload: { endpoint: gone.endpoint } })
    const imported = await t.app.inject({
      method: 'POST', url: '/v1/subscribers/import', headers: { ...a.auth, 'content-type': 'application/x-ndjson' },
      payload: `${JSON.stringify(subscription({ groups: ['news, daily', 'vip'], created_at: 1_500_000_000_000 }))}\n`,
    })
    expect(imported.json().imported).toBe(1)

    const mine = await t.app.inject({ method: 'GET', url: '/v1/subscribers/export', headers: a.auth })
    expect(mine.statusCode).toBe(200)
    expect(mine.headers['content-type']).toBe('application/x-ndjson')
    const lines = ndjsonLines(mine.body)
    expect(lines).toHaveLength(3)
    expect(lines.every((line) => line.keys === undefined)).toBe(true)
    expect(lines.map((line) => line.status).sort()).toEqual(['active', 'active', 'unsubscribed'])
    expect(lines.map((line) => line.source).sort()).toEqual(['import', 'subscribe', 'subscribe'])

    const operator = await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${a.id}/subscribers/export`, headers: admin })
    expect(operator.statusCode).toBe(200)
    const [head, ...rest] = ndjsonLines(operator.body)
    const keys = (await t.ctx.db.query('SELECT vapid_public, vapid_private FROM projects WHERE id = $1', [a.id])).rows[0]
    expect(head).toEqual({ herald_export: 1, project: a.id, ...keys })
    expect(rest.every((line) => typeof line.keys?.p256dh === 'string' && typeof line.keys?.auth === 'string')).toBe(true)

    // Another sender takes over: a project with the same key pair and group names imports the file as it is.
    const created = (await t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: { name: 'B', plan: 'max', vapid_private: keys.vapid_private, vapid_public: keys.vapid_public } })).json()
    const b: TestProject = { id: created.id, apiKey: created.api_key, apiKeyId: '', vapidPublic: created.vapid_public, auth: { authorization: `Bearer ${created.api_key}` } }
    await createGroup(b, 'vip')
    await createGroup(b, 'news, daily')
    for (const format of ['ndjson', 'csv'] as const) {
      const file = await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${a.id}/subscribers/export?format=${format}`, headers: admin })
      const res = await t.app.inject({
        method: 'POST', url: '/v1/subscribers/import', headers: { ...b.auth, 'content-type': format === 'csv' ? 'text/csv' : 'application/x-ndjson' }, payload: file.body,
      })
      expect(res.json(), format).toEqual(format === 'ndjson' ? { imported: 3, updated: 0, skipped: 0, errors: [] } : { imported: 0, updated: 0, skipped: 0, errors: [] })
      expect(await subscriptions(b.id), format).toEqual(await subscriptions(a.id))
    }
  })

  it('after a VAPID key rotation: each line names the pair it was made with, the head lists the older pairs, and another project holding both pairs takes every subscriber over', async () => {
    const a = await t.project({ plan: 'max' })
    const before = await subscribe(t, a, { external_id: 'old_key' })
    const original = (await t.ctx.db.query<{ vapid_public: string; vapid_private: string }>('SELECT vapid_public, vapid_private FROM projects WHERE id = $1', [a.id])).rows[0]
    const rotated = await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${a.id}/vapid-keys/rotate`, headers: admin })
    expect(rotated.statusCode).toBe(201)
    const current = (await t.ctx.db.query<{ vapid_public: string; vapid_private: string }>('SELECT vapid_public, vapid_private FROM projects WHERE id = $1', [a.id])).rows[0]
    expect(current.vapid_public).not.toBe(original.vapid_public)
    const after = await subscribe(t, a, { external_id: 'new_key' })
    expect(before).not.toBe(after)

    const operator = await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${a.id}/subscribers/export`, headers: admin })
    const [head, ...lines] = ndjsonLines(operator.body)
    expect(head).toEqual({ herald_export: 1, project: a.id, ...current, previous_vapid_keys: [original] })
    expect(Object.fromEntries(lines.map((line) => [line.external_id, line.vapid_public]))).toEqual({ old_key: original.vapid_public, new_key: current.vapid_public })
    const csv = (await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${a.id}/subscribers/export?format=csv`, headers: admin })).body
    expect(csv.split('\n')[0]).toBe('endpoint,p256dh,auth,external_id,status,groups,tags,source,created_at,last_seen_at,vapid_public')
    // The project's own export never names keys.
    expect(ndjsonLines((await t.app.inject({ method: 'GET', url: '/v1/subscribers/export', headers: a.auth })).body).every((line) => line.vapid_public === undefined)).toBe(true)

    // Another project made with the original pair, then rotated to the current one (imported): both pairs, each signing its own subscriber.
    const created = (await t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: { name: 'B', plan: 'max', ...original } })).json()
    expect((await t.app.inject({ method: 'POST', url: `/admin/v1/projects/${created.id}/vapid-keys/rotate`, headers: admin, payload: current })).statusCode).toBe(201)
    const res = await t.app.inject({
      method: 'POST', url: '/v1/subscribers/import', headers: { authorization: `Bearer ${created.api_key}`, 'content-type': 'application/x-ndjson' }, payload: operator.body,
    })
    expect(res.json()).toEqual({ imported: 2, updated: 0, skipped: 0, errors: [] })
    const keys = (await t.app.inject({ method: 'GET', url: `/admin/v1/projects/${created.id}/vapid-keys`, headers: admin })).json().vapid_keys as Array<{ public_key: string; active_subscribers: number }>
    expect(Object.fromEntries(keys.map((k) => [k.public_key, k.active_subscribers]))).toEqual({ [original.vapid_public]: 1, [current.vapid_public]: 1 })
  })

  it(`pages through more than ${EXPORT_PAGE_SIZE} subscribers in id order, each once; CSV has a header and a line each`, async () => {
    const project = await t.project({ plan: 'max' })
    const n = EXPORT_PAGE_SIZE + 7
    const lines = Array.from({ length: n }, (_, i) => JSON.stringify({ endpoint: `https://fcm.googleapis.com/fcm/send/e-${i}`, keys: { p256dh: `p${i}`, auth: `a${i}` } }))
    const res = await t.app.inject({ method: 'POST', url: '/v1/subscribers/import', headers: { ...project.auth, 'content-type': 'application/x-ndjson' }, payload: lines.join('\n') })
    expect(res.json().imported).toBe(n)
    const out = ndjsonLines((await t.app.inject({ method: 'GET', url: '/v1/subscribers/export', headers: project.auth })).body)
    expect(new Set(out.map((line) => line.endpoint)).size).toBe(n)
    const csv = await t.app.inject({ method: 'GET', url: '/v1/subscribers/export?format=csv', headers: project.auth })
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8')
    const csvLines = csv.body.split('\n').filter(Boolean)
    expect(csvLines[0]).toBe('endpoint,external_id,status,groups,tags,source,created_at,last_seen_at')
    expect(csvLines).toHaveLength(n + 1)
  }, 180_000)

  it("never shows another project's subscribers", async () => {
    const mine = await t.project()
    const other = await t.project()
    await subscribe(t, other)
    expect((await t.app.inject({ method: 'GET', url: '/v1/subscribers/export', headers: mine.auth })).body).toBe('')
    expect((await t.app.inject({ method: 'GET', url: '/admin/v1/projects/prj_unknown/subscribers/export', headers: admin })).statusCode).toBe(404)
  })
})
