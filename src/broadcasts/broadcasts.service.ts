// Reading, canceling and stopping broadcasts (decisions.md §3, and
// "Broadcast progress and stop").
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { isId } from '../platform/ids.ts'
import type { BroadcastView, ListBroadcastsQuery } from './broadcasts.schemas.ts'
import { findBroadcast, listBroadcasts, type BroadcastRecord } from './broadcasts.store.ts'
import { cancel, stop, STOPPABLE } from './broadcast-state.ts'
import { toFunnel } from './funnel.ts'
import type { PushService } from '../subscribers/subscribers.schemas.ts'
import { readPage } from '../platform/paging.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'
import { withExperiments } from '../experiments/experiments.service.ts'

const DEFAULT_PAGE_SIZE = 50

function ms(date: Date | null): number | null {
  return date ? date.getTime() : null
}

export function toBroadcastView(row: BroadcastRecord): BroadcastView {
  // The row keeps delivered + failed + retrying within audience (addOutcomes);
  // taking the larger anyway keeps the view's sum exact for any row.
  const audience = Math.max(row.audience, row.delivered + row.failed + row.retrying)
  // Retries run only while a broadcast is sending: once it is stopped (or
  // failed) nothing waits, so the pushes its retry jobs held are reported as
  // not sent (pending) rather than waiting for a retry that never comes. The
  // row keeps them in retrying: a batch in flight at the stop still takes its
  // retried pushes out of it, and the month's ledger counts them as attempted.
  const sending = row.status === 'sending'
  const retrying = sending ? row.retrying : 0
  const waiting = (count: number) => (sending ? count : 0)
  return {
    id: row.id,
    status: row.status,
    source: row.source,
    target: row.target,
    notification: {
      title: row.title, body: row.body, icon: row.icon, image: row.image, url: row.url,
      ...(row.actions.length > 0 ? { actions: row.actions } : {}),
    },
    ...(row.personalization ? { personalization: row.personalization } : {}),
    ttl: row.ttl,
    urgency: row.urgency,
    topic: row.topic,
    audience,
    delivered: row.delivered,
    failed: row.failed,
    clicked: row.clicked,
    // Every action of the notification, so a client reads 0 rather than a missing key.
    clicked_by_action: Object.fromEntries(row.actions.map((a) => [a.action, row.clicked_by_action[a.action] ?? 0])),
    dismissed: row.dismissed,
    shown: row.shown,
    funnel: toFunnel({ ...row, retrying }, audience),
    pending: audience - row.delivered - row.failed - retrying,
    retrying,
    failures: { gone: row.failed_gone, rejected: row.failed_rejected, unreachable: row.failed_unreachable, skipped: row.failed_skipped, capped: row.failed_capped, vapid_key_mismatch: row.failed_vapid_key_mismatch },
    by_push_service: {
      fcm: { delivered: row.fcm_delivered, failed: row.fcm_failed, retrying: waiting(row.fcm_retrying) },
      mozilla: { delivered: row.mozilla_delivered, failed: row.mozilla_failed, retrying: waiting(row.mozilla_retrying) },
      apple: { delivered: row.apple_delivered, failed: row.apple_failed, retrying: waiting(row.apple_retrying) },
      wns: { delivered: row.wns_delivered, failed: row.wns_failed, retrying: waiting(row.wns_retrying) },
      other: { delivered: row.other_delivered, failed: row.other_failed, retrying: waiting(row.other_retrying) },
    },
    last_error: row.last_error_at
      ? {
          status: row.last_error_status,
          reason: row.last_error_reason as NonNullable<BroadcastView['last_error']>['reason'],
          push_service: row.last_error_push_service as PushService,
          at: row.last_error_at.getTime(),
        }
      : null,
    next_attempt_at: ms(row.next_attempt_at),
    capped: row.failed_capped,
    class: row.send_class,
    on_capped: row.on_capped,
    throttle_per_minute: row.throttle_per_minute,
    expected_finish_at: ms(row.expected_finish_at),
    deliver_at_local: row.timing?.deliver_at_local ?? null,
    deliver_on: row.timing?.deliver_on ?? null,
    past: row.timing?.past ?? null,
    ignore_quiet_hours: row.timing?.ignore_quiet_hours ?? false,
    waiting: sending ? row.waiting.map((w) => ({ at: Number(w.at), reason: w.reason, count: w.count })) : [],
    held: sending ? row.waiting.filter((w) => w.reason === 'quiet_hours').reduce((sum, w) => sum + w.count, 0) : 0,
    skipped: row.skipped,
    failure_reason: row.failure_reason,
    scheduled_at: ms(row.scheduled_at),
    started_at: ms(row.started_at),
    finished_at: ms(row.finished_at),
    created_at: row.created_at.getTime(),
  }
}

function notFound(id: string): AppError {
  return new AppError('broadcast_not_found', `No broadcast ${id} in this project.`)
}

export async function getBroadcast(q: Queryable, projectId: string, id: string): Promise<BroadcastView> {
  const row = isId('bdc', id) ? await findBroadcast(q, projectId, id) : null
  if (!row) throw notFound(id)
  const [view] = await withExperiments(q, projectId, [row], [toBroadcastView(row)])
  return view
}

export async function listBroadcastViews(
  q: Queryable,
  projectId: string,
  query: ListBroadcastsQuery,
): Promise<{ broadcasts: BroadcastView[]; next_cursor: string | null }> {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE
  const { rows, next_cursor } = await readPage(limit, (n) => listBroadcasts(q, projectId, { limit: n, cursor: query.cursor, status: query.status }))
  return { broadcasts: await withExperiments(q, projectId, rows, rows.map(toBroadcastView)), next_cursor }
}

export async function cancelBroadcast(db: Database, audit: AuditContext, projectId: string, id: string): Promise<void> {
  if (!isId('bdc', id)) throw notFound(id)
  const canceled = await db.transaction(async (tx) => {
    if (!(await cancel(tx, projectId, id))) return false
    await recordAudit(tx, { projectId, context: audit, action: 'broadcast.cancel', target: { type: 'broadcast', id } })
    return true
  })
  if (canceled) return
  const row = await findBroadcast(db, projectId, id)
  if (!row) throw notFound(id)
  throw new AppError('broadcast_not_cancelable', `Broadcast ${id} is ${row.status}; only a scheduled broadcast can be canceled.`)
}

/**
 * Stops a scheduled, pending or sending broadcast: nothing more is pushed
 * (broadcast-state.ts stop). Another project's broadcast is not found.
 */
export async function stopBroadcast(db: Database, audit: AuditContext, projectId: string, id: string): Promise<void> {
  if (!isId('bdc', id)) throw notFound(id)
  const was = await db.transaction(async (tx) => {
    const status = await stop(tx, projectId, id)
    // Recorded only when it stopped something; `was` tells the status it had.
    if (status !== null && STOPPABLE.includes(status)) {
      await recordAudit(tx, { projectId, context: audit, action: 'broadcast.stop', target: { type: 'broadcast', id }, details: { was: status } })
    }
    return status
  })
  if (was === null) throw notFound(id)
  if (!STOPPABLE.includes(was)) {
    throw new AppError('broadcast_not_stoppable', `Broadcast ${id} is ${was}; only a scheduled, pending or sending broadcast can be stopped.`)
  }
}
