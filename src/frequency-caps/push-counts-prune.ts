// Deletes push counts no cap can read any more (migration 0030 queues the
// first run): a periodic job (platform/jobs/periodic.ts), so there is always
// exactly one, whichever worker runs it. A push older than the longest window
// is already ignored by the check, so pruning is housekeeping and may run late.
import type { Database } from '../platform/db/database.ts'
import { runPeriodic } from '../platform/jobs/periodic.ts'
import type { Job, JobHandlers } from '../platform/jobs/worker.ts'
import { pruneOldCounts } from './push-counts.store.ts'

declare module '../platform/jobs/queue.ts' {
  interface JobPayloads {
    /** Deletes push_counts rows whose newest push left the longest window, then queues its next run. */
    prune_push_counts: Record<string, never>
  }
}

/** Between two prunes: the rows it deletes have been useless for at least a day's fraction of 30 days. */
export const PUSH_COUNTS_PRUNE_INTERVAL_MS = 60 * 60 * 1000
/** Rows deleted per run: a short statement; a run that deletes this many runs again at once. */
export const PUSH_COUNTS_PRUNE_BATCH = 5000

export function prunePushCounts(db: Database, job: Pick<Job<'prune_push_counts'>, 'completeIn'>): Promise<number> {
  return runPeriodic(db, 'prune_push_counts', job, {
    run: (n) => pruneOldCounts(db, n),
    batch: PUSH_COUNTS_PRUNE_BATCH,
    intervalMs: PUSH_COUNTS_PRUNE_INTERVAL_MS,
  })
}

export function pushCountsJobHandlers(db: Database): JobHandlers {
  return { prune_push_counts: async (job) => void (await prunePushCounts(db, job)) }
}
