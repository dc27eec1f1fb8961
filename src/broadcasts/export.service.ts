// GET /v1/broadcasts/export (issue 25): the project's broadcasts with their
// counts and funnel, as CSV for a spreadsheet (or NDJSON), streamed a page at
// a time. Text cells (titles, bodies, URLs come from API callers) go through
// platform/csv.ts, which neutralises what a spreadsheet would run as a formula.
import type { Queryable } from '../platform/db/database.ts'
import { csvRecord } from '../platform/csv.ts'
import { exportBroadcastsPage, hasShownColumn, type BroadcastExportFilter, type ExportBroadcastRow } from './export.store.ts'

/** Broadcasts per query: rows are small (no personalization, no actions), a few hundred KB a page. */
export const BROADCAST_EXPORT_PAGE_SIZE = 1000

export const BROADCAST_EXPORT_COLUMNS = [
  'id', 'created_at', 'scheduled_at', 'started_at', 'finished_at', 'status', 'source', 'title', 'body', 'url', 'target',
  'audience', 'sent', 'delivered', 'shown', 'failed', 'clicked', 'dismissed', 'click_rate',
] as const

type Line = Record<(typeof BROADCAST_EXPORT_COLUMNS)[number], string | number | null>

const iso = (date: Date | null) => (date ? date.toISOString() : null)

/** One broadcast's line, counts as GET /v1/broadcasts/:id reports them. */
export function exportLine(row: ExportBroadcastRow): Line {
  // As the view: delivered + failed + retrying never exceed the audience.
  const audience = Math.max(row.audience, row.delivered + row.failed + row.retrying)
  // Handed to a push service: delivered, failed after being sent (not the
  // failures that never left Herald: a personalization skip, a cap), and
  // waiting for a retry, which only a sending broadcast does (as the view's
  // retrying, and the funnel's sent of GET /v1/broadcasts/:id).
  const retrying = row.status === 'sending' ? row.retrying : 0
  const sent = row.delivered + row.failed - row.failed_skipped - row.failed_capped + retrying
  return {
    id: row.id,
    created_at: iso(row.created_at),
    scheduled_at: iso(row.scheduled_at),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    status: row.status,
    source: row.source,
    title: row.title,
    body: row.body,
    url: row.url,
    target: JSON.stringify(row.target),
    audience,
    sent,
    delivered: row.delivered,
    shown: typeof row.shown === 'number' ? row.shown : null,
    failed: row.failed,
    clicked: row.clicked,
    dismissed: row.dismissed,
    click_rate: row.delivered > 0 ? Math.round((row.clicked / row.delivered) * 10000) / 10000 : null,
  }
}

/** The export, a page at a time; the caller streams it out. */
export async function* exportBroadcasts(db: Queryable, projectId: string, filter: BroadcastExportFilter, format: 'csv' | 'ndjson'): AsyncGenerator<string> {
  const withShown = await hasShownColumn(db)
  if (format === 'csv') yield csvRecord(BROADCAST_EXPORT_COLUMNS)
  let before: string | null = null
  for (;;) {
    const rows = await exportBroadcastsPage(db, projectId, filter, before, BROADCAST_EXPORT_PAGE_SIZE, withShown)
    if (rows.length === 0) return
    let chunk = ''
    for (const row of rows) {
      const line = exportLine(row)
      chunk += format === 'csv' ? csvRecord(BROADCAST_EXPORT_COLUMNS.map((column) => line[column])) : `${JSON.stringify(line)}\n`
    }
    yield chunk
    if (rows.length < BROADCAST_EXPORT_PAGE_SIZE) return
    before = rows[rows.length - 1]!.id
  }
}
