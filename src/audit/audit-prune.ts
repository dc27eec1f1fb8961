// Deletes audit entries older than HERALD_AUDIT_RETENTION_DAYS (migration 0015
// queues the first run). One job, re-queued by itself in the transaction that
// completes it, so there is always exactly one, whichever worker runs it; a
// run deletes a bounded batch, and runs again at once while a full batch came
// back, so a first prune of a large backlog is many short statements.
import type { Database } from '../platform/db/database.ts'
import { enqueue } from '../platform/jobs/queue.ts'
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
/** The job must never be parked: nothing else would queue another. */
const NEVER_GIVE_UP = 2_147_483_647

export async function pruneAuditLog(
  db: Database,
  retentionDays: number,
  job: Pick<Job<'prune_audit_log'>, 'completeIn'>,
  batch = AUDIT_PRUNE_BATCH,
): Promise<number> {
  const pruned = await pruneAuditEntries(db, new Date(Date.now() - retentionDays * 86_400_000), batch)
  const next = new Date(Date.now() + (pruned === batch ? 0 : AUDIT_PRUNE_INTERVAL_MS))
  await db.transaction(async (tx) => {
    await job.completeIn(tx)
    await enqueue(tx, 'prune_audit_log', {}, { runAt: next, maxAttempts: NEVER_GIVE_UP })
  })
  return pruned
}

export function auditJobHandlers(db: Database, retentionDays: number): JobHandlers {
  return { prune_audit_log: async (job) => void (await pruneAuditLog(db, retentionDays, job)) }
}
