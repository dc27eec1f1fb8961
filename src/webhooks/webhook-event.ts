// The JSON body of a webhook delivery (decisions.md §3). Built from the event
// row, which never changes, so every retry sends the same bytes.
import type { ClaimedDelivery } from './webhook-deliveries.store.ts'

export interface WebhookEventJson {
  id: string
  type: string
  project_id: string
  broadcast_id: string
  subscriber_id: string | null
  external_id: string | null
  /** null except on failed: { reason: 'gone' | 'rejected' | 'unreachable', status: number | null }. */
  meta: unknown
  /** Unix ms. */
  created_at: number
}

export function webhookEventBody(row: Pick<ClaimedDelivery, 'event_id' | 'type' | 'project_id' | 'broadcast_id' | 'subscriber_id' | 'external_id' | 'meta' | 'created_at'>): string {
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
