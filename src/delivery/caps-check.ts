// Frequency caps in the fan-out (docs/frequency-caps.md): a batch's
// recipients are checked and counted (frequency-caps/push-counts.store.ts)
// just before it sends, in one transaction per batch, and only when the
// project has caps: a broadcast of a project without any costs one column
// more of a row the batch reads anyway (checkBeforeSend), nothing else.
//
// Counted at planning, given back on failure: a push counts from the moment
// its batch is about to send (so two batches on two workers cannot both take
// a subscriber's last push), and is given back when it ends failed (gone,
// rejected, unreachable after its retries), since the subscriber never saw it.
import type { Recipient } from '../broadcasts/audience.store.ts'
import type { SendingBroadcast } from '../broadcasts/broadcast-state.ts'
import { capChecks, type FrequencyCapRule } from '../frequency-caps/caps.schemas.ts'
import { reservePushes } from '../frequency-caps/push-counts.store.ts'
import type { Database } from '../platform/db/database.ts'
import type { Failed } from './batch-outcomes.ts'

/** Deferred pushes due within the same second go in one job. */
const DEFER_GRANULARITY_MS = 1000

export interface CapsOutcome {
  /** Who to push to now. */
  send: Recipient[]
  /** Skipped for a cap (on_capped skip): failed with reason capped. */
  capped: Failed[]
  /** Deferred (on_capped defer): one job per due time. */
  deferred: Array<{ ids: string[]; runAt: Date }>
  /** Whether the pushes sent were counted (the project has caps): failures among them are given back. */
  counted: boolean
}

/** Checks and counts the recipients against the project's caps; with none, passes them through untouched. */
export async function applyFrequencyCaps(
  db: Database,
  broadcast: Pick<SendingBroadcast, 'project_id' | 'send_class' | 'on_capped'>,
  caps: FrequencyCapRule[] | null,
  recipients: Recipient[],
): Promise<CapsOutcome> {
  const rules = capChecks(caps)
  if (!rules || recipients.length === 0) return { send: recipients, capped: [], deferred: [], counted: false }
  const reservation = await reservePushes(db, broadcast.project_id, recipients.map((r) => r.id), rules, broadcast.send_class === 'marketing')
  if (reservation.capped.length === 0) return { send: recipients, capped: [], deferred: [], counted: true }
  const due = new Map(reservation.capped.map((c) => [c.id, c.due]))
  const send: Recipient[] = []
  const over: Recipient[] = []
  for (const r of recipients) (due.has(r.id) ? over : send).push(r)
  if (broadcast.on_capped === 'defer') {
    const byDue = new Map<number, string[]>()
    for (const r of over) {
      const at = Math.ceil(due.get(r.id)! / DEFER_GRANULARITY_MS) * DEFER_GRANULARITY_MS
      const ids = byDue.get(at) ?? []
      ids.push(r.id)
      byDue.set(at, ids)
    }
    const deferred = [...byDue].map(([at, ids]) => ({ ids, runAt: new Date(at) }))
    return { send, capped: [], deferred, counted: true }
  }
  const capped = over.map((r): Failed => ({ subscriberId: r.id, externalId: r.external_id, pushService: r.push_service, reason: 'capped', status: null }))
  return { send, capped, deferred: [], counted: true }
}
