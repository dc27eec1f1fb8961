// A periodic housekeeping job that keeps itself alive: it runs one bounded
// step, then, in the transaction that completes it, queues its own next run
// (at once after a full batch, so a large backlog is many short statements;
// otherwise after its interval). So there is always exactly one, whichever
// worker runs it; its migration queues the first.
import type { Database } from '../db/database.ts'
import { enqueue, type JobKind, type JobPayloads } from './queue.ts'
import type { Job } from './worker.ts'

/** The job must never be parked: nothing else would queue another. */
const NEVER_GIVE_UP = 2_147_483_647

export interface PeriodicStep {
  /** Deletes (or otherwise handles) at most `batch` rows; returns how many. */
  run: (batch: number) => Promise<number>
  batch: number
  intervalMs: number
}

/** The job kinds that carry no payload: the periodic ones. */
export type PeriodicKind = { [K in JobKind]: JobPayloads[K] extends Record<string, never> ? K : never }[JobKind]

/** Runs the step, then completes the job and queues its next run in one transaction; returns the step's count. */
export async function runPeriodic<K extends PeriodicKind>(db: Database, kind: K, job: Pick<Job<K>, 'completeIn'>, step: PeriodicStep): Promise<number> {
  const done = await step.run(step.batch)
  const next = new Date(Date.now() + (done === step.batch ? 0 : step.intervalMs))
  await db.transaction(async (tx) => {
    await job.completeIn(tx)
    await enqueue(tx, kind, {} as JobPayloads[K], { runAt: next, maxAttempts: NEVER_GIVE_UP })
  })
  return done
}
