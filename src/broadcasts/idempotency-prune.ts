// Deletes idempotency keys whose 24 hours are over (migration 0009 queues the
// first run): a periodic job (platform/jobs/periodic.ts), so there is always
// exactly one, whichever worker runs it. A key past its
// time is already ignored by the send (idempotency-keys.store.ts reserveKey
// takes it over), so pruning is housekeeping and may run late.
import type { Database } from '../platform/db/database.ts'
import { runPeriodic } from '../platform/jobs/periodic.ts'
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

export function pruneIdempotencyKeys(db: Database, job: Pick<Job<'prune_idempotency_keys'>, 'completeIn'>): Promise<number> {
  return runPeriodic(db, 'prune_idempotency_keys', job, { run: (n) => pruneExpiredKeys(db, n), batch: PRUNE_BATCH, intervalMs: PRUNE_INTERVAL_MS })
}

export function idempotencyJobHandlers(db: Database): JobHandlers {
  return { prune_idempotency_keys: async (job) => void (await pruneIdempotencyKeys(db, job)) }
}
