// Idempotent sends on two real API processes (`herald serve --role api`)
// over one PostgreSQL: retries of one send racing across both create exactly
// one broadcast, and every later retry replays it. PostgreSQL only: the
// embedded database belongs to one process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../../test/support/app.ts'
import { testDbMode } from '../../test/support/database.ts'
import { startWorkerProcess, type WorkerProcess } from '../../test/support/worker-process.ts'

describe.runIf(testDbMode() === 'postgres')('Idempotency-Key across two API processes', () => {
  let t: TestApp
  let apis: WorkerProcess[] = []

  beforeAll(async () => {
    t = await createTestApp()
    apis = [startWorkerProcess(t.database.url!, {}, 'api'), startWorkerProcess(t.database.url!, {}, 'api')]
    await Promise.all(apis.map((api) => api.ready))
  }, 60_000)
  afterAll(async () => {
    await Promise.all(apis.map((api) => api.kill()))
    await t.close()
  })

  it('racing retries create one broadcast; later retries on either process replay it', async () => {
    const p = await t.project({ plan: 'plus' })
    const body = JSON.stringify({ target: { type: 'all' }, notification: { title: 'Once', body: 'Only once' } })
    const post = (api: WorkerProcess, key: string) =>
      fetch(`${api.healthUrl}/v1/send`, {
        method: 'POST',
        headers: { ...p.auth, 'content-type': 'application/json', 'idempotency-key': key },
        body,
      }).then(async (res) => ({ status: res.status, replayed: res.headers.get('idempotent-replayed'), body: await res.json() }))

    for (let round = 0; round < 5; round++) {
      const key = `processes-${round}`
      const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => post(apis[i % 2], key)))
      const created = answers.filter((a) => a.status === 202 && a.replayed === null)
      expect(created, JSON.stringify(answers)).toHaveLength(1)
      for (const a of answers) {
        if (a.status === 202) expect(a.body).toEqual(created[0].body)
        else expect([a.status, a.body.error.code]).toEqual([409, 'idempotency_key_in_progress'])
      }
      const later = await Promise.all([post(apis[0], key), post(apis[1], key)])
      expect(later).toEqual([
        { status: 202, replayed: 'true', body: created[0].body },
        { status: 202, replayed: 'true', body: created[0].body },
      ])
    }
    const count = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM broadcasts WHERE project_id = $1', [p.id])
    expect(count.rows[0].n).toBe(5)
  }, 60_000)
})
