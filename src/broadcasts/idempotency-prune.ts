// Deletes idempotency keys whose 24 hours are over (migration 0009 queues the
// first run). One job, re-queued by itself in the transaction that completes
// it, so there is always exactly one, whichever worker runs it. A key past its
// time is already ignored by the send (idempotency-keys.store.ts reserveKey
// takes it over), so pruning is housekeeping and may run late.
import type { Database } from '../platform/db/database.ts'
import { enqueue } from '../platform/jobs/queue.ts'
import type { Job, JobHandlers } from '../platform/jobs/worker.ts'
import { pruneExpiredKeys } from './idempotency-keys.store.ts'

declare module '../platform/jobs/queue.ts' {
  interface JobPayloads {
    /** Deletes expired idempotency keys, then queues its next run. */
    prune_idempotency_keys: Record<string, never>
  }
}

/** Between two prunes: keys live 24 hours, so ten minutes past that is soon enough. */
export const PRUNE_INTERVAL_MS = 10 * 60 * 1000
/** Keys deleted per run: a short statement; a run that deletes this many runs again at once. */
export const PRUNE_BATCH = 5000
/** The job must never be parked: nothing else would queue another. */
const NEVER_GIVE_UP = 2_147_483_647

export async function pruneIdempotencyKeys(db: Database, job: Pick<Job<'prune_idempotency_keys'>, 'completeIn'>): Promise<number> {
  const pruned = await pruneExpiredKeys(db, PRUNE_BATCH)
  const next = new Date(Date.now() + (pruned === PRUNE_BATCH ? 0 : PRUNE_INTERVAL_MS))
  await db.transaction(async (tx) => {
    await job.completeIn(tx)
    await enqueue(tx, 'prune_idempotency_keys', {}, { runAt: next, maxAttempts: NEVER_GIVE_UP })
  })
  return pruned
}

export function idempotencyJobHandlers(db: Database): JobHandlers {
  return { prune_idempotency_keys: async (job) => void (await pruneIdempotencyKeys(db, job)) }
}
