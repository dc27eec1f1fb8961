// A broadcast's life after it is created (decisions.md §3), every transition
// in one place:
//
//   scheduled ──markFired──▶ pending ──startSending──▶ sending ──finish──▶ sent
//       │                       │                          │
//       │                       └─failForPushLimit─┐       │
//       │                                          ▼       ▼
//       │                  (any of the three) ──fail──▶ failed
//       │
//       └──cancel or stop──▶ canceled ◀──stop── pending, sending
//
// plus the progress of a fan-out while it is sending (batches outstanding,
// delivered, failed and retrying counts, by reason and push service, the last
// push error) and the clicks and dismissals counted after.
// Fan-out and the beacon call these; they hold no SQL of broadcasts.
//
// Locks: a broadcast row is locked FOR NO KEY UPDATE, never FOR UPDATE (which
// would wait for every transaction holding a key-share lock on the row, as a
// foreign key check takes; events had one on broadcasts until migration
// 0016, and a table added later may again), several rows in
// id order, and after the rows a transaction inserts (delivery/fanout.ts has
// the whole order).
import { CLICK_LINK_SECRET } from '../projects/vapid-keys.store.ts'
import type { Queryable } from '../platform/db/database.ts'
import { adjustPushes } from '../projects/push-usage.ts'
import type { ProjectKeys } from '../projects/projects.store.ts'
import { PUSH_SERVICES, type PushService } from '../subscribers/subscribers.schemas.ts'
import type { FailReason } from './broadcasts.schemas.ts'
import type { FrequencyCapRule } from '../frequency-caps/caps.schemas.ts'
import type { BroadcastRow, BroadcastStatus } from './broadcasts.store.ts'
import type { WaveInputs } from '../delivery/waves.ts'

/** The broadcast columns fan-out reads: a slice of the broadcasts row type, not a copy of it. */
export type SendingBroadcast = Pick<
  BroadcastRow,
  | 'id' | 'project_id' | 'status' | 'target' | 'title' | 'body' | 'icon' | 'image' | 'url' | 'actions' | 'ttl' | 'urgency' | 'topic' | 'reserved'
  | 'audience' | 'started_at' | 'throttle_per_minute' | 'personalization' | 'send_class' | 'on_capped' | 'has_experiment'
>

const SENDING_COLUMNS = 'id, project_id, status, target, title, body, icon, image, url, actions, ttl, urgency, topic, reserved, audience, started_at, throttle_per_minute, personalization, send_class, on_capped, has_experiment'

/** The broadcast as fan-out needs it, locked (FOR NO KEY UPDATE) when asked. */
export async function findSendingBroadcast(q: Queryable, id: string, lock = false): Promise<SendingBroadcast | null> {
  const result = await q.query<SendingBroadcast>(`SELECT ${SENDING_COLUMNS} FROM broadcasts WHERE id = $1${lock ? ' FOR NO KEY UPDATE' : ''}`, [id])
  return result.rows[0] ?? null
}

/**
 * scheduled → canceled in one statement, so a broadcast the scheduler is
 * firing at the same moment is either canceled or fired, never both.
 * True when it was canceled.
 */
export async function cancel(q: Queryable, projectId: string, id: string): Promise<boolean> {
  const result = await q.query(
    `UPDATE broadcasts SET status = 'canceled'
      WHERE project_id = $1 AND id = $2 AND status = 'scheduled'
      RETURNING id`,
    [projectId, id],
  )
  return result.rowCount > 0
}

/** The statuses POST /v1/broadcasts/:id/stop ends: every one that may still push (a scheduled one is canceled as by cancel). */
export const STOPPABLE: readonly BroadcastStatus[] = ['scheduled', 'pending', 'sending']

/**
 * scheduled, pending or sending → canceled: nothing more is pushed. Run in a
 * transaction: the row is locked (FOR NO KEY UPDATE) while the status and the
 * month's ledger change, so a stop racing the last batch's finish either wins
 * (finish then finds it not sending and does nothing) or loses (it is sent,
 * and the stop is refused). Batches check the status just before they send
 * (checkBeforeSend); those already past that check are in flight, and their
 * outcomes still count (addOutcomes). The counts are left as they are:
 * pending keeps the audience never attempted, retrying the pushes whose retry
 * will not run. The ledger is settled on the pushes attempted so far; a
 * scheduled broadcast reserved nothing and keeps finished_at null, as cancel.
 *
 * Returns the status the broadcast had (stopped when it is in STOPPABLE), or
 * null when the project has no such broadcast.
 */
export async function stop(q: Queryable, projectId: string, id: string): Promise<BroadcastStatus | null> {
  const found = await q.query<{ status: BroadcastStatus; reserved: number; attempted: number; month: Date }>(
    `SELECT status, reserved, delivered + failed - failed_capped - failed_skipped + retrying AS attempted, COALESCE(started_at, scheduled_at, created_at) AS month
       FROM broadcasts WHERE project_id = $1 AND id = $2 FOR NO KEY UPDATE`,
    [projectId, id],
  )
  const row = found.rows[0]
  if (!row) return null
  if (!STOPPABLE.includes(row.status)) return row.status
  if (row.status === 'scheduled') {
    await q.query(`UPDATE broadcasts SET status = 'canceled' WHERE id = $1`, [id])
    return row.status
  }
  await q.query(`UPDATE broadcasts SET status = 'canceled', finished_at = now(), reserved = $2 WHERE id = $1`, [id, row.attempted])
  // push_usage after the broadcast row: the lock order. The month the pushes were reserved in.
  if (row.attempted !== row.reserved) await adjustPushes(q, projectId, row.month, row.attempted - row.reserved)
  return row.status
}

/**
 * Read by a batch just before it sends: the broadcast's status now (a stop
 * may have landed since the job started) and its project's VAPID keys, in one
 * statement, so the check costs no round trip of its own. Null when either is gone.
 */
export async function checkBeforeSend(
  q: Queryable,
  id: string,
): Promise<{ status: BroadcastStatus; project: ProjectKeys; domain: string | null; frequencyCaps: FrequencyCapRule[] | null } | null> {
  const result = await q.query<{ status: BroadcastStatus; domain: string | null; frequency_caps: FrequencyCapRule[] | null } & ProjectKeys>(
    // The project's pairs that are not retired come along (issue 23): each subscriber is signed with its own, and this is the batch's one read of them.
    `SELECT b.status, p.id, p.vapid_public, p.vapid_private, p.vapid_key_id, p.domain, p.frequency_caps, ${CLICK_LINK_SECRET} AS click_link_secret,
            (SELECT json_agg(json_build_object('id', k.id, 'public_key', k.public_key, 'private_key', k.private_key))
               FROM vapid_keys k WHERE k.project_id = p.id AND k.retired_at IS NULL) AS vapid_keys
       FROM broadcasts b JOIN projects p ON p.id = b.project_id WHERE b.id = $1`,
    [id],
  )
  const row = result.rows[0]
  if (!row) return null
  const project: ProjectKeys = {
    id: row.id,
    vapid_public: row.vapid_public,
    vapid_private: row.vapid_private,
    vapid_key_id: row.vapid_key_id ?? null,
    vapid_keys: row.vapid_keys ?? null,
    click_link_secret: row.click_link_secret,
  }
  return { status: row.status, project, domain: row.domain, frequencyCaps: row.frequency_caps }
}

/**
 * scheduled → pending: a scheduled broadcast's time has come. Only a broadcast
 * still 'scheduled' fires (a cancel that got there first wins, and vice
 * versa); null when it was not.
 */
export async function markFired(q: Queryable, id: string): Promise<Pick<SendingBroadcast, 'project_id' | 'target'> | null> {
  const fired = await q.query<Pick<SendingBroadcast, 'project_id' | 'target'>>(
    `UPDATE broadcasts SET status = 'pending' WHERE id = $1 AND status = 'scheduled' RETURNING project_id, target`,
    [id],
  )
  return fired.rows[0] ?? null
}

/** Records the audience counted at fire time and the pushes reserved for it. */
export async function setReserved(q: Queryable, id: string, audience: number): Promise<void> {
  await q.query('UPDATE broadcasts SET audience = $2, reserved = $2 WHERE id = $1', [id, audience])
}

/** pending → failed: the audience did not fit in the month's push budget at fire time. */
export async function failForPushLimit(q: Queryable, id: string, audience: number, message: string): Promise<void> {
  await q.query(`UPDATE broadcasts SET status = 'failed', failure_reason = $2, audience = $3, finished_at = now() WHERE id = $1`, [
    id,
    `monthly_push_limit_reached: ${message}`,
    audience,
  ])
}

/**
 * pending → sending, with the audience fixed now and one batch outstanding
 * (the first, enqueued with it). Subscribers who joined since the send are
 * pushed too: the ledger counts them (never past what was reserved backwards).
 */
export async function startSending(q: Queryable, broadcast: Pick<SendingBroadcast, 'id' | 'project_id' | 'reserved'>, audience: number): Promise<void> {
  await q.query(
    `UPDATE broadcasts SET status = 'sending', started_at = now(), audience = $2, reserved = GREATEST(reserved, $2),
            pending_batches = 1, planning_done = false
      WHERE id = $1`,
    [broadcast.id, audience],
  )
  // push_usage after the broadcast row: the lock order.
  if (audience > broadcast.reserved) await adjustPushes(q, broadcast.project_id, new Date(), audience - broadcast.reserved)
}

/** One more batch job outstanding: a batch passed the rest of the audience on. */
export async function addPendingBatch(q: Queryable, id: string): Promise<void> {
  await q.query('UPDATE broadcasts SET pending_batches = pending_batches + 1 WHERE id = $1', [id])
}

/** The last slice of the audience has been handed to a batch: once the outstanding batches are done, so is the broadcast. */
export async function markPlanningDone(q: Queryable, id: string): Promise<void> {
  await q.query('UPDATE broadcasts SET planning_done = true WHERE id = $1', [id])
}

/**
 * A broadcast sent in waves (delivery/waves.ts) starts with one outstanding
 * batch per wave (each wave's first, enqueued with it) and `waves` chains to
 * plan; `skipped` subscribers are not pushed at all (past: "skip"). With no
 * wave left it is over at once.
 */
export async function startWaves(q: Queryable, id: string, waves: number, skipped: number): Promise<void> {
  await q.query(
    'UPDATE broadcasts SET pending_batches = $2, waves_left = $2, planning_done = ($2 = 0), skipped = $3 WHERE id = $1',
    [id, waves, skipped],
  )
  if (waves === 0) await finish(q, id)
}

/** A wave's last slice has been handed to a batch: once every wave's has, planning is done. */
export async function markWavePlanned(q: Queryable, id: string): Promise<void> {
  await q.query('UPDATE broadcasts SET waves_left = waves_left - 1, planning_done = (waves_left <= 1) WHERE id = $1', [id])
}

/** What planning a broadcast's waves needs: its timing and its project's zone and quiet hours. */
export async function findWaveInputs(q: Queryable, id: string): Promise<WaveInputs | null> {
  const result = await q.query<WaveInputs>(
    `SELECT b.project_id, b.target, b.urgency, b.timing, p.default_timezone, p.quiet_hours
       FROM broadcasts b JOIN projects p ON p.id = b.project_id WHERE b.id = $1`,
    [id],
  )
  return result.rows[0] ?? null
}

/** A throttled broadcast's time slot for some pushes (epoch ms, by the database's clock). */
export interface ThrottleSlot {
  /** When the slot starts: the pushes may leave from then on. */
  at: number
  /** When it ends: where the next slot starts. */
  until: number
  /** The database's clock when the slot was taken. */
  now: number
}

/**
 * Takes the next slot of a throttled broadcast for `pushes` pushes: from the
 * end of the last slot handed out, or now if that is past, lasting pushes ×
 * 60 s / rate. Every sender of the broadcast (batches and retries, on any
 * worker) takes its slot here, on the broadcast row, so slots never overlap
 * and the pushes never start faster than the rate. `firstAttempts` adds to
 * throttle_planned (the pushes of a batch; 0 for a retry). Callers make it
 * the last statement on the row, as addOutcomes: it is the broadcast row.
 */
export async function takeThrottleSlot(q: Queryable, id: string, pushes: number, perMinute: number, firstAttempts: number): Promise<ThrottleSlot> {
  const taken = await q.query<{ at: Date; until: Date; now: Date }>(
    `UPDATE broadcasts SET throttle_next_at = GREATEST(throttle_next_at, now()) + $2 * 60000.0 / $3 * interval '1 millisecond',
            throttle_planned = throttle_planned + $4
      WHERE id = $1
      RETURNING throttle_next_at - $2 * 60000.0 / $3 * interval '1 millisecond' AS at, throttle_next_at AS until, now() AS now`,
    [id, pushes, perMinute, firstAttempts],
  )
  const row = taken.rows[0]
  return { at: row.at.getTime(), until: row.until.getTime(), now: row.now.getTime() }
}

/** The latest push of a broadcast that did not deliver (decisions.md "Broadcast progress and stop" has the reasons). */
export interface LastPushError {
  /** The push service's HTTP status; null when it never answered (timeout, network) or nothing was sent. */
  status: number | null
  reason: string
  pushService: PushService
  /** Epoch ms. */
  at: number
}

export interface PushServiceCounts {
  delivered: number
  failed: number
  retrying: number
}

/** What one batch job changed, added to the broadcast's counts by addOutcomes. */
export interface OutcomeDelta {
  delivered: number
  failed: number
  /** + the pushes this job queued for a retry, − those of the retry job that ran (it may be negative). */
  retrying: number
  /** failed, by reason. */
  failures: Record<FailReason, number>
  /** The same three counts by push service; a service this batch did not touch may be left out. */
  byPushService: Partial<Record<PushService, PushServiceCounts>>
  /** Subscribers of a retry job who left before it ran: no longer in the audience, as at finish. */
  left: number
  lastError: LastPushError | null
}

export function emptyDelta(): OutcomeDelta {
  return { delivered: 0, failed: 0, retrying: 0, failures: { gone: 0, rejected: 0, unreachable: 0, skipped: 0, capped: 0, vapid_key_mismatch: 0 }, byPushService: {}, left: 0, lastError: null }
}

const SERVICE_COUNTS = PUSH_SERVICES.flatMap((service) => (['delivered', 'failed', 'retrying'] as const).map((count) => ({ service, count })))

/**
 * The one statement a batch makes on its broadcast row ($1 the id). Every
 * count is added in place; the audience grows when subscribers who joined
 * during the fan-out were pushed (so delivered + failed + retrying never
 * exceeds it) and shrinks by those who left before their retry; the last
 * error is kept when it is newer than the one stored.
 */
const ADD_OUTCOMES_SQL = (() => {
  let n = 1
  const param = () => `$${++n}`
  const [delivered, failed, retrying, gone, rejected, unreachable, skipped, capped, left, jobs] = Array.from({ length: 10 }, param)
  const services = SERVICE_COUNTS.map(({ service, count }) => `${service}_${count} = ${service}_${count} + ${param()}`)
  const [status, reason, pushService, at] = Array.from({ length: 4 }, param)
  const mismatch = param() // failed_vapid_key_mismatch (migration 0024), last so the others keep their places
  const newer = `${at}::timestamptz IS NOT NULL AND (last_error_at IS NULL OR ${at}::timestamptz >= last_error_at)`
  return `UPDATE broadcasts SET
      delivered = delivered + ${delivered}, failed = failed + ${failed}, retrying = retrying + ${retrying},
      failed_gone = failed_gone + ${gone}, failed_rejected = failed_rejected + ${rejected}, failed_unreachable = failed_unreachable + ${unreachable},
      failed_skipped = failed_skipped + ${skipped},
      failed_capped = failed_capped + ${capped},
      failed_vapid_key_mismatch = failed_vapid_key_mismatch + ${mismatch},
      ${services.join(', ')},
      audience = GREATEST(audience - ${left}, delivered + failed + retrying + ${delivered} + ${failed} + ${retrying}),
      last_error_status = CASE WHEN ${newer} THEN ${status}::integer ELSE last_error_status END,
      last_error_reason = CASE WHEN ${newer} THEN ${reason}::text ELSE last_error_reason END,
      last_error_push_service = CASE WHEN ${newer} THEN ${pushService}::text ELSE last_error_push_service END,
      last_error_at = CASE WHEN ${newer} THEN ${at}::timestamptz ELSE last_error_at END,
      pending_batches = pending_batches + ${jobs}
    WHERE id = $1
    RETURNING status, pending_batches, planning_done, project_id, started_at, reserved, delivered + failed - failed_capped - failed_skipped + retrying AS attempted`
})()

/**
 * Adds a batch's outcomes (delta), and `jobsDelta` to the batches
 * outstanding (-1 for the job that ends, +1 per job it enqueued); finishes
 * the broadcast when that was the last. True when it is now sent.
 *
 * On a broadcast stopped while this batch was in flight, the outcomes still
 * count (its pushes left) and the month's ledger takes the pushes attempted
 * for the first time (stop settled it on those attempted before).
 *
 * Callers make this the last statement on the row before their commit: every
 * batch of a broadcast updates it, so it stays locked one round trip.
 */
export async function addOutcomes(q: Queryable, id: string, delta: OutcomeDelta, jobsDelta: number): Promise<boolean> {
  const none: PushServiceCounts = { delivered: 0, failed: 0, retrying: 0 }
  const error = delta.lastError
  const updated = await q.query<{
    status: BroadcastStatus
    pending_batches: number
    planning_done: boolean
    project_id: string
    started_at: Date | null
    reserved: number
    attempted: number
  }>(ADD_OUTCOMES_SQL, [
    id,
    delta.delivered,
    delta.failed,
    delta.retrying,
    delta.failures.gone,
    delta.failures.rejected,
    delta.failures.unreachable,
    delta.failures.skipped,
    delta.failures.capped,
    delta.left,
    jobsDelta,
    ...SERVICE_COUNTS.map(({ service, count }) => (delta.byPushService[service] ?? none)[count]),
    error?.status ?? null,
    error?.reason ?? null,
    error?.pushService ?? null,
    error ? new Date(error.at) : null,
    delta.failures.vapid_key_mismatch,
  ])
  const state = updated.rows[0]
  if (!state) return false
  if (state.status === 'canceled') {
    await settleStopped(q, id, state)
    return false
  }
  if (state.pending_batches <= 0 && state.planning_done) {
    await finish(q, id)
    return true
  }
  return false
}

/** Keeps a stopped broadcast's reservation equal to its pushes attempted, after a batch in flight at the stop added some. */
async function settleStopped(q: Queryable, id: string, row: { project_id: string; started_at: Date | null; reserved: number; attempted: number }): Promise<void> {
  const change = row.attempted - row.reserved
  if (change === 0) return
  await q.query('UPDATE broadcasts SET reserved = $2 WHERE id = $1', [id, row.attempted])
  // push_usage after the broadcast row: the lock order.
  await adjustPushes(q, row.project_id, row.started_at ?? new Date(), change)
}

/**
 * sending → sent, and the month's budget settled on what was actually
 * pushed: unused reservation (subscribers who left) is given back, and
 * subscribers who joined during the fan-out (and were pushed) are added.
 */
export async function finish(q: Queryable, id: string): Promise<void> {
  const before = await q.query<{ project_id: string; reserved: number; attempted: number; pushed: number; started_at: Date | null }>(
    `SELECT project_id, reserved, delivered + failed AS attempted, delivered + failed - failed_capped - failed_skipped AS pushed, started_at
       FROM broadcasts WHERE id = $1 AND status = 'sending' FOR NO KEY UPDATE`,
    [id],
  )
  const row = before.rows[0]
  if (!row) return
  // Pushes skipped for a frequency cap or by a template stay in the audience (as failed) but were never sent: the month does not count them.
  await q.query(`UPDATE broadcasts SET status = 'sent', finished_at = now(), audience = $2, reserved = $3 WHERE id = $1`, [id, row.attempted, row.pushed])
  // The month the pushes were counted in: the one the fan-out started in.
  await adjustPushes(q, row.project_id, row.started_at ?? new Date(), row.pushed - row.reserved)
}

/**
 * scheduled, pending or sending → failed, with the reason: a fan-out job
 * failed every attempt (a bug, or the database refusing the same write for a
 * day), and the broadcast must not stay 'sending' for ever.
 */
export async function fail(q: Queryable, id: string, reason: string): Promise<void> {
  await q.query(
    `UPDATE broadcasts SET status = 'failed', failure_reason = $2, finished_at = now()
      WHERE id = $1 AND status IN ('scheduled', 'pending', 'sending')`,
    [id, reason.slice(0, 500)],
  )
}

/**
 * Locks the broadcasts whose counts a batch of beacons will bump, in id
 * order, so two processes writing batches that share broadcasts wait for
 * each other instead of deadlocking.
 */
export async function lockForCounts(q: Queryable, broadcastIds: string[]): Promise<void> {
  if (broadcastIds.length === 0) return
  await q.query('SELECT id FROM broadcasts WHERE id = ANY ($1::text[]) ORDER BY id FOR NO KEY UPDATE', [broadcastIds])
}

export interface EngagementDelta {
  broadcast_id: string
  clicked: number
  dismissed: number
  /** Of clicked, those on each action button. */
  by_action: Record<string, number>
}

/**
 * Adds each delta to its broadcast's clicked, dismissed and clicked_by_action
 * counts: one row update per broadcast, one statement. clicked_by_action is
 * merged key by key (old count + new) only where the delta has any.
 */
export async function addEngagement(q: Queryable, deltas: EngagementDelta[]): Promise<void> {
  if (deltas.length === 0) return
  await q.query(
    `UPDATE broadcasts b SET clicked = b.clicked + d.clicked, dismissed = b.dismissed + d.dismissed,
            clicked_by_action = CASE WHEN d.by_action = '{}'::jsonb THEN b.clicked_by_action ELSE b.clicked_by_action || (
              SELECT jsonb_object_agg(k.key, COALESCE((b.clicked_by_action ->> k.key)::int, 0) + k.value::int)
                FROM jsonb_each_text(d.by_action) AS k) END
       FROM unnest($1::text[], $2::int[], $3::int[], $4::jsonb[]) AS d(broadcast_id, clicked, dismissed, by_action)
      WHERE b.id = d.broadcast_id`,
    [deltas.map((d) => d.broadcast_id), deltas.map((d) => d.clicked), deltas.map((d) => d.dismissed), deltas.map((d) => JSON.stringify(d.by_action))],
  )
}

/** What a batch of beacons adds to a broadcast's funnel counts beyond clicked and dismissed (docs/funnel.md). */
export interface FunnelDelta {
  broadcast_id: string
  project_id: string
  /** shown beacons */
  shown: number
  /** Of the batch's clicks already counted by addEngagement, those through a click link (GET /c/:token). */
  clicked_via_link: number
}

/**
 * Adds each delta to its broadcast's shown and clicked_via_link counts, one
 * row update per broadcast, only where the broadcast is the delta's project's
 * (a shown beacon has no events row whose insert would check it). Returns the
 * broadcasts updated, as "project_id broadcast_id". Run after lockForCounts, as addEngagement.
 */
export async function addFunnelCounts(q: Queryable, deltas: FunnelDelta[]): Promise<Set<string>> {
  if (deltas.length === 0) return new Set()
  const result = await q.query<{ id: string; project_id: string }>(
    `UPDATE broadcasts b SET shown = b.shown + d.shown, clicked_via_link = b.clicked_via_link + d.clicked_via_link
       FROM unnest($1::text[], $2::text[], $3::int[], $4::int[]) AS d(broadcast_id, project_id, shown, clicked_via_link)
      WHERE b.id = d.broadcast_id AND b.project_id = d.project_id
      RETURNING b.id, b.project_id`,
    [deltas.map((d) => d.broadcast_id), deltas.map((d) => d.project_id), deltas.map((d) => d.shown), deltas.map((d) => d.clicked_via_link)],
  )
  return new Set(result.rows.map((row) => `${row.project_id} ${row.id}`))
}
