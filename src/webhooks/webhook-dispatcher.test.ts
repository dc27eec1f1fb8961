// The dispatcher's batches: rows it claims ahead and holds are sent once
// each, handed back when they would outlive their lease, and handed back
// unattempted when it stops.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../test/support/database.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.ts'
import { newId } from '../platform/ids.ts'
import { OutboundClient } from '../platform/outbound/http-client.ts'
import { createProject } from '../projects/projects.service.ts'
import { enqueueDeliveriesForEvents } from './webhook-deliveries.store.ts'
import { WebhookDispatcher, type WebhookDispatcherOptions } from './webhook-dispatcher.ts'
import { newWebhookSecret } from './webhooks.service.ts'
import { insertSentBroadcast } from '../broadcasts/broadcasts.fixtures.ts'

let database: TestDatabase
let receiver: WebhookReceiver
let client: OutboundClient
let projectId: string
let broadcastId: string
let paths = 0

beforeAll(async () => {
  database = await createTestDatabase()
  receiver = await startWebhookReceiver()
  client = new OutboundClient({ timeoutMs: 5_000, connectionsPerOrigin: 16, allowPrivateAddresses: true })
  projectId = (await createProject(database.db, { name: 'Hooks', plan: 'plus' })).project.id
  broadcastId = await insertSentBroadcast(database.db, projectId)
})
afterAll(async () => {
  await client.close()
  await receiver.close()
  await database.drop()
})

/** A fresh endpoint (the project's only active one) and n delivered events for it. */
async function endpointWithEvents(n: number, base = receiver.url): Promise<{ path: string; id: string; events: string[] }> {
  await database.db.query(`UPDATE webhooks SET status = 'disabled' WHERE project_id = $1`, [projectId])
  const path = `/hook-${++paths}`
  const id = newId('whk')
  await database.db.query('INSERT INTO webhooks (id, project_id, url, events, secret) VALUES ($1, $2, $3, $4, $5)', [
    id,
    projectId,
    base + path,
    ['delivered'],
    newWebhookSecret(),
  ])
  const events = Array.from({ length: n }, () => newId('evt'))
  await database.db.transaction(async (tx) => {
    await tx.query(`INSERT INTO events (id, project_id, broadcast_id, type) SELECT id, $1, $2, 'delivered' FROM unnest($3::text[]) AS e(id)`, [
      projectId,
      broadcastId,
      events,
    ])
    await enqueueDeliveriesForEvents(tx, projectId, events.map((e) => ({ id: e, type: 'delivered' })))
  })
  return { path, id, events }
}

function dispatcher(options: Partial<WebhookDispatcherOptions>): WebhookDispatcher {
  return new WebhookDispatcher({
    db: database.db,
    log: pino({ level: 'silent' }),
    client,
    concurrency: 8,
    perEndpoint: 2,
    leaseMs: 60_000,
    pollIntervalMs: 50,
    retryBaseMs: 5,
    disableAfterMs: 86_400_000,
    ...options,
  })
}

async function rows(webhookId: string): Promise<Array<{ attempts: number; locked_by: string | null }>> {
  const result = await database.db.query<{ attempts: number; locked_by: string | null }>(
    'SELECT attempts, locked_by FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id',
    [webhookId],
  )
  return result.rows
}

describe('WebhookDispatcher', () => {
  it("sends a backlog once per event, never more at once than the endpoint's slots", async () => {
    const hook = await endpointWithEvents(300)
    const d = dispatcher({ perEndpoint: 4 })
    await d.start()
    try {
      const got = await receiver.waitFor(hook.path, 300, 20_000)
      const ids = got.map((w) => w.headers['webhook-id'])
      expect(new Set(ids).size).toBe(300)
      expect(ids.sort()).toEqual([...hook.events].sort())
      expect(receiver.maxInFlight(hook.path)).toBeLessThanOrEqual(4)
      await expect.poll(() => rows(hook.id), { timeout: 5_000 }).toEqual([])
    } finally {
      await d.stop()
    }
  })

  it('hands back a held row that would outlive its lease instead of sending it late, and still sends each event once', async () => {
    // Lease 1 s: a row may wait 250 ms in memory; the endpoint takes 600 ms a request, one at a time.
    // The row held behind the first would be sent at 600 ms and still be in flight when its lease
    // lapses at 1 s, so it would be claimed and sent a second time.
    const hook = await endpointWithEvents(4)
    receiver.delay(hook.path, 600)
    const d = dispatcher({ perEndpoint: 1, leaseMs: 1_000 })
    await d.start()
    try {
      const got = await receiver.waitFor(hook.path, 4, 20_000)
      expect(got.map((w) => w.headers['webhook-id']).sort()).toEqual([...hook.events].sort())
      await expect.poll(() => rows(hook.id), { timeout: 5_000 }).toEqual([])
      expect(receiver.on(hook.path)).toHaveLength(4)
    } finally {
      await d.stop()
    }
  })

  it('on stop, hands back the rows it held unsent, their claim not counted as an attempt', async () => {
    const hook = await endpointWithEvents(10)
    receiver.delay(hook.path, 300)
    const d = dispatcher({ perEndpoint: 1 })
    await d.start()
    await receiver.waitFor(hook.path, 1, 5_000)
    await d.stop()
    const left = await rows(hook.id)
    // The one sent was answered and deleted; the others were never attempted.
    expect(left.length).toBe(10 - receiver.on(hook.path).length)
    expect(left.length).toBeGreaterThan(0)
    for (const row of left) expect(row).toEqual({ attempts: 0, locked_by: null })
  })

  it('on stop, waits for a claim already running and hands its rows straight back, unsent and not counted', async () => {
    const hook = await endpointWithEvents(0)
    const d = dispatcher({ perEndpoint: 2 })
    await d.start()
    // The deliveries are written by a transaction that then locks the table: the dispatcher's
    // next claim waits for it, and stop() comes while that claim runs. (On PostgreSQL stop's
    // UNLISTEN does not queue behind the claim, so only there could stop end before the claim.)
    let unlock!: () => void
    const gate = new Promise<void>((resolve) => (unlock = resolve))
    let lockTaken!: () => void
    const lockHeld = new Promise<void>((resolve) => (lockTaken = resolve))
    const events = Array.from({ length: 5 }, () => newId('evt'))
    const holder = database.db.transaction(async (tx) => {
      await tx.query(`INSERT INTO events (id, project_id, broadcast_id, type) SELECT id, $1, $2, 'delivered' FROM unnest($3::text[]) AS e(id)`, [
        projectId,
        broadcastId,
        events,
      ])
      await enqueueDeliveriesForEvents(tx, projectId, events.map((e) => ({ id: e, type: 'delivered' })))
      await tx.query('LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE')
      lockTaken()
      await gate
    })
    await lockHeld
    await new Promise((resolve) => setTimeout(resolve, 150)) // a few polls: a claim is now waiting
    let stopped = false
    const stopping = d.stop().then(() => (stopped = true))
    await new Promise((resolve) => setTimeout(resolve, 100))
    unlock()
    await holder
    await stopping
    expect(stopped).toBe(true)
    // Whatever that claim took is back in the table at once, its attempt not counted, and nothing was sent.
    const untouched = Array.from({ length: 5 }, () => ({ attempts: 0, locked_by: null }))
    expect(await rows(hook.id)).toEqual(untouched)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(await rows(hook.id)).toEqual(untouched)
    expect(receiver.on(hook.path)).toHaveLength(0)
  })

  it('ends a request whose answer trickles in past the timeout: an overall deadline, not only a gap between chunks', async () => {
    // Headers at once, then a byte every 50 ms for 5 s: never idle long enough for undici's bodyTimeout.
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.flushHeaders()
      const tick = setInterval(() => res.write('.'), 50)
      setTimeout(() => {
        clearInterval(tick)
        res.end()
      }, 5_000)
      res.on('close', () => clearInterval(tick))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const slowClient = new OutboundClient({ timeoutMs: 500, connectionsPerOrigin: 4, allowPrivateAddresses: true })
    const hook = await endpointWithEvents(1, `http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    const d = dispatcher({ client: slowClient, perEndpoint: 1, retryBaseMs: 60_000 })
    const started = Date.now()
    await d.start()
    try {
      const failed = async () => {
        const result = await database.db.query<{ attempts: number; last_error: string | null }>(
          'SELECT attempts, last_error FROM webhook_deliveries WHERE webhook_id = $1',
          [hook.id],
        )
        return result.rows[0]?.last_error ?? null
      }
      await expect.poll(failed, { timeout: 4_000, interval: 20 }).toMatch(/TimeoutError/)
      // Within about the timeout (500 ms), far from the 5 s the trickle lasts.
      expect(Date.now() - started).toBeLessThan(2_000)
      const [row] = await rows(hook.id)
      expect(row.attempts).toBe(1)
    } finally {
      await d.stop()
      await slowClient.close()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
