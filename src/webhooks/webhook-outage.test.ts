// The webhook dispatcher when its database connection is cut for real
// (a TCP relay between it and PostgreSQL): a claim the database applied but
// whose answer was lost leases rows the dispatcher does not know it holds;
// they are handed back once the database is back, and sent then, instead of
// waiting for their lease. PostgreSQL only.
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, testDbMode, type TestDatabase } from '../../test/support/database.ts'
import { startTcpRelay, type TcpRelay } from '../../test/support/tcp-relay.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.ts'
import { insertSentBroadcast } from '../broadcasts/broadcasts.fixtures.ts'
import { openDatabase, type Database } from '../platform/db/database.ts'
import { newId } from '../platform/ids.ts'
import { OutboundClient } from '../platform/outbound/http-client.ts'
import { createProject } from '../projects/projects.service.ts'
import { enqueueDeliveriesForEvents } from './webhook-deliveries.store.ts'
import { WebhookDispatcher } from './webhook-dispatcher.ts'
import { newWebhookSecret } from './webhooks.service.ts'
import { loseClaimAnswer, until } from '../../test/support/lost-claim.ts'

describe.skipIf(testDbMode() !== 'postgres')('the webhook dispatcher cut off from the database', () => {
  let database: TestDatabase
  let receiver: WebhookReceiver
  let client: OutboundClient
  let relay: TcpRelay
  let cut: Database

  beforeAll(async () => {
    database = await createTestDatabase()
    receiver = await startWebhookReceiver()
    client = new OutboundClient({ timeoutMs: 5_000, connectionsPerOrigin: 16, allowPrivateAddresses: true })
    const url = new URL(database.url!)
    relay = await startTcpRelay(url.hostname, Number(url.port || 5432))
    cut = await openDatabase({ databaseUrl: relay.urlFor(database.url!), dataDir: null, poolSize: 4 })
  })
  afterAll(async () => {
    relay.heal()
    await cut.close()
    await relay.close()
    await client.close()
    await receiver.close()
    await database.drop()
  })

  it('hands back the rows of a claim whose answer was lost, and sends them without waiting for their lease', async () => {
    const projectId = (await createProject(database.db, { name: 'Hooks', plan: 'plus' })).project.id
    const broadcastId = await insertSentBroadcast(database.db, projectId)
    await database.db.query('INSERT INTO webhooks (id, project_id, url, events, secret) VALUES ($1, $2, $3, $4, $5)', [
      newId('whk'),
      projectId,
      `${receiver.url}/lost`,
      ['delivered'],
      newWebhookSecret(),
    ])
    const events = Array.from({ length: 5 }, () => newId('evt'))
    await database.db.transaction(async (tx) => {
      await tx.query(`INSERT INTO events (id, project_id, broadcast_id, type) SELECT id, $1, $2, 'delivered' FROM unnest($3::text[]) AS e(id)`, [
        projectId,
        broadcastId,
        events,
      ])
      await enqueueDeliveriesForEvents(tx, projectId, events.map((id) => ({ id, type: 'delivered' })))
    })
    const dispatcher = new WebhookDispatcher({
      db: cut,
      log: pino({ level: 'silent' }),
      client,
      concurrency: 8,
      perEndpoint: 2,
      // Far longer than the test: rows left to their lease would not be sent in it.
      leaseMs: 120_000,
      pollIntervalMs: 50,
      retryBaseMs: 5,
      disableAfterMs: 86_400_000,
    })
    await loseClaimAnswer(database.url!, 'webhook_deliveries', relay, () => dispatcher.start())
    try {
      await until(async () => {
        const leased = await database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries WHERE locked_by = $1', [
          dispatcher.workerId,
        ])
        return leased.rows[0].n > 0
      })
      expect(receiver.on('/lost')).toHaveLength(0)
      relay.heal()
      await until(async () => {
        const left = await database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries')
        return left.rows[0].n === 0
      }, 8_000)
      expect(new Set(receiver.on('/lost').map((r) => r.headers['webhook-id']))).toEqual(new Set(events))
    } finally {
      relay.heal()
      await dispatcher.stop()
    }
  })
})
