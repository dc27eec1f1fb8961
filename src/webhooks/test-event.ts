// POST /v1/webhooks/:id/test: one signed event of type `test`, sent at once
// from the API process, the way the dispatcher sends a real delivery (same
// body shape, signing, connection-time address check and timeout), recorded
// in the delivery log. It is not a delivery: nothing is retried, and the
// endpoint's status and failing run are left as they are.
import type { Database } from '../platform/db/database.ts'
import { newId } from '../platform/ids.ts'
import type { OutboundClient } from '../platform/outbound/http-client.ts'
import { describeNetworkError } from './attempt-error.ts'
import { insertAttempt, MAX_ATTEMPTS_PER_WEBHOOK, ATTEMPT_RETENTION_MS, pruneAttempts } from './webhook-attempts.store.ts'
import { webhookHeaders } from './signature.ts'
import { webhookEventBody } from './webhook-event.ts'
import type { TestResult } from './webhooks.schemas.ts'
import { signingSecrets, type WebhookRow } from './webhooks.store.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'

/** Test events per webhook and minute: enough to debug by hand, too few to aim Herald at a third party's server. */
export const TEST_EVENTS_PER_MINUTE = 5

export async function sendTestEvent(db: Database, client: OutboundClient, webhook: WebhookRow, audit: AuditContext): Promise<TestResult> {
  const eventId = newId('evt')
  const body = webhookEventBody({
    event_id: eventId,
    type: 'test',
    project_id: webhook.project_id,
    broadcast_id: null,
    subscriber_id: null,
    external_id: null,
    meta: null,
    created_at: new Date(),
  })
  const { secret, previous_secret } = await signingSecrets(db, webhook.id)
  const headers = webhookHeaders(secret, eventId, body, Date.now(), previous_secret)
  const started = performance.now()
  const result = await client.post(webhook.url, headers, body, AbortSignal.timeout(client.timeoutMs))
  const durationMs = Math.round(performance.now() - started)
  const delivered = result.status !== null && result.status >= 200 && result.status < 300
  const outcome: TestResult = {
    delivered,
    response_status: result.status,
    error: result.status === null ? describeNetworkError(result.error) : null,
    duration_ms: durationMs,
  }
  // The attempt in the delivery log and the audit entry commit together (the
  // request itself has left by then: it cannot be taken back).
  await db.transaction(async (tx) => {
    await insertAttempt(tx, {
      webhook_id: webhook.id,
      event_id: eventId,
      event_type: 'test',
      attempt: 1,
      outcome: delivered ? 'delivered' : 'failed',
      response_status: outcome.response_status,
      error: outcome.error,
      duration_ms: durationMs,
    })
    await recordAudit(tx, {
      projectId: webhook.project_id,
      context: audit,
      action: 'webhook.test',
      target: { type: 'webhook', id: webhook.id },
      details: { event_id: eventId, delivered, response_status: outcome.response_status },
    })
  })
  // The dispatchers keep the log within its cap for the endpoints they send to; a test can be this endpoint's only traffic.
  await pruneAttempts(db, { webhookIds: [webhook.id], retentionMs: ATTEMPT_RETENTION_MS, perWebhook: MAX_ATTEMPTS_PER_WEBHOOK })
  return outcome
}
