// SQL for subscription health (issue 23, migration 0025): what fan-out's
// outcomes and the click beacons record on each subscriber, the expiry sweep,
// and the health of a project's audience. docs/subscription-health.md says
// what each figure means.
import type { Queryable } from '../platform/db/database.ts'
import type { SubscriberHealth } from './subscribers.schemas.ts'

/**
 * An active subscriber with no click and no subscribe call from its browser
 * (last_seen_at) for this long, whose pushes do not fail, is dormant. Thirty
 * days: the window in which most push senders judge a subscriber engaged, and
 * about half of ntfy's 60-day expiry of unused subscriptions.
 */
export const DORMANT_AFTER_DAYS = 30

/**
 * The SQL test for each health of a subscriber (alias s, its subscriber_health
 * row joined as h, possibly absent); `cutoff` is the parameter holding the
 * dormancy cutoff (failing does not use it).
 */
export function healthCondition(health: SubscriberHealth, cutoff: string): string {
  switch (health) {
    case 'failing':
      return `s.status = 'active' AND h.consecutive_failures > 0`
    case 'dormant':
      // GREATEST skips a null last_clicked_at (never clicked, or no row); last_seen_at is never null.
      return `s.status = 'active' AND COALESCE(h.consecutive_failures, 0) = 0 AND GREATEST(h.last_clicked_at, s.last_seen_at) < ${cutoff}`
    case 'active':
      return `s.status = 'active' AND COALESCE(h.consecutive_failures, 0) = 0 AND GREATEST(h.last_clicked_at, s.last_seen_at) >= ${cutoff}`
  }
}

/** The dormancy cutoff for a given moment. */
export function dormantCutoff(now = Date.now()): Date {
  return new Date(now - DORMANT_AFTER_DAYS * 86_400_000)
}

/** One push's outcome as the health columns see it: accepted, or failed (gone: the push service said 404/410). */
export interface PushHealthOutcome {
  subscriberId: string
  delivered: boolean
  gone: boolean
}

/** Unique ids, sorted: the order other transactions lock subscribers in (and ON CONFLICT may touch a row once a statement). */
function sortedUnique<T>(items: T[], id: (item: T) => string): T[] {
  const byId = new Map(items.map((item) => [id(item), item]))
  return [...byId.keys()].sort().map((key) => byId.get(key)!)
}

/**
 * Records a batch's outcomes, folded into the batch's transaction
 * (delivery/batch-outcomes.ts), in one statement: an accepted push sets
 * last_delivered_at and resets consecutive_failures; a failed one counts up
 * and expires an active subscriber when its push service said it is gone
 * (404/410) or when the count reaches the project's expire_after_failures.
 * Each subscriber is found with a key-share lock (FOR KEY SHARE), held until
 * the batch commits, so an erasure waits for the batch; one erased before the
 * batch is simply not found, and one whose erasure is under way when this
 * statement reaches it is skipped once the erasure commits, rather than
 * failing the health row's foreign key check, which would fail the batch's
 * transaction and send its slice again (health.erasure.test.ts). The lock
 * costs ~1 µs per push on the embedded database's update path
 * (bench/health-write.ts), nothing seen on PostgreSQL.
 * Each outcome finds its subscriber by primary key (the LATERAL subquery;
 * LIMIT 1, which the key allows anyway, keeps the planner from folding it back
 * into a join): a plain join let the planner of a database without statistics (the embedded
 * one has no autovacuum) hash every subscriber of the project for each batch,
 * ~1 s a batch at 200,000 (docs/performance.md, issue 26).
 */
export async function recordPushHealth(q: Queryable, projectId: string, outcomes: PushHealthOutcome[]): Promise<void> {
  if (outcomes.length === 0) return
  const sorted = sortedUnique(outcomes, (o) => o.subscriberId)
  await q.query(
    `WITH o AS (
       SELECT * FROM unnest($1::text[], $2::boolean[], $3::boolean[]) AS o(id, delivered, gone)
     ), counted AS (
       INSERT INTO subscriber_health AS h (subscriber_id, project_id, last_delivered_at, consecutive_failures)
       SELECT s.id, s.project_id, CASE WHEN o.delivered THEN now() END, CASE WHEN o.delivered THEN 0 ELSE 1 END
         FROM o CROSS JOIN LATERAL (SELECT id, project_id FROM subscribers WHERE id = o.id AND project_id = $4 LIMIT 1 FOR KEY SHARE) s
        ORDER BY s.id
       ON CONFLICT (subscriber_id) DO UPDATE SET
         last_delivered_at = COALESCE(EXCLUDED.last_delivered_at, h.last_delivered_at),
         consecutive_failures = CASE WHEN EXCLUDED.consecutive_failures = 0 THEN 0 ELSE h.consecutive_failures + 1 END
       RETURNING h.subscriber_id, h.consecutive_failures
     )
     UPDATE subscribers SET status = 'expired'
      WHERE id = ANY (ARRAY(
              SELECT c.subscriber_id FROM counted c JOIN o ON o.id = c.subscriber_id
               WHERE NOT o.delivered
                 AND (o.gone OR c.consecutive_failures >= COALESCE((SELECT expire_after_failures FROM projects WHERE id = $4), 2147483647))))
        AND status = 'active'`,
    [sorted.map((o) => o.subscriberId), sorted.map((o) => o.delivered), sorted.map((o) => o.gone), projectId],
  )
}

/**
 * Sets last_clicked_at of the subscribers that clicked, each only within the
 * project its beacon named: another project's subscriber id changes nothing.
 * The subscriber rows are key-share locked, so one erased meanwhile is skipped
 * rather than failing the beacons' transaction. Found by primary key, one
 * each (LATERAL, as recordPushHealth: no hash of a whole project's subscribers
 * per batch of beacons on a database without statistics).
 */
export async function recordClicks(q: Queryable, clicks: Array<{ projectId: string; subscriberId: string }>): Promise<void> {
  if (clicks.length === 0) return
  const sorted = sortedUnique(clicks, (c) => c.subscriberId)
  await q.query(
    `INSERT INTO subscriber_health AS h (subscriber_id, project_id, last_clicked_at)
     SELECT s.id, s.project_id, now()
       FROM unnest($1::text[], $2::text[]) AS c(project_id, id)
       CROSS JOIN LATERAL (SELECT id, project_id FROM subscribers WHERE id = c.id AND project_id = c.project_id LIMIT 1 FOR KEY SHARE) s
      ORDER BY s.id
     ON CONFLICT (subscriber_id) DO UPDATE SET last_clicked_at = EXCLUDED.last_clicked_at`,
    [sorted.map((c) => c.projectId), sorted.map((c) => c.subscriberId)],
  )
}

/**
 * Expires at most `batch` active subscribers, over every project with a rule
 * on, that are failing (consecutive_failures > 0, the partial index of
 * migration 0025 on subscriber_health) and either reached the project's expire_after_failures (a
 * rule turned on after they had failed that often) or accepted nothing
 * (since last_delivered_at, or since they subscribed) for
 * expire_after_days_without_delivery days. Returns how many.
 */
export async function expireFailingSubscribers(q: Queryable, batch: number): Promise<number> {
  const result = await q.query(
    `UPDATE subscribers SET status = 'expired'
      WHERE id IN (
        SELECT s.id FROM projects p
          JOIN subscriber_health h ON h.project_id = p.id AND h.consecutive_failures > 0
          JOIN subscribers s ON s.id = h.subscriber_id AND s.status = 'active'
         WHERE (p.expire_after_failures IS NOT NULL AND h.consecutive_failures >= p.expire_after_failures)
            OR (p.expire_after_days_without_delivery IS NOT NULL
                AND COALESCE(h.last_delivered_at, s.created_at) < now() - p.expire_after_days_without_delivery * interval '1 day')
         ORDER BY s.id
         LIMIT $1
         FOR NO KEY UPDATE OF s SKIP LOCKED)
        AND status = 'active'`,
    [batch],
  )
  return result.rowCount
}

export interface HealthCounts {
  active: number
  dormant: number
  failing: number
}

/** The project's active subscribers by health: one pass over them (the dashboard's overview reads it). */
export async function countByHealth(q: Queryable, projectId: string, now = Date.now()): Promise<HealthCounts> {
  const cutoff = dormantCutoff(now)
  const result = await q.query<{ active: string | number; dormant: string | number; failing: string | number }>(
    `SELECT count(*) FILTER (WHERE ${healthCondition('active', '$2::timestamptz')}) AS active,
            count(*) FILTER (WHERE ${healthCondition('dormant', '$2::timestamptz')}) AS dormant,
            count(*) FILTER (WHERE ${healthCondition('failing', '')}) AS failing
       FROM subscribers s LEFT JOIN subscriber_health h ON h.subscriber_id = s.id
      WHERE s.project_id = $1 AND s.status = 'active'`,
    [projectId, cutoff],
  )
  const row = result.rows[0]
  return { active: Number(row.active), dormant: Number(row.dormant), failing: Number(row.failing) }
}

/** The health of one subscriber row, null unless it is active. */
export function healthOf(row: { status: string; consecutive_failures: number; last_clicked_at: Date | null; last_seen_at: Date }, now = Date.now()): SubscriberHealth | null {
  if (row.status !== 'active') return null
  if (row.consecutive_failures > 0) return 'failing'
  const lastSign = Math.max(row.last_clicked_at?.getTime() ?? 0, row.last_seen_at.getTime())
  return lastSign < dormantCutoff(now).getTime() ? 'dormant' : 'active'
}
