// The JSON body of a webhook delivery (decisions.md §3). Built from the event
// row, which never changes, so every retry sends the same bytes.
import type { ClaimedDelivery } from './webhook-deliveries.store.ts'

export interface WebhookEventJson {
  id: string
  /** delivered, failed, clicked, dismissed; or test (POST /v1/webhooks/:id/test), whose broadcast_id is null. */
  type: string
  project_id: string
  broadcast_id: string | null
  subscriber_id: string | null
  external_id: string | null
  /** null except on failed: { reason: 'gone' | 'rejected' | 'unreachable' | 'skipped' | 'capped' | 'vapid_key_mismatch', status: number | null }, and on clicked on an action button: { action }. */
  meta: unknown
  /** Unix ms. */
  created_at: number
}

type EventFields = Pick<ClaimedDelivery, 'event_id' | 'type' | 'project_id' | 'subscriber_id' | 'external_id' | 'meta' | 'created_at'> & {
  broadcast_id: string | null
}

export function webhookEventBody(row: EventFields): string {
  const event: WebhookEventJson = {
    id: row.event_id,
    type: row.type,
    project_id: row.project_id,
    broadcast_id: row.broadcast_id,
    subscriber_id: row.subscriber_id,
    external_id: row.external_id,
    meta: row.meta ?? null,
    created_at: row.created_at.getTime(),
  }
  return JSON.stringify(event)
}
