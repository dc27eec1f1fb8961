// The two info lines of a broadcast's fan-out, what an operator reads to see
// how a send went and why one is slow (with push-metrics.ts's warnings about
// push services in between): when it starts sending, and when it is done.
// Never the notification's content, nor any endpoint.
import type { Logger } from 'pino'
import type { Queryable } from '../platform/db/database.ts'
import type { SendingBroadcast } from '../broadcasts/broadcast-state.ts'
import { findBroadcast } from '../broadcasts/broadcasts.store.ts'

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

export function logSendingStarted(log: Logger, broadcast: Pick<SendingBroadcast, 'id' | 'project_id' | 'target'>, audience: number): void {
  log.info(
    { broadcast_id: broadcast.id, project_id: broadcast.project_id, target: broadcast.target.type, audience },
    `broadcast ${broadcast.id} sending to ${plural(audience, 'subscriber')}`,
  )
}

/** Reads the finished broadcast's counts and times (one query per broadcast) and logs them. */
export async function logSendingFinished(q: Queryable, log: Logger, broadcast: Pick<SendingBroadcast, 'id' | 'project_id'>): Promise<void> {
  if (!log.isLevelEnabled('info')) return
  // The broadcast is recorded already: a database gone meanwhile costs this line, nothing else.
  const row = await findBroadcast(q, broadcast.project_id, broadcast.id).catch(() => null)
  if (!row) return
  const ms = row.started_at && row.finished_at ? Math.max(0, row.finished_at.getTime() - row.started_at.getTime()) : 0
  const pushes = row.delivered + row.failed
  const perSecond = ms > 0 ? Math.round((pushes * 1000) / ms) : pushes
  log.info(
    {
      broadcast_id: row.id,
      project_id: row.project_id,
      status: row.status,
      audience: row.audience,
      delivered: row.delivered,
      failed: row.failed,
      duration_ms: ms,
      pushes_per_second: perSecond,
    },
    `broadcast ${row.id} ${row.status}: ${row.delivered} delivered, ${row.failed} failed in ${(ms / 1000).toFixed(1)} s (${perSecond} pushes/s)`,
  )
}
