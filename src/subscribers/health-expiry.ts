// Expires failing subscribers by the project's rules (issue 23, migration
// 0025 queues the first run): a periodic job (platform/jobs/periodic.ts), so
// there is always exactly one, whichever worker runs it. The failures rule
// also applies in fan-out's outcome write, at the failure that reaches it;
// this sweep applies the days rule, which no push triggers, and the failures
// rule to subscribers that had failed that often before it was turned on.
import type { Database } from '../platform/db/database.ts'
import { runPeriodic } from '../platform/jobs/periodic.ts'
import type { Job, JobHandlers } from '../platform/jobs/worker.ts'
import { expireFailingSubscribers } from './health.store.ts'

declare module '../platform/jobs/queue.ts' {
  interface JobPayloads {
    /** Expires failing subscribers past their project's rules, then queues its next run. */
    expire_failing_subscribers: Record<string, never>
  }
}

/** Between two sweeps: the rule counts days, so an hour late is nothing. */
export const HEALTH_EXPIRY_INTERVAL_MS = 60 * 60 * 1000
/** Subscribers expired per run: a short statement; a run that expires this many runs again at once. */
export const HEALTH_EXPIRY_BATCH = 5000

export function expireFailing(db: Database, job: Pick<Job<'expire_failing_subscribers'>, 'completeIn'>, batch = HEALTH_EXPIRY_BATCH): Promise<number> {
  return runPeriodic(db, 'expire_failing_subscribers', job, { run: (n) => expireFailingSubscribers(db, n), batch, intervalMs: HEALTH_EXPIRY_INTERVAL_MS })
}

export function healthJobHandlers(db: Database): JobHandlers {
  return { expire_failing_subscribers: async (job) => void (await expireFailing(db, job)) }
}
