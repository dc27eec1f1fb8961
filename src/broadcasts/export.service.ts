// GET /v1/broadcasts/export (issue 25): the project's broadcasts with their
// counts and funnel, as CSV for a spreadsheet (or NDJSON), streamed a page at
// a time. Text cells (titles, bodies, URLs come from API callers) go through
// platform/csv.ts, which neutralises what a spreadsheet would run as a formula.
import type { Queryable } from '../platform/db/database.ts'
import { csvRecord } from '../platform/csv.ts'
import { exportBroadcastsPage, type BroadcastExportFilter, type ExportBroadcastRow } from './export.store.ts'
import { toFunnel } from './funnel.ts'

/** Broadcasts per query: rows are small (no personalization, no actions), a few hundred KB a page. */
export const BROADCAST_EXPORT_PAGE_SIZE = 1000

export const BROADCAST_EXPORT_COLUMNS = [
  'id', 'created_at', 'scheduled_at', 'started_at', 'finished_at', 'status', 'source', 'title', 'body', 'url', 'target',
  'audience', 'sent', 'delivered', 'cannot_report_shown', 'shown', 'failed', 'clicked', 'dismissed',
  'click_rate', 'shown_rate', 'click_through_shown',
] as const

type Line = Record<(typeof BROADCAST_EXPORT_COLUMNS)[number], string | number | null>

const iso = (date: Date | null) => (date ? date.toISOString() : null)

/** One broadcast's line, counts as GET /v1/broadcasts/:id reports them. */
export function exportLine(row: ExportBroadcastRow): Line {
  // As the view: delivered + failed + retrying never exceed the audience,
  // and only a sending broadcast has pushes waiting for a retry; the funnel
  // is the one of GET /v1/broadcasts/:id (funnel.ts).
  const audience = Math.max(row.audience, row.delivered + row.failed + row.retrying)
  const funnel = toFunnel({ ...row, retrying: row.status === 'sending' ? row.retrying : 0 }, audience)
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
    sent: funnel.sent,
    delivered: row.delivered,
    cannot_report_shown: funnel.cannot_report_shown,
    shown: row.shown,
    failed: row.failed,
    clicked: row.clicked,
    dismissed: row.dismissed,
    click_rate: funnel.rates.click_through,
    shown_rate: funnel.rates.shown,
    click_through_shown: funnel.rates.click_through_shown,
  }
}

/** The export, a page at a time; the caller streams it out. */
export async function* exportBroadcasts(db: Queryable, projectId: string, filter: BroadcastExportFilter, format: 'csv' | 'ndjson'): AsyncGenerator<string> {
  if (format === 'csv') yield csvRecord(BROADCAST_EXPORT_COLUMNS)
  let before: string | null = null
  for (;;) {
    const rows = await exportBroadcastsPage(db, projectId, filter, before, BROADCAST_EXPORT_PAGE_SIZE)
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
