// The webhook deliveries waiting to be sent, for /metrics: pending and due
// (a claimed row's due time moves forward by its lease, so rows in flight do
// not count). Read over the partial index of pending rows.
import type { Queryable } from '../platform/db/database.ts'
import type { Backlog } from '../platform/metrics/metrics.ts'

export async function waitingWebhookDeliveries(q: Queryable): Promise<Backlog[]> {
  const result = await q.query<{ waiting: number; oldest: number | null }>(
    `SELECT count(*)::int AS waiting, extract(epoch FROM now() - min(next_attempt_at))::float8 AS oldest
       FROM webhook_deliveries
      WHERE status = 'pending' AND next_attempt_at <= now()`,
  )
  const row = result.rows[0]
  return [{ label: '', waiting: row?.waiting ?? 0, oldestSeconds: Math.max(0, row?.oldest ?? 0) }]
}
