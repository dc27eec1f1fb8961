// The beacon route under load: concurrent beacons share transactions, are all
// counted, and a bad one (or a failing database) never costs or fakes the others.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { newId } from '../platform/ids.ts'
import { insertSentBroadcast } from '../broadcasts/broadcasts.fixtures.ts'
import { newWebhookSecret } from '../webhooks/webhooks.service.ts'
import { createTestDatabase } from '../../test/support/database.ts'
import { MAX_PENDING_LOOKUPS, PROJECT_CACHE_ENTRIES } from './beacon-lookups.ts'
import { BeaconsLostError, BeaconWriter } from './beacon-writer.ts'
import { mayBeConnectionError as isConnectionError } from '../platform/db/availability.ts'
import { recordBeacons, type Beacon } from './events.service.ts'

let t: TestApp
let a: TestProject
let b: TestProject
beforeAll(async () => {
  t = await createTestApp()
  a = await t.project({ name: 'A', limits: { requests_per_minute: 1_000_000 } })
  b = await t.project({ name: 'B', limits: { requests_per_minute: 1_000_000 } })
})
afterAll(async () => {
  await t.close()
})

const insertBroadcast = (projectId: string): Promise<string> => insertSentBroadcast(t.database.db, projectId)

/** An endpoint row for the project, taking every event type (no dispatcher runs here: deliveries stay in the table). */
async function insertWebhook(projectId: string): Promise<string> {
  const id = newId('whk')
  await t.database.db.query('INSERT INTO webhooks (id, project_id, url, events, secret) VALUES ($1, $2, $3, $4, $5)', [
    id,
    projectId,
    `https://hooks.example/${id}`,
    ['delivered', 'failed', 'clicked', 'dismissed'],
    newWebhookSecret(),
  ])
  return id
}

async function counts(broadcastId: string): Promise<{ clicked: number; dismissed: number }> {
  const result = await t.database.db.query<{ clicked: number; dismissed: number }>('SELECT clicked, dismissed FROM broadcasts WHERE id = $1', [broadcastId])
  return result.rows[0]
}

async function eventsOf(broadcastId: string): Promise<Array<{ id: string; project_id: string; type: string; created_at: Date }>> {
  const result = await t.database.db.query<{ id: string; project_id: string; type: string; created_at: Date }>(
    'SELECT id, project_id, type, created_at FROM events WHERE broadcast_id = $1',
    [broadcastId],
  )
  return result.rows
}

async function deliveriesTo(webhookId: string): Promise<string[]> {
  const result = await t.database.db.query<{ event_id: string }>('SELECT event_id FROM webhook_deliveries WHERE webhook_id = $1', [webhookId])
  return result.rows.map((r) => r.event_id).sort()
}

function beacon(projectId: string, body: Record<string, unknown>) {
  return t.app.inject({ method: 'POST', url: `/v1/events?project=${projectId}`, headers: { 'content-type': 'text/plain' }, payload: JSON.stringify(body) })
}

/** Makes every insert of an event for this broadcast fail: a real database error, in the middle of a batch. */
async function poison(broadcastId: string): Promise<() => Promise<void>> {
  const name = `poison_${broadcastId.slice(4)}`
  await t.database.db.exec(`
    CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.broadcast_id = '${broadcastId}' THEN RAISE EXCEPTION 'poisoned beacon'; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER ${name} BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION ${name}();`)
  return async () => {
    await t.database.db.exec(`DROP TRIGGER ${name} ON events; DROP FUNCTION ${name}();`)
  }
}

describe('concurrent beacons', () => {
  it('are all counted exactly, in fewer transactions than beacons, and reach only their own project\'s webhooks', async () => {
    const one = await insertBroadcast(a.id)
    const two = await insertBroadcast(a.id)
    const theirs = await insertBroadcast(b.id)
    const hookA = await insertWebhook(a.id)
    const hookB = await insertWebhook(b.id)

    const N = 300
    const sent = Array.from({ length: N }, (_, i) => {
      if (i % 10 === 9) return beacon(a.id, { type: 'clicked', broadcast_id: theirs }) // another project's broadcast
      if (i % 10 === 8) return beacon(a.id, { type: 'clicked', broadcast_id: newId('bdc') }) // made up
      return beacon(a.id, { type: i % 3 === 0 ? 'dismissed' : 'clicked', broadcast_id: i % 2 === 0 ? one : two })
    })
    const answers = await Promise.all(sent)
    for (const res of answers) {
      expect(res.statusCode).toBe(202)
      expect(res.json()).toEqual({ ok: true })
    }

    const expected = { one: { clicked: 0, dismissed: 0 }, two: { clicked: 0, dismissed: 0 } }
    for (let i = 0; i < N; i++) {
      if (i % 10 >= 8) continue
      expected[i % 2 === 0 ? 'one' : 'two'][i % 3 === 0 ? 'dismissed' : 'clicked']++
    }
    expect(await counts(one)).toEqual(expected.one)
    expect(await counts(two)).toEqual(expected.two)
    expect(await counts(theirs)).toEqual({ clicked: 0, dismissed: 0 })
    const recorded = [...(await eventsOf(one)), ...(await eventsOf(two))]
    expect(recorded).toHaveLength(N * 0.8)
    expect(await eventsOf(theirs)).toEqual([])

    // Every event of a transaction has the same created_at (now() is the transaction's start).
    const transactions = new Set(recorded.map((e) => e.created_at.getTime())).size
    expect(transactions).toBeLessThan(N / 4)

    expect(await deliveriesTo(hookA)).toEqual(recorded.map((e) => e.id).sort())
    expect(await deliveriesTo(hookB)).toEqual([])
  })

  it('one broadcast\'s counter equals the number of beacons sent to it', async () => {
    const bdc = await insertBroadcast(b.id)
    const N = 500
    const answers = await Promise.all(Array.from({ length: N }, () => beacon(b.id, { type: 'clicked', broadcast_id: bdc })))
    expect(answers.every((res) => res.statusCode === 202)).toBe(true)
    expect(await counts(bdc)).toEqual({ clicked: N, dismissed: 0 })
    expect(await eventsOf(bdc)).toHaveLength(N)
  })
})

describe('a batch', () => {
  it('records its good beacons and drops, unrecorded, those whose broadcast is not their project\'s', async () => {
    const mine = await insertBroadcast(a.id)
    const theirs = await insertBroadcast(b.id)
    const writer = new BeaconWriter<Beacon>((beacons) => recordBeacons(t.database.db, beacons), t.ctx.log)
    // Recorded in the same turn of the event loop: one batch, one transaction.
    const outcomes = await Promise.all([
      writer.record({ project_id: a.id, broadcast_id: mine, type: 'clicked' }),
      writer.record({ project_id: a.id, broadcast_id: theirs, type: 'clicked' }),
      writer.record({ project_id: a.id, broadcast_id: newId('bdc'), type: 'dismissed' }),
      writer.record({ project_id: a.id, broadcast_id: mine, type: 'dismissed' }),
      writer.record({ project_id: newId('prj'), broadcast_id: mine, type: 'clicked' }),
    ])
    expect(outcomes).toEqual([true, false, false, true, false])
    expect(writer.transactions).toBe(1)
    expect(await counts(mine)).toEqual({ clicked: 1, dismissed: 1 })
    expect(await counts(theirs)).toEqual({ clicked: 0, dismissed: 0 })
    expect(await eventsOf(theirs)).toEqual([])
  })

  it('whose transaction fails is split in halves until the bad beacon is alone: the others are written, in about 2 log2(N) extra transactions', async () => {
    const good = await insertBroadcast(a.id)
    const bad = await insertBroadcast(a.id)
    const cure = await poison(bad)
    try {
      const writer = new BeaconWriter<Beacon>((beacons) => recordBeacons(t.database.db, beacons), t.ctx.log)
      const N = 64
      const outcomes = await Promise.allSettled(
        Array.from({ length: N }, (_, i) => writer.record({ project_id: a.id, broadcast_id: i === 37 ? bad : good, type: i % 2 ? 'clicked' : 'dismissed' })),
      )
      expect(outcomes.map((o) => o.status)).toEqual(Array.from({ length: N }, (_, i) => (i === 37 ? 'rejected' : 'fulfilled')))
      expect((outcomes[37] as PromiseRejectedResult).reason).toBeInstanceOf(BeaconsLostError)
      // The failed batch, then two halves at each of the 6 levels down to the bad beacon alone (not 1 + 64).
      expect(writer.transactions).toBe(1 + 2 * Math.log2(N))
      expect(writer.lost).toBe(1)
      expect(await counts(good)).toEqual({ clicked: 31, dismissed: 32 })
      expect(await counts(bad)).toEqual({ clicked: 0, dismissed: 0 })
      expect(await eventsOf(bad)).toEqual([])
    } finally {
      await cure()
    }
  })

  it('failing for want of a connection is failed whole, at once: one transaction per batch, no retries in parts', async () => {
    const broadcast = await insertBroadcast(a.id)
    // A real database, closed: every write fails as when the server is gone.
    const gone = await createTestDatabase()
    await gone.drop()
    const logged = vi.spyOn(t.ctx.log, 'error')
    try {
      const writer = new BeaconWriter<Beacon>((beacons) => recordBeacons(gone.db, beacons), t.ctx.log)
      const outcomes = await Promise.allSettled(
        Array.from({ length: 501 }, () => writer.record({ project_id: a.id, broadcast_id: broadcast, type: 'clicked' })),
      )
      expect(outcomes.every((o) => o.status === 'rejected' && o.reason instanceof BeaconsLostError)).toBe(true)
      // A batch of 500 and one of 1: two transactions, not 502.
      expect(writer.transactions).toBe(2)
      expect(writer.lost).toBe(501)
      const losses = logged.mock.calls.map(([fields]) => fields as { beacons_lost?: number }).filter((f) => f.beacons_lost !== undefined)
      expect(losses.map((f) => f.beacons_lost)).toEqual([500, 1])
    } finally {
      logged.mockRestore()
    }
  })

  it('tells connection failures from data errors', () => {
    const withCode = (code: string) => Object.assign(new Error(code), { code })
    for (const code of ['08006', '08001', '57P01', '57P03', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE']) {
      expect(isConnectionError(withCode(code)), code).toBe(true)
    }
    expect(isConnectionError(new Error('Cannot use a pool after calling end on the pool'))).toBe(true)
    expect(isConnectionError(new Error('timeout exceeded when trying to connect'))).toBe(true)
    for (const code of ['22P02', '23505', '23503', 'P0001', '40001', '42P01']) expect(isConnectionError(withCode(code)), code).toBe(false)
  })

  it('past MAX_QUEUED_BEACONS waiting, answers a beacon at once and drops it, counted, with one log line for many', async () => {
    const broadcast = await insertBroadcast(b.id)
    const logged = vi.spyOn(t.ctx.log, 'error')
    try {
      const writer = new BeaconWriter<Beacon>((beacons) => recordBeacons(t.database.db, beacons), t.ctx.log, { maxQueued: 10 })
      // All in one turn of the event loop: the first 10 wait for the write, the other 40 are dropped.
      const outcomes = await Promise.all(Array.from({ length: 50 }, () => writer.record({ project_id: b.id, broadcast_id: broadcast, type: 'clicked' })))
      expect(outcomes.filter((o) => o === true)).toHaveLength(10)
      expect(outcomes.filter((o) => o === false)).toHaveLength(40)
      expect(writer.dropped).toBe(40)
      expect(writer.transactions).toBe(1)
      expect(await counts(broadcast)).toEqual({ clicked: 10, dismissed: 0 })
      await writer.close()
      const drops = logged.mock.calls.map(([fields]) => fields as { beacons_dropped?: number }).filter((f) => f.beacons_dropped !== undefined)
      // One line at the first drop, one more (at close, or after the interval) with the rest: not one per beacon.
      expect(drops.map((f) => f.beacons_dropped)).toEqual([1, 39])
    } finally {
      logged.mockRestore()
    }
  })
})

describe('a flood of made-up project ids', () => {
  it('well past the caches\' bounds, never costs a real project its beacons', async () => {
    const broadcast = await insertBroadcast(b.id)
    // Known to the route's caches first, as a project in use is.
    expect((await beacon(b.id, { type: 'clicked', broadcast_id: broadcast })).statusCode).toBe(202)
    // Each chunk gets MAX_PENDING_LOOKUPS ids looked up (and remembered as not found) and as many
    // shed: enough chunks for more "not found" answers than the project cache holds.
    const chunk = 2 * MAX_PENDING_LOOKUPS
    const chunks = PROJECT_CACHE_ENTRIES / MAX_PENDING_LOOKUPS + 2
    for (let n = 0; n < chunks; n++) {
      // Each chunk fills the queue of waiting look-ups; the real beacon comes in the middle of it.
      const answers = await Promise.all(
        Array.from({ length: chunk + 1 }, (_, i) =>
          i === chunk / 2
            ? beacon(b.id, { type: 'dismissed', broadcast_id: broadcast })
            : beacon(newId('prj'), { type: 'clicked', broadcast_id: newId('bdc') }),
        ),
      )
      expect(answers.every((res) => res.statusCode === 202)).toBe(true)
    }
    expect(await counts(broadcast)).toEqual({ clicked: 1, dismissed: chunks })
  })
})

describe('a database error', () => {
  it('still answers 202 (api.md 4.10), records nothing for the failed beacon, and logs the loss at error level', async () => {
    const good = await insertBroadcast(a.id)
    const bad = await insertBroadcast(a.id)
    const hook = await insertWebhook(a.id)
    const before = await deliveriesTo(hook)
    // Looked up once while healthy, so the broadcast is known to the route's cache.
    expect((await beacon(a.id, { type: 'dismissed', broadcast_id: bad })).statusCode).toBe(202)
    const cure = await poison(bad)
    const logged = vi.spyOn(t.ctx.log, 'error')
    try {
      const answers = await Promise.all([
        beacon(a.id, { type: 'clicked', broadcast_id: good }),
        beacon(a.id, { type: 'clicked', broadcast_id: bad }),
        beacon(a.id, { type: 'clicked', broadcast_id: good }),
      ])
      expect(answers.map((res) => res.statusCode)).toEqual([202, 202, 202])
      for (const res of answers) expect(res.json()).toEqual({ ok: true })
      // The loss is not silent: one error line, naming how many beacons were lost.
      const losses = logged.mock.calls.filter(([fields]) => typeof fields === 'object' && fields !== null && 'beacons_lost' in fields)
      expect(losses).toHaveLength(1)
      expect(losses[0][0]).toMatchObject({ beacons_lost: 1 })
      expect(await counts(good)).toEqual({ clicked: 2, dismissed: 0 })
      expect(await counts(bad)).toEqual({ clicked: 0, dismissed: 1 })
      const goodEvents = (await eventsOf(good)).map((e) => e.id)
      const badEvents = (await eventsOf(bad)).map((e) => e.id)
      expect((await deliveriesTo(hook)).filter((id) => !before.includes(id))).toEqual([...goodEvents, ...badEvents].sort())
    } finally {
      logged.mockRestore()
      await cure()
    }
    // Once the database is healthy again, the same beacon is recorded.
    expect((await beacon(a.id, { type: 'clicked', broadcast_id: bad })).statusCode).toBe(202)
    expect(await counts(bad)).toEqual({ clicked: 1, dismissed: 1 })
  })
})
