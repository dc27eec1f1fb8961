// SQL for fan-out: the broadcast's state while it is sent, and the outcomes
// of each batch, written in one transaction with the batch job's completion.
import type { Queryable } from '../platform/db/database.ts'
import { newId } from '../platform/ids.ts'
import { enqueueDeliveriesForEvents } from '../webhooks/webhook-deliveries.store.ts'
import type { BroadcastRow } from '../broadcasts/broadcasts.store.ts'

/** The broadcast columns fan-out reads: a slice of the broadcasts row type, not a copy of it. */
export type SendingBroadcast = Pick<
  BroadcastRow,
  'id' | 'project_id' | 'status' | 'target' | 'title' | 'body' | 'icon' | 'image' | 'url' | 'ttl' | 'urgency' | 'topic' | 'reserved' | 'audience' | 'started_at'
>

const COLUMNS = 'id, project_id, status, target, title, body, icon, image, url, ttl, urgency, topic, reserved, audience, started_at'

export async function findSendingBroadcast(q: Queryable, id: string, lock = false): Promise<SendingBroadcast | null> {
  const result = await q.query<SendingBroadcast>(`SELECT ${COLUMNS} FROM broadcasts WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [id])
  return result.rows[0] ?? null
}

export interface ProjectKeys {
  id: string
  vapid_public: string
  vapid_private: string
}

export async function findProjectKeys(q: Queryable, projectId: string): Promise<ProjectKeys | null> {
  const result = await q.query<ProjectKeys>('SELECT id, vapid_public, vapid_private FROM projects WHERE id = $1', [projectId])
  return result.rows[0] ?? null
}

export type FailReason = 'gone' | 'rejected' | 'unreachable'

export interface Delivered {
  subscriberId: string
  externalId: string | null
}

export interface Failed extends Delivered {
  reason: FailReason
  /** The push service's HTTP status, or null when it never answered. */
  status: number | null
}

export interface BatchOutcomes {
  delivered: Delivered[]
  failed: Failed[]
}

/**
 * Records one batch's outcomes: the delivered and failed events, dead
 * subscriptions marked expired, and the broadcast's counts. `jobsDelta` adjusts
 * pending_batches (-1 for the finished job, +1 per job it enqueued). Returns
 * true when this was the broadcast's last outstanding job and it is now sent.
 */
export async function recordBatch(q: Queryable, broadcast: SendingBroadcast, outcomes: BatchOutcomes, jobsDelta: number): Promise<boolean> {
  const events = [
    ...outcomes.delivered.map((d) => ({ ...d, type: 'delivered', meta: null as string | null })),
    ...outcomes.failed.map((f) => ({ ...f, type: 'failed', meta: JSON.stringify({ reason: f.reason, status: f.status }) })),
  ]
  if (events.length > 0) {
    const ids = events.map(() => newId('evt'))
    await q.query(
      `INSERT INTO events (id, project_id, broadcast_id, subscriber_id, external_id, type, meta)
       SELECT e.id, $1, $2, e.subscriber_id, e.external_id, e.type, e.meta::jsonb
         FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
              AS e(id, subscriber_id, external_id, type, meta)`,
      [
        broadcast.project_id,
        broadcast.id,
        ids,
        events.map((e) => e.subscriberId),
        events.map((e) => e.externalId),
        events.map((e) => e.type),
        events.map((e) => e.meta),
      ],
    )
    // Webhook deliveries of these events, committed with them (or not at all).
    await enqueueDeliveriesForEvents(q, broadcast.project_id, events.map((e, i) => ({ id: ids[i], type: e.type })))
  }
  const gone = outcomes.failed.filter((f) => f.reason === 'gone').map((f) => f.subscriberId)
  if (gone.length > 0) {
    await q.query(`UPDATE subscribers SET status = 'expired' WHERE id = ANY($1::text[]) AND status = 'active'`, [gone])
  }
  const updated = await q.query<{ pending_batches: number; planning_done: boolean }>(
    `UPDATE broadcasts SET delivered = delivered + $2, failed = failed + $3, pending_batches = pending_batches + $4
      WHERE id = $1 RETURNING pending_batches, planning_done`,
    [broadcast.id, outcomes.delivered.length, outcomes.failed.length, jobsDelta],
  )
  const state = updated.rows[0]
  if (state && state.pending_batches <= 0 && state.planning_done) {
    await finishBroadcast(q, broadcast.id)
    return true
  }
  return false
}

/**
 * Marks the broadcast sent and settles the month's budget on what was
 * actually pushed: unused reservation (subscribers who left) is given back,
 * and subscribers who joined during the fan-out (and were pushed) are added.
 */
export async function finishBroadcast(q: Queryable, id: string): Promise<void> {
  const before = await q.query<{ project_id: string; reserved: number; pushed: number; month: string }>(
    `SELECT project_id, reserved, delivered + failed AS pushed,
            to_char(COALESCE(started_at, now()) AT TIME ZONE 'UTC', 'YYYY-MM-01') AS month
       FROM broadcasts WHERE id = $1 AND status = 'sending' FOR UPDATE`,
    [id],
  )
  const row = before.rows[0]
  if (!row) return
  await q.query(`UPDATE broadcasts SET status = 'sent', finished_at = now(), audience = $2, reserved = $2 WHERE id = $1`, [id, row.pushed])
  const delta = row.pushed - row.reserved
  if (delta !== 0) {
    await q.query(
      `INSERT INTO push_usage (project_id, month, pushes) VALUES ($1, $2::date, GREATEST(0, $3::bigint))
       ON CONFLICT (project_id, month) DO UPDATE SET pushes = GREATEST(0, push_usage.pushes + $3::bigint)`,
      [row.project_id, row.month, delta],
    )
  }
}
