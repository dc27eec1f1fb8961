// With private addresses not allowed (the default), every delivery checks the
// address it actually connects to: a webhook pointing at this machine gets no
// request, even when its row got past registration (here: written by SQL).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { send, sleep, waitForBroadcast } from '../../test/support/delivery.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.ts'
import { newId } from '../platform/ids.ts'
import { NOT_PUBLIC_CODE } from '../platform/outbound/public-connect.ts'
import { newWebhookSecret } from './webhooks.service.ts'

let t: TestApp
let receiver: WebhookReceiver
let project: TestProject

beforeAll(async () => {
  receiver = await startWebhookReceiver()
  t = await createTestApp(
    { HERALD_ALLOW_PRIVATE_ENDPOINTS: 'false', HERALD_ENCRYPT_THREADS: '0', HERALD_WEBHOOK_RETRY_BASE_MS: '5', HERALD_SCHEDULER_INTERVAL_MS: '50' },
    { worker: true },
  )
  project = await t.project({ plan: 'plus' })
})
afterAll(async () => {
  await t.close()
  await receiver.close()
})

async function insertWebhook(url: string): Promise<string> {
  const id = newId('whk')
  await t.database.db.query(`INSERT INTO webhooks (id, project_id, url, events, secret) VALUES ($1, $2, $3, $4, $5)`, [
    id,
    project.id,
    url,
    ['clicked'],
    newWebhookSecret(),
  ])
  return id
}

describe('webhook delivery address checks', () => {
  it('registration refuses a URL on this machine', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: project.auth, payload: { url: `${receiver.url}/hook` } })
    expect(res.statusCode).toBe(400)
    expect(res.json().error.code).toBe('invalid_request')
  })

  it('refuses to connect to a loopback address, by IP or by name, and the receiver gets nothing', async () => {
    const byIp = await insertWebhook(`http://127.0.0.1:${receiver.port}/by-ip`)
    const byName = await insertWebhook(`http://localhost:${receiver.port}/by-name`)
    const broadcastId = await send(t, project, { target: { type: 'user', external_id: 'nobody' }, notification: { title: 'a', body: 'b' } })
    await waitForBroadcast(t, project, broadcastId)
    await t.app.inject({ method: 'POST', url: `/v1/events?project=${project.id}`, payload: { type: 'clicked', broadcast_id: broadcastId } })

    for (const id of [byIp, byName]) {
      const start = Date.now()
      for (;;) {
        const rows = await t.database.db.query<{ attempts: number; last_error: string | null; last_status: number | null }>(
          'SELECT attempts, last_error, last_status FROM webhook_deliveries WHERE webhook_id = $1',
          [id],
        )
        const row = rows.rows[0]
        if (row?.attempts >= 2 && row.last_error) {
          expect(row.last_error).toContain(NOT_PUBLIC_CODE)
          expect(row.last_status).toBeNull()
          break
        }
        if (Date.now() - start > 10_000) throw new Error(`no refused attempt recorded: ${JSON.stringify(rows.rows)}`)
        await sleep(20)
      }
    }
    expect(receiver.count).toBe(0)
  })
})
