// SQL for push_counts (migration 0030): per subscriber, the times of the
// pushes counted against the project's frequency caps within the longest
// window. The one writer of the table.
//
// Exact under concurrency: a batch checks and counts its subscribers in one
// transaction holding their rows locked (FOR UPDATE), taken in subscriber id
// order by every writer (the insert of missing rows, the lock, the give-back,
// the prune's SKIP LOCKED), so two batches on two workers sharing subscribers
// queue on each row instead of both reading "1 left", and never deadlock.
// The transaction that reserves holds nothing else; the give-back runs in a
// batch's outcome transaction after its subscriber rows and before the rows
// it inserts (delivery/fanout.ts has the whole lock order).
import type { Database, Queryable } from '../platform/db/database.ts'
import { LONGEST_WINDOW_SECONDS, type CapCheck } from './caps.schemas.ts'

export interface Reservation {
  /** The subscribers counted now: push to them. */
  allowed: string[]
  /** The subscribers over a cap (only when enforced), with when the earliest window allows one more push (epoch ms, the database's clock). */
  capped: Array<{ id: string; due: number }>
}

/**
 * For each subscriber locked here: when its pushes allow one more under
 * every rule, or null when they do now. Within a rule's window, newest first,
 * the max-th push is the one that must leave it: due = its time + the window.
 */
const LOCK_AND_CHECK = `
  SELECT c.subscriber_id,
         (SELECT (extract(epoch FROM max(w.due)) * 1000)::float8
            FROM unnest($3::int[], $4::int[]) AS r(max, secs)
           CROSS JOIN LATERAL (
             SELECT t + r.secs * interval '1 second' AS due
               FROM unnest(c.sent_at) AS t
              WHERE t > now() - r.secs * interval '1 second'
              ORDER BY t DESC OFFSET r.max - 1 LIMIT 1) AS w) AS due
    FROM push_counts c
   WHERE c.subscriber_id = ANY ($1::text[]) AND c.project_id = $2
   ORDER BY c.subscriber_id
     FOR UPDATE`

/**
 * Checks `ids` (a batch's subscribers) against the rules and counts a push
 * for each one allowed, in one transaction: three statements whatever the
 * batch's size. `enforce` false (a transactional send) counts every one.
 */
export async function reservePushes(db: Database, projectId: string, ids: string[], rules: CapCheck[], enforce: boolean): Promise<Reservation> {
  if (ids.length === 0) return { allowed: [], capped: [] }
  const sorted = [...ids].sort()
  return db.transaction(async (tx) => {
    // Rows for subscribers never counted, in id order (an insert of a key another batch inserts waits for it).
    await tx.query(
      `INSERT INTO push_counts (subscriber_id, project_id)
       SELECT id, $2 FROM unnest($1::text[]) AS s(id) ORDER BY id
       ON CONFLICT (subscriber_id) DO NOTHING`,
      [sorted, projectId],
    )
    const checked = await tx.query<{ subscriber_id: string; due: number | null }>(LOCK_AND_CHECK, [
      sorted,
      projectId,
      enforce ? rules.map((r) => r.max) : [],
      enforce ? rules.map((r) => r.seconds) : [],
    ])
    const allowed: string[] = []
    const capped: Reservation['capped'] = []
    for (const row of checked.rows) {
      if (row.due === null) allowed.push(row.subscriber_id)
      else capped.push({ id: row.subscriber_id, due: Math.ceil(row.due) })
    }
    if (allowed.length > 0) {
      await tx.query(
        `UPDATE push_counts c
            SET sent_at = ARRAY(SELECT t FROM unnest(c.sent_at) AS t WHERE t > now() - $2 * interval '1 second' ORDER BY t) || now(),
                last_at = now()
          WHERE c.subscriber_id = ANY ($1::text[])`,
        [allowed, LONGEST_WINDOW_SECONDS],
      )
    }
    return { allowed, capped }
  })
}

/**
 * Gives back one counted push per subscriber (the newest: the one counted
 * last, or a later one, which frees the window no earlier than the real one
 * would): pushes that were counted but never reached the subscriber.
 */
export async function giveBackPushes(q: Queryable, ids: string[]): Promise<void> {
  if (ids.length === 0) return
  await q.query(
    `UPDATE push_counts c SET sent_at = c.sent_at[1:cardinality(c.sent_at) - 1]
      FROM (SELECT subscriber_id FROM push_counts WHERE subscriber_id = ANY ($1::text[]) ORDER BY subscriber_id FOR UPDATE) AS l
     WHERE c.subscriber_id = l.subscriber_id AND cardinality(c.sent_at) > 0`,
    [[...ids].sort()],
  )
}

/** Deletes at most `batch` rows whose newest push left the longest window (nothing in them counts any more); returns how many. */
export async function pruneOldCounts(q: Queryable, batch: number): Promise<number> {
  const result = await q.query(
    `DELETE FROM push_counts WHERE subscriber_id IN (
       SELECT subscriber_id FROM push_counts WHERE last_at < now() - $1 * interval '1 second'
        ORDER BY subscriber_id LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    [LONGEST_WINDOW_SECONDS, batch],
  )
  return result.rowCount
}
