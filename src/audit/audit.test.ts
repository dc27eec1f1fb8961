// GET /v1/audit-log (issue 13): newest first, keyset pages, filters by actor,
// action (exact or a prefix), target and time; owners, admins and full keys
// only; another project's entries never appear, whatever the filters; and the
// retention prune deletes old entries in bounded batches and queues itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { addMember, signIn } from '../../test/support/members.ts'
import { allows, KEY_SCOPES } from '../access/access.ts'
import { newId } from '../platform/ids.ts'
import { auditJobHandlers, pruneAuditLog } from './audit-prune.ts'
import { enqueue } from '../platform/jobs/queue.ts'
import { JobWorker } from '../platform/jobs/worker.ts'

let t: TestApp
let a: TestProject
let b: TestProject
let fans: string

beforeAll(async () => {
  t = await createTestApp()
  a = await t.project({ plan: 'plus' })
  b = await t.project({ plan: 'plus' })
  const post = (p: TestProject, url: string, payload: object) => t.app.inject({ method: 'POST', url, headers: { ...p.auth, 'user-agent': 'lister' }, payload })
  fans = (await post(a, '/v1/groups', { name: 'Fans' })).json().id
  await post(a, '/v1/groups', { name: 'Others' })
  await post(a, '/v1/send', { target: { type: 'group', group_id: fans }, notification: { title: 'Hi', body: 'There' } })
  await post(a, '/v1/send', { target: { type: 'all' }, notification: { title: 'Later', body: 'Soon' }, scheduled_at: Date.now() + 86_400_000 })
  await post(b, '/v1/groups', { name: 'B only' })
})
afterAll(async () => {
  await t.close()
})

const list = (query = '', p: TestProject = a, headers: Record<string, string> = p.auth) =>
  t.app.inject({ method: 'GET', url: `/v1/audit-log${query}`, headers })

describe('GET /v1/audit-log', () => {
  it('lists the project\'s entries newest first, with the actor\'s key name and prefix', async () => {
    const res = await list()
    expect(res.statusCode).toBe(200)
    const { entries, next_cursor } = res.json()
    expect(next_cursor).toBeNull()
    expect(entries.map((e: { action: string }) => e.action)).toEqual(['broadcast.schedule', 'broadcast.send', 'group.create', 'group.create'])
    expect(entries[3]).toEqual({
      id: expect.stringMatching(/^aud_/),
      action: 'group.create',
      // hk_live_ and 6 characters, as the key list shows it (issue 22): never the 12-character lookup prefix.
      actor: { type: 'key', id: a.apiKeyId, label: `default (${a.apiKey.slice(0, 'hk_live_'.length + 6)}…)` },
      target: { type: 'group', id: fans },
      details: { name: 'Fans' },
      ip: '127.0.0.1',
      user_agent: 'lister',
      created_at: expect.any(Number),
    })
  })

  it('pages by cursor: every entry once, in order, and no cursor after the last page', async () => {
    const all = (await list()).json().entries.map((e: { id: string }) => e.id)
    const seen: string[] = []
    let cursor = ''
    for (let pages = 0; pages < 10; pages++) {
      const page = (await list(`?limit=3${cursor ? `&cursor=${cursor}` : ''}`)).json()
      seen.push(...page.entries.map((e: { id: string }) => e.id))
      if (!page.next_cursor) break
      cursor = page.next_cursor
    }
    expect(seen).toEqual(all)
  })

  it('filters by action (exact or a prefix ending in a dot), target, actor and time', async () => {
    const actions = async (query: string) => (await list(query)).json().entries.map((e: { action: string }) => e.action)
    expect(await actions('?action=group.create')).toEqual(['group.create', 'group.create'])
    expect(await actions('?action=broadcast.')).toEqual(['broadcast.schedule', 'broadcast.send'])
    expect(await actions('?action=broadcast')).toEqual([])
    expect(await actions(`?target_id=${fans}`)).toEqual(['group.create'])
    expect(await actions(`?actor_id=${a.apiKeyId}&action=group.`)).toEqual(['group.create', 'group.create'])
    expect(await actions('?actor_id=usr_nobody')).toEqual([])
    const entries = (await list()).json().entries
    const newest = entries[0].created_at
    expect(await actions(`?since=${newest + 1}`)).toEqual([])
    expect((await actions(`?until=${newest + 1}`)).length).toBe(4)
    expect(await actions(`?since=${entries[3].created_at}&until=${entries[3].created_at + 1}`)).toContain('group.create')
  })

  it('refuses malformed filters with 400 invalid_request', async () => {
    for (const query of ['?cursor=grp_x', '?action=Broadcast%20send', '?since=-1', '?until=soon', '?limit=101', '?action=%25']) {
      const res = await list(query)
      expect(res.statusCode, query).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
    }
  })

  it('owners and admins read it; editors and viewers get 403; only full keys may', async () => {
    for (const [role, status] of [['owner', 200], ['admin', 200], ['editor', 403], ['viewer', 403]] as const) {
      await addMember(t, a.id, `${role}@example.com`, role)
      const session = await signIn(t, `${role}@example.com`)
      const res = await list('', a, session.cookie)
      expect(res.statusCode, role).toBe(status)
      if (status === 403) expect(res.json().error.code).toBe('insufficient_role')
    }
    // Scoped keys come from another branch; the permission table is what they will be checked against.
    for (const scope of KEY_SCOPES) expect(allows({ type: 'key', id: 'key_x', scope }, 'audit:read'), scope).toBe(scope === 'full')
  })
})

describe('another project', () => {
  it('never appears, whatever the filters name', async () => {
    const aEntries = (await list()).json().entries
    const aIds = aEntries.map((e: { id: string }) => e.id)
    const own = (await list('', b)).json().entries
    expect(own.map((e: { action: string }) => e.action)).toEqual(['group.create'])
    for (const query of [`?target_id=${fans}`, `?actor_id=${a.apiKeyId}`, '?action=broadcast.', `?cursor=${aIds[0]}`, `?since=0&until=${Date.now() + 1000}`]) {
      const res = await list(query, b)
      expect(res.statusCode, query).toBe(200)
      for (const id of [...aIds, fans, a.apiKeyId, a.id]) expect(res.body, query).not.toContain(id)
    }
  })

  it('a member of A naming B in X-Herald-Project gets 404, not B\'s log', async () => {
    await addMember(t, a.id, 'nosy@example.com', 'owner')
    const session = await signIn(t, 'nosy@example.com')
    const res = await list('', a, { ...session.cookie, 'x-herald-project': b.id })
    expect(res.statusCode).toBe(404)
    expect(res.json().error.code).toBe('project_not_found')
  })
})

describe('retention', () => {
  it('prunes entries older than the retention in bounded batches, keeps the rest, and queues the next run', async () => {
    const p = await t.project()
    const old = Date.now() - 40 * 86_400_000
    for (let i = 0; i < 5; i++) {
      await t.ctx.db.query(
        `INSERT INTO audit_log (id, project_id, actor_type, action, created_at) VALUES ($1, $2, 'operator', 'project.update', $3)`,
        [newId('aud', old + i), p.id, new Date(old + i)],
      )
    }
    await t.app.inject({ method: 'POST', url: '/v1/groups', headers: p.auth, payload: { name: 'Fresh' } })
    const count = async () => Number((await t.ctx.db.query<{ n: string }>('SELECT count(*) AS n FROM audit_log WHERE project_id = $1', [p.id])).rows[0].n)
    const queued = async () => (await t.ctx.db.query<{ run_at: Date }>("SELECT run_at FROM jobs WHERE kind = 'prune_audit_log' ORDER BY id")).rows
    const before = (await queued()).length
    const job = { completeIn: async () => undefined }

    expect(await pruneAuditLog(t.ctx.db, 30, job, 3)).toBe(3)
    expect(await count()).toBe(3)
    // A full batch: the next run is due at once.
    const next = await queued()
    expect(next).toHaveLength(before + 1)
    expect(next[next.length - 1].run_at.getTime()).toBeLessThanOrEqual(Date.now())
    expect(await pruneAuditLog(t.ctx.db, 30, job, 3)).toBe(2)
    expect(await count()).toBe(1)
    // Fewer than a batch: the next run waits an interval.
    const later = await queued()
    expect(later[later.length - 1].run_at.getTime()).toBeGreaterThan(Date.now() + 30 * 60_000)
    // The fresh entry (the group's) stays; so do A's.
    expect((await list('', p)).json().entries.map((e: { action: string }) => e.action)).toEqual(['group.create'])
  })

  it('runs as a durable job on the worker loop: the migration queued the first, and a due one prunes', async () => {
    expect((await t.ctx.db.query("SELECT 1 FROM jobs WHERE kind = 'prune_audit_log' AND max_attempts = 2147483647")).rows.length).toBeGreaterThan(0)
    const p = await t.project()
    const old = Date.now() - 400 * 86_400_000
    await t.ctx.db.query(`INSERT INTO audit_log (id, project_id, actor_type, action, created_at) VALUES ($1, $2, 'operator', 'project.update', $3)`, [newId('aud', old), p.id, new Date(old)])
    await enqueue(t.ctx.db, 'prune_audit_log', {})
    const worker = new JobWorker(t.ctx.db, auditJobHandlers(t.ctx.db, t.ctx.config.auditRetentionDays), { pollIntervalMs: 50 })
    await worker.start()
    try {
      await expect.poll(async () => (await t.ctx.db.query('SELECT 1 FROM audit_log WHERE project_id = $1', [p.id])).rows.length, { timeout: 10_000 }).toBe(0)
    } finally {
      await worker.stop()
    }
  })
})
