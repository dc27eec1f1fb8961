// POST /v1/send with Idempotency-Key (issue 12): a retry with the same body
// is answered as the first was, with Idempotent-Replayed: true, and creates
// nothing; another body is 422; a retry while the first runs is 409; a
// refused send or a dry run stores nothing; racing retries, also on two API
// instances over one PostgreSQL, create exactly one broadcast.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../app.ts'
import { createContext } from '../platform/context.ts'
import { openDatabase } from '../platform/db/database.ts'
import { newId } from '../platform/ids.ts'
import { createTestApp, testConfig, type TestApp, type TestProject } from '../../test/support/app.ts'
import { testDbMode } from '../../test/support/database.ts'
import { sendBody } from './broadcasts.fixtures.ts'
import { reserveKey, pruneExpiredKeys } from './idempotency-keys.store.ts'
import { requestHash } from './idempotent-send.ts'
import type { SendBody } from './broadcasts.schemas.ts'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
})
afterAll(async () => {
  await t.close()
})

function sendWithKey(app: TestApp['app'], p: TestProject, body: unknown, key: string) {
  return app.inject({ method: 'POST', url: '/v1/send', headers: { ...p.auth, 'idempotency-key': key }, payload: body as object })
}

async function broadcastCount(projectId: string): Promise<number> {
  return (await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM broadcasts WHERE project_id = $1', [projectId])).rows[0].n
}

async function keyRows(projectId: string) {
  return (await t.database.db.query('SELECT key, status FROM idempotency_keys WHERE project_id = $1 ORDER BY key', [projectId])).rows
}

/** The body as the route sees it once validated: the schema's defaults filled in. */
function validated(body: ReturnType<typeof sendBody>): SendBody {
  return { ttl: 86400, urgency: 'normal', dry_run: false, ...body } as SendBody
}

describe('Idempotency-Key on POST /v1/send', () => {
  it('replays the first answer (status, body, Idempotent-Replayed: true) and creates one broadcast', async () => {
    const p = await t.project({ plan: 'plus' })
    const first = await sendWithKey(t.app, p, sendBody(), 'order-1234')
    expect(first.statusCode).toBe(202)
    expect(first.headers['idempotent-replayed']).toBeUndefined()
    const again = await sendWithKey(t.app, p, sendBody(), 'order-1234')
    expect(again.statusCode).toBe(202)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.json()).toEqual(first.json())
    // The same content with keys in another order, and an explicit default, is the same request.
    const reordered = { notification: { body: 'World', title: 'Hello' }, ttl: 86400, target: { type: 'all' } }
    expect(sendBody()).toEqual({ target: { type: 'all' }, notification: { title: 'Hello', body: 'World' } })
    const third = await sendWithKey(t.app, p, reordered, 'order-1234')
    expect([third.statusCode, third.headers['idempotent-replayed'], third.json()]).toEqual([202, 'true', first.json()])
    expect(await broadcastCount(p.id)).toBe(1)
  })

  it('replays a scheduled send with its scheduled_at', async () => {
    const p = await t.project({ plan: 'plus' })
    const body = sendBody({ scheduled_at: Date.now() + 3_600_000 })
    const first = await sendWithKey(t.app, p, body, 'later')
    const again = await sendWithKey(t.app, p, body, 'later')
    expect(first.json().scheduled_at).toBe(body.scheduled_at)
    expect([again.statusCode, again.json()]).toEqual([202, first.json()])
  })

  it('is 422 idempotency_key_reused for the same key with another body, and keys are per project', async () => {
    const p = await t.project({ plan: 'plus' })
    await sendWithKey(t.app, p, sendBody(), 'k')
    const other = await sendWithKey(t.app, p, sendBody({ notification: { title: 'Other' } }), 'k')
    expect(other.statusCode).toBe(422)
    expect(other.json().error).toMatchObject({ code: 'idempotency_key_reused', message: expect.any(String) })
    // The source header is part of the request.
    const dashboard = await t.app.inject({
      method: 'POST', url: '/v1/send', headers: { ...p.auth, 'idempotency-key': 'k', 'x-herald-source': 'dashboard' }, payload: sendBody(),
    })
    expect(dashboard.statusCode).toBe(422)
    const q = await t.project({ plan: 'plus' })
    expect((await sendWithKey(t.app, q, sendBody(), 'k')).headers['idempotent-replayed']).toBeUndefined()
    expect(await broadcastCount(p.id)).toBe(1)
    expect(await broadcastCount(q.id)).toBe(1)
  })

  it('is 409 idempotency_key_in_progress while the first request runs; once its holder is presumed dead, a retry sends', async () => {
    const p = await t.project({ plan: 'plus' })
    const body = sendBody()
    // Another API process is in the middle of this send (it reserved the key and has not committed).
    const held = await reserveKey(t.database.db, {
      projectId: p.id, key: 'busy', requestHash: requestHash(validated(body), 'api'), token: 'other-process', leaseMs: 60_000, keepMs: 86_400_000,
    })
    expect(held).toBe('reserved')
    const busy = await sendWithKey(t.app, p, body, 'busy')
    expect(busy.statusCode).toBe(409)
    expect(busy.json().error.code).toBe('idempotency_key_in_progress')
    // Another body is still 422, not 409.
    expect((await sendWithKey(t.app, p, sendBody({ ttl: 5 }), 'busy')).statusCode).toBe(422)
    expect(await broadcastCount(p.id)).toBe(0)

    // That process died: its lease lapses, and the retry runs the send.
    await t.database.db.query(`UPDATE idempotency_keys SET locked_until = now() - interval '1 second' WHERE project_id = $1`, [p.id])
    // A stale reservation binds its body all the same.
    expect((await sendWithKey(t.app, p, sendBody({ ttl: 5 }), 'busy')).statusCode).toBe(422)
    const retry = await sendWithKey(t.app, p, body, 'busy')
    expect(retry.statusCode).toBe(202)
    expect(retry.headers['idempotent-replayed']).toBeUndefined()
    expect(await broadcastCount(p.id)).toBe(1)
    expect(await keyRows(p.id)).toEqual([{ key: 'busy', status: 'done' }])
  })

  it('stores nothing for a refused send: the key is free again, for any body', async () => {
    const p = await t.project({ plan: 'plus' })
    const missing = await sendWithKey(t.app, p, sendBody({ target: { type: 'group', group_id: newId('grp') } }), 'retry-me')
    expect(missing.statusCode).toBe(404)
    expect(await keyRows(p.id)).toEqual([])
    const free = await t.project({ plan: 'free' })
    const gated = await sendWithKey(t.app, free, sendBody({ scheduled_at: Date.now() + 60_000 }), 'retry-me')
    expect(gated.statusCode).toBe(403)
    expect(await keyRows(free.id)).toEqual([])
    const ok = await sendWithKey(t.app, p, sendBody(), 'retry-me')
    expect(ok.statusCode).toBe(202)
  })

  it('a dry run ignores the key: nothing stored, and the real send after it with the same key goes through', async () => {
    const p = await t.project({ plan: 'plus' })
    const dry = await sendWithKey(t.app, p, sendBody({ dry_run: true }), 'checked-first')
    expect(dry.statusCode).toBe(200)
    expect(dry.headers['idempotent-replayed']).toBeUndefined()
    expect(await keyRows(p.id)).toEqual([])
    expect((await sendWithKey(t.app, p, sendBody(), 'checked-first')).statusCode).toBe(202)
    // After the send, a dry run with its key is still just a dry run.
    expect((await sendWithKey(t.app, p, sendBody({ dry_run: true, ttl: 1 }), 'checked-first')).statusCode).toBe(200)
  })

  it('refuses a key that is empty, over 255 characters or not printable ASCII (400 naming the header)', async () => {
    const p = await t.project({ plan: 'plus' })
    for (const bad of ['', 'x'.repeat(256), 'clé', 'tab\there']) {
      const res = await sendWithKey(t.app, p, sendBody(), bad)
      expect(res.statusCode, JSON.stringify(bad)).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
      expect(res.json().error.issues.map((i: { path: string }) => i.path)).toContain('headers.idempotency-key')
    }
    for (const good of ['x'.repeat(255), ' ', '~!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}', crypto.randomUUID()]) {
      expect((await sendWithKey(t.app, p, sendBody(), good)).statusCode, good).toBe(202)
    }
    expect(await broadcastCount(p.id)).toBe(4)
  })

  it('a key past its 24 hours may be used again, for any body, and the prune deletes it', async () => {
    const p = await t.project({ plan: 'plus' })
    await sendWithKey(t.app, p, sendBody(), 'old')
    await sendWithKey(t.app, p, sendBody(), 'older')
    await t.database.db.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE project_id = $1`, [p.id])
    const reused = await sendWithKey(t.app, p, sendBody({ ttl: 60 }), 'old')
    expect([reused.statusCode, reused.headers['idempotent-replayed']]).toEqual([202, undefined])
    expect(await pruneExpiredKeys(t.database.db, 100)).toBeGreaterThanOrEqual(1)
    expect(await keyRows(p.id)).toEqual([{ key: 'old', status: 'done' }])
    expect(await broadcastCount(p.id)).toBe(3)
  })

  it('the prune job is queued once, by the migration, ten minutes ahead', async () => {
    // Ahead of when the migration queued it (created_at), not of now: the embedded
    // test databases are copies of a template kept between runs, migrated maybe hours ago.
    const jobs = await t.database.db.query<{ due_in_s: number }>(
      `SELECT extract(epoch FROM run_at - created_at)::int AS due_in_s FROM jobs WHERE kind = 'prune_idempotency_keys'`,
    )
    expect(jobs.rows).toHaveLength(1)
    expect(jobs.rows[0].due_in_s).toBeGreaterThan(0)
    expect(jobs.rows[0].due_in_s).toBeLessThanOrEqual(600)
  })

  it('racing retries on one API instance create exactly one broadcast', async () => {
    const p = await t.project({ plan: 'plus' })
    const answers = await Promise.all(Array.from({ length: 8 }, () => sendWithKey(t.app, p, sendBody(), 'race')))
    const sent = answers.filter((a) => a.statusCode === 202 && a.headers['idempotent-replayed'] === undefined)
    expect(sent).toHaveLength(1)
    for (const a of answers) {
      if (a.statusCode === 202) expect(a.json()).toEqual(sent[0].json())
      else expect([a.statusCode, a.json().error.code]).toEqual([409, 'idempotency_key_in_progress'])
    }
    expect(await broadcastCount(p.id)).toBe(1)
  })

  it.runIf(testDbMode() === 'postgres')(
    'racing retries on two API instances over one PostgreSQL create exactly one broadcast',
    async () => {
      const db = await openDatabase({ databaseUrl: t.database.url!, dataDir: null, poolSize: 5 })
      const second = await buildApp(createContext(testConfig(), db))
      try {
        const p = await t.project({ plan: 'plus' })
        for (let round = 0; round < 5; round++) {
          const key = `two-apps-${round}`
          const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => sendWithKey(i % 2 ? second : t.app, p, sendBody(), key)))
          const statuses = answers.map((a) => a.statusCode)
          expect(statuses.every((s) => s === 202 || s === 409), statuses.join()).toBe(true)
          expect(answers.filter((a) => a.statusCode === 202 && !a.headers['idempotent-replayed'])).toHaveLength(1)
          // Once the first has committed, every retry on either instance replays it.
          const after = await Promise.all([sendWithKey(t.app, p, sendBody(), key), sendWithKey(second, p, sendBody(), key)])
          expect(after.map((a) => [a.statusCode, a.headers['idempotent-replayed']])).toEqual([[202, 'true'], [202, 'true']])
        }
        expect(await broadcastCount(p.id)).toBe(5)
      } finally {
        await second.close()
        await db.close()
      }
    },
  )
})
