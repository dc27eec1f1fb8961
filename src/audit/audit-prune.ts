// Deletes audit entries older than HERALD_AUDIT_RETENTION_DAYS (migration 0015
// queues the first run): a periodic job (platform/jobs/periodic.ts) that
// deletes a bounded batch a run and runs again at once while a full batch
// came back, so a first prune of a large backlog is many short statements.
import type { Database } from '../platform/db/database.ts'
import { runPeriodic } from '../platform/jobs/periodic.ts'
import type { Job, JobHandlers } from '../platform/jobs/worker.ts'
import { pruneAuditEntries } from './audit.store.ts'

declare module '../platform/jobs/queue.ts' {
  interface JobPayloads {
    /** Deletes audit entries past the retention, then queues its next run. */
    prune_audit_log: Record<string, never>
  }
}

/** Between two prunes: the retention is counted in days, so an hour late is nothing. */
export const AUDIT_PRUNE_INTERVAL_MS = 60 * 60 * 1000
/** Entries deleted per run: a short statement; a run that deletes this many runs again at once. */
export const AUDIT_PRUNE_BATCH = 5000

export async function pruneAuditLog(
  db: Database,
  retentionDays: number,
  job: Pick<Job<'prune_audit_log'>, 'completeIn'>,
  batch = AUDIT_PRUNE_BATCH,
): Promise<number> {
  const before = new Date(Date.now() - retentionDays * 86_400_000)
  return runPeriodic(db, 'prune_audit_log', job, { run: (n) => pruneAuditEntries(db, before, n), batch, intervalMs: AUDIT_PRUNE_INTERVAL_MS })
}

export function auditJobHandlers(db: Database, retentionDays: number): JobHandlers {
  return { prune_audit_log: async (job) => void (await pruneAuditLog(db, retentionDays, job)) }
}
