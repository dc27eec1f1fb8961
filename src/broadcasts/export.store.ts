// SQL of the broadcast export (issue 25): one page at a time, newest first,
// keyset on id (ids are time-ordered), so an export of years of broadcasts
// holds one page in memory and no long transaction.
import type { Queryable } from '../platform/db/database.ts'
import type { BroadcastStatus } from './broadcasts.store.ts'
import type { NotificationAction } from './broadcasts.schemas.ts'
import { FUNNEL_COLUMNS, type FunnelColumns } from './funnel.ts'

export interface ExportBroadcastRow extends FunnelColumns {
  id: string
  status: BroadcastStatus
  source: 'api' | 'dashboard'
  target: unknown
  title: string
  body: string
  url: string
  audience: number
  delivered: number
  failed: number
  retrying: number
  failed_skipped: number
  failed_capped: number
  clicked: number
  dismissed: number
  actions: NotificationAction[]
  personalization: unknown
  apple_delivered: number
  clicked_by_action: Record<string, number>
  has_experiment: boolean
  scheduled_at: Date | null
  started_at: Date | null
  finished_at: Date | null
  created_at: Date
}

export interface BroadcastExportFilter {
  status?: BroadcastStatus
  source?: 'api' | 'dashboard'
  from?: Date
  to?: Date
}

export async function exportBroadcastsPage(
  q: Queryable, projectId: string, filter: BroadcastExportFilter, beforeId: string | null, limit: number,
): Promise<ExportBroadcastRow[]> {
  const params: unknown[] = [projectId]
  const where = ['project_id = $1']
  const add = (condition: string, value: unknown) => {
    params.push(value)
    where.push(condition.replace('?', `$${params.length}`))
  }
  if (filter.status) add('status = ?', filter.status)
  if (filter.source) add('source = ?', filter.source)
  if (filter.from) add('created_at >= ?', filter.from)
  if (filter.to) add('created_at < ?', filter.to)
  if (beforeId !== null) add('id < ?', beforeId)
  params.push(limit)
  const result = await q.query<ExportBroadcastRow>(
    `SELECT id, status, source, target, title, body, url, audience, delivered, failed, retrying, failed_skipped, failed_capped,
            clicked, dismissed, actions, personalization, apple_delivered, clicked_by_action, has_experiment, ${FUNNEL_COLUMNS},
            scheduled_at, started_at, finished_at, created_at
       FROM broadcasts b
      WHERE ${where.join(' AND ')}
      ORDER BY id DESC
      LIMIT $${params.length}`,
    params,
  )
  return result.rows
}
