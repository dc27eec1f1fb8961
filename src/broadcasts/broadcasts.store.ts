// SQL for broadcasts.
import { CLICK_LINK_SECRET } from '../projects/vapid-keys.store.ts'
import type { Queryable } from '../platform/db/database.ts'
import type { NotificationAction, Target } from './broadcasts.schemas.ts'
import type { Personalization } from '../templates/personalization.ts'
import type { Timing } from './local-time.ts'
import type { OnCapped, SendClass } from '../frequency-caps/caps.schemas.ts'
import { FUNNEL_COLUMNS, type FunnelColumns } from './funnel.ts'

export type BroadcastStatus = 'scheduled' | 'pending' | 'sending' | 'sent' | 'failed' | 'canceled'

export interface BroadcastRow {
  id: string
  project_id: string
  status: BroadcastStatus
  source: 'api' | 'dashboard'
  target: Target
  title: string
  body: string
  icon: string | null
  image: string | null
  url: string
  /** notification.actions as sent; [] when none. */
  actions: NotificationAction[]
  /** An A/B test goes with it (migration 0032, experiments/). */
  has_experiment: boolean
  ttl: number
  urgency: string
  topic: string | null
  audience: number
  reserved: number
  delivered: number
  failed: number
  clicked: number
  /** Clicks by action id (only ids clicked at least once). */
  clicked_by_action: Record<string, number>
  dismissed: number
  retrying: number
  failed_gone: number
  failed_rejected: number
  failed_unreachable: number
  /** Subscribers a personalized broadcast skipped (migration 0028). */
  failed_skipped: number
  /** Variables and languages: null for a broadcast that sends everyone the same push (migration 0028). */
  personalization: Personalization | null
  /** Skipped for a frequency cap (migration 0030). */
  failed_capped: number
  send_class: SendClass
  on_capped: OnCapped
  /** Migration 0024 (issue 23). */
  failed_vapid_key_mismatch: number
  fcm_delivered: number
  fcm_failed: number
  fcm_retrying: number
  mozilla_delivered: number
  mozilla_failed: number
  mozilla_retrying: number
  apple_delivered: number
  apple_failed: number
  apple_retrying: number
  wns_delivered: number
  wns_failed: number
  wns_retrying: number
  other_delivered: number
  other_failed: number
  other_retrying: number
  last_error_status: number | null
  last_error_reason: string | null
  last_error_push_service: string | null
  last_error_at: Date | null
  failure_reason: string | null
  throttle_per_minute: number | null
  /** The send's local-time delivery and quiet-hours choice (migration 0029); null when it gave none. */
  timing: Timing | null
  /** Subscribers not pushed because their local time had passed (past: skip). */
  skipped: number
  scheduled_at: Date | null
  started_at: Date | null
  finished_at: Date | null
  created_at: Date
}

/** A broadcast as read for the API: its row and when its next retry is due (and its funnel's counts, funnel.ts). */
export interface BroadcastRecord extends BroadcastRow, FunnelColumns {
  next_attempt_at: Date | null
  expected_finish_at: Date | null
  /** While sending: its waves not started yet (broadcast_waves), by due time. */
  waiting: Array<{ at: number; reason: 'local_time' | 'quiet_hours'; count: number }>
}

export type NewBroadcast = Pick<
  BroadcastRow,
  | 'id' | 'project_id' | 'status' | 'source' | 'target' | 'title' | 'body' | 'icon' | 'image' | 'url' | 'actions'
  | 'ttl' | 'urgency' | 'topic' | 'audience' | 'reserved' | 'scheduled_at' | 'throttle_per_minute' | 'personalization' | 'timing' | 'send_class' | 'on_capped'
>

const COLUMNS = `id, project_id, status, source, target, title, body, icon, image, url, actions, has_experiment, ttl, urgency, topic,
  audience, reserved, delivered, failed, clicked, clicked_by_action, dismissed, retrying,
  failed_gone, failed_rejected, failed_unreachable, failed_skipped, personalization, failed_capped, send_class, on_capped, failed_vapid_key_mismatch,
  fcm_delivered, fcm_failed, fcm_retrying, mozilla_delivered, mozilla_failed, mozilla_retrying,
  apple_delivered, apple_failed, apple_retrying, wns_delivered, wns_failed, wns_retrying,
  other_delivered, other_failed, other_retrying,
  last_error_status, last_error_reason, last_error_push_service, last_error_at,
  failure_reason, throttle_per_minute, timing, skipped, scheduled_at, started_at, finished_at, created_at`

/**
 * When the broadcast's next retry is due: the earliest of its queued
 * push_retry jobs (delivery/fanout.ts), found by jobs_broadcast_idx (migration
 * 0002). Read, never written, here; asked only of a broadcast still sending,
 * since a stopped or finished one sends nothing more whatever jobs remain.
 */
const NEXT_ATTEMPT_AT = `CASE WHEN b.status = 'sending' THEN
    (SELECT min(j.run_at) FROM jobs j WHERE j.payload ->> 'broadcast_id' = b.id AND j.kind = 'push_retry')
  END AS next_attempt_at`

/**
 * When a throttled broadcast should be done: its audience at its rate from
 * when it fires (scheduled) or now (pending); while sending, from the end of
 * the last slot handed out (or now), for the audience not yet given one.
 * Null when not throttled, or once over (finished_at says when).
 */
const EXPECTED_FINISH_AT = `CASE WHEN b.throttle_per_minute IS NOT NULL THEN
    CASE b.status
      WHEN 'scheduled' THEN b.scheduled_at + b.audience * 60000.0 / b.throttle_per_minute * interval '1 millisecond'
      WHEN 'pending' THEN now() + b.audience * 60000.0 / b.throttle_per_minute * interval '1 millisecond'
      WHEN 'sending' THEN GREATEST(b.throttle_next_at, now())
        + GREATEST(b.audience - b.throttle_planned, 0) * 60000.0 / b.throttle_per_minute * interval '1 millisecond'
    END
  END AS expected_finish_at`

/** A sending broadcast's waves not started yet (delivery/waves.ts), summed by due time and reason. */
const WAITING = `CASE WHEN b.status = 'sending' AND b.waves_left + b.pending_batches > 0 THEN
    (SELECT COALESCE(jsonb_agg(jsonb_build_object('at', w.at, 'reason', w.reason, 'count', w.count) ORDER BY w.at, w.reason), '[]'::jsonb)
       FROM (SELECT (extract(epoch FROM due_at) * 1000)::bigint AS at, reason, sum(planned)::int AS count FROM broadcast_waves
              WHERE broadcast_id = b.id AND NOT started AND reason <> 'now' GROUP BY due_at, reason) w)
    ELSE '[]'::jsonb END AS waiting`

export async function insertBroadcast(q: Queryable, row: NewBroadcast): Promise<void> {
  await q.query(
    `INSERT INTO broadcasts (id, project_id, status, source, target, title, body, icon, image, url, ttl, urgency, topic,
                             audience, reserved, scheduled_at, actions, throttle_per_minute, personalization, timing, send_class, on_capped)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)`,
    [
      row.id, row.project_id, row.status, row.source, JSON.stringify(row.target), row.title, row.body, row.icon,
      row.image, row.url, row.ttl, row.urgency, row.topic, row.audience, row.reserved, row.scheduled_at, JSON.stringify(row.actions),
      row.throttle_per_minute, row.personalization === null ? null : JSON.stringify(row.personalization),
      row.timing === null ? null : JSON.stringify(row.timing),
      row.send_class, row.on_capped,
    ],
  )
}

export async function findBroadcast(q: Queryable, projectId: string, id: string): Promise<BroadcastRecord | null> {
  const result = await q.query<BroadcastRecord>(`SELECT ${COLUMNS}, ${NEXT_ATTEMPT_AT}, ${EXPECTED_FINISH_AT}, ${WAITING}, ${FUNNEL_COLUMNS} FROM broadcasts b WHERE project_id = $1 AND id = $2`, [projectId, id])
  return result.rows[0] ?? null
}

export interface ListOptions {
  limit: number
  /** Return broadcasts older than this id (the previous page's last id). */
  cursor?: string
  status?: BroadcastStatus
}

/** Newest first, keyset-paginated on id (ids are time-ordered). */
export async function listBroadcasts(q: Queryable, projectId: string, options: ListOptions): Promise<BroadcastRecord[]> {
  const result = await q.query<BroadcastRecord>(
    `SELECT ${COLUMNS}, ${NEXT_ATTEMPT_AT}, ${EXPECTED_FINISH_AT}, ${WAITING}, ${FUNNEL_COLUMNS} FROM broadcasts b
      WHERE project_id = $1
        AND ($2::text IS NULL OR id < $2)
        AND ($3::text IS NULL OR status = $3)
      ORDER BY id DESC
      LIMIT $4`,
    [projectId, options.cursor ?? null, options.status ?? null, options.limit],
  )
  return result.rows
}

/** What GET /c/:token needs of a broadcast: its targets, and its project's key material and domain. */
export interface ClickLinkBroadcast {
  project_id: string
  url: string
  actions: NotificationAction[]
  /** The secret click links are signed with (CLICK_LINK_SECRET): the original pair's private key. */
  vapid_private: string
  domain: string | null
}

export async function findClickLinkBroadcast(q: Queryable, id: string): Promise<ClickLinkBroadcast | null> {
  const result = await q.query<ClickLinkBroadcast>(
    `SELECT b.project_id, b.url, b.actions, ${CLICK_LINK_SECRET} AS vapid_private, p.domain FROM broadcasts b JOIN projects p ON p.id = b.project_id WHERE b.id = $1`,
    [id],
  )
  return result.rows[0] ?? null
}

/** The broadcast, inserted by this transaction, carries an A/B test (experiments/): fan-out reads the test for it. */
export async function markHasExperiment(q: Queryable, id: string): Promise<void> {
  await q.query('UPDATE broadcasts SET has_experiment = true WHERE id = $1', [id])
}
