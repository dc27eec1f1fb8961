// GET /v1/subscribers/export and the operator's twin (issue 23): every
// subscription of the project, streamed as NDJSON or CSV, in the form
// POST /v1/subscribers/import reads back. The operator's form also carries each
// subscription's keys and the public key of the VAPID pair it was made with,
// and, as its first NDJSON line, the project's VAPID pairs (the current one,
// and those from before a rotation that subscriptions still use): with both,
// another sender can push to every subscriber without one of them subscribing
// again.
import type { Database } from '../platform/db/database.ts'
import { maskEndpoint } from '../access/masking.ts'
import { csvRecord, verbatim } from '../platform/csv.ts'
import { exportPage, previousVapidPairs, type ExportRow } from './export.store.ts'
import type { SubscriberConditions } from './subscribers.store.ts'

/** Rows per query: a page of a few MB at most, a few hundred queries for a million subscribers. */
export const EXPORT_PAGE_SIZE = 5000

export type ExportFormat = 'ndjson' | 'csv'

export interface ExportOptions {
  format: ExportFormat
  /** The operator's export: each subscription's keys, and the VAPID pair first (NDJSON). */
  vapid?: { vapid_public: string; vapid_private: string }
  /**
   * False for an actor who may not see push endpoints whole (an editor, a
   * viewer): each endpoint is masked as in the subscriber list, since an
   * endpoint is enough to unsubscribe its browser (issue 22). Default true.
   */
  endpoints?: boolean
  /** Only the subscribers these filters of GET /v1/subscribers select (issue 25); none: every one. */
  filter?: SubscriberConditions
}

const CSV_COLUMNS = ['endpoint', 'p256dh', 'auth', 'external_id', 'status', 'groups', 'tags', 'source', 'created_at', 'last_seen_at']

function lineObject(row: ExportRow, withKeys: boolean, endpoint: string): Record<string, unknown> {
  return {
    endpoint,
    ...(withKeys ? { keys: { p256dh: row.p256dh, auth: row.auth }, vapid_public: row.vapid_public } : {}),
    external_id: row.external_id,
    status: row.status,
    groups: row.groups,
    tags: row.tags,
    source: row.source,
    created_at: row.created_at.getTime(),
    last_seen_at: row.last_seen_at.getTime(),
  }
}

function csvRow(row: ExportRow, withKeys: boolean, endpoint: string): string {
  return csvRecord([
    // Keys, the endpoint and external ids as they are: no alphabet of theirs makes a harmful formula, and a
    // key starting with "-" must reach another importer intact. Groups and tags are JSON ([…], {…}): never a formula.
    verbatim(endpoint),
    ...(withKeys ? [verbatim(row.p256dh), verbatim(row.auth)] : []),
    verbatim(row.external_id ?? ''),
    row.status,
    row.groups.length > 0 ? JSON.stringify(row.groups) : '',
    JSON.stringify(row.tags),
    row.source,
    row.created_at.getTime(),
    row.last_seen_at.getTime(),
    ...(withKeys ? [verbatim(row.vapid_public ?? '')] : []),
  ])
}

/** The export, a line at a time; the caller streams it out. */
export async function* exportSubscribers(db: Database, projectId: string, options: ExportOptions): AsyncGenerator<string> {
  const withKeys = options.vapid !== undefined
  const endpointOf = options.endpoints === false ? (row: ExportRow) => maskEndpoint(row.endpoint) : (row: ExportRow) => row.endpoint
  if (options.format === 'csv') yield csvRecord(withKeys ? [...CSV_COLUMNS, 'vapid_public'] : CSV_COLUMNS.filter((c) => c !== 'p256dh' && c !== 'auth'))
  else if (options.vapid) {
    const { vapid_public, vapid_private } = options.vapid
    // After a rotation, the pairs subscriptions made before it still use (each line names its own by vapid_public).
    const previous = await previousVapidPairs(db, projectId, vapid_public)
    yield `${JSON.stringify({ herald_export: 1, project: projectId, vapid_public, vapid_private, ...(previous.length > 0 ? { previous_vapid_keys: previous } : {}) })}\n`
  }
  let after: string | null = null
  for (;;) {
    const rows = await exportPage(db, projectId, after, EXPORT_PAGE_SIZE, withKeys, options.filter)
    if (rows.length === 0) return
    let chunk = ''
    for (const row of rows) {
      chunk += options.format === 'csv' ? csvRow(row, withKeys, endpointOf(row)) : `${JSON.stringify(lineObject(row, withKeys, endpointOf(row)))}\n`
    }
    yield chunk
    after = rows[rows.length - 1]!.id
  }
}
