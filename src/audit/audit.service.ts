// Reading the audit log: one project's entries, newest first, a keyset page at
// a time (decisions.md §3), with the actor's email or key name where known.
import type { Queryable } from '../platform/db/database.ts'
import { readPage } from '../platform/paging.ts'
import type { AuditList, ListAuditQuery } from './audit.schemas.ts'
import { listAuditEntries, type AuditRow } from './audit.store.ts'
import { shownKeyPrefix } from '../access/masking.ts'

const DEFAULT_PAGE_SIZE = 50

/** The user's email, or the key's name and the 6 characters every list shows (never the whole lookup prefix). */
function actorLabel(row: AuditRow): string | null {
  if (row.actor_email) return row.actor_email
  if (row.actor_key_prefix) {
    const shown = shownKeyPrefix(row.actor_key_prefix)
    return row.actor_key_name ? `${row.actor_key_name} (${shown}…)` : `${shown}…`
  }
  return null
}

export async function listAuditLog(q: Queryable, projectId: string, query: ListAuditQuery): Promise<AuditList> {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE
  const { rows, next_cursor } = await readPage(limit, (n) =>
    listAuditEntries(q, projectId, {
      limit: n,
      cursor: query.cursor,
      actorId: query.actor_id,
      action: query.action,
      targetId: query.target_id,
      since: query.since === undefined ? undefined : new Date(query.since),
      until: query.until === undefined ? undefined : new Date(query.until),
    }),
  )
  return {
    entries: rows.map((row) => ({
      id: row.id,
      action: row.action,
      actor: { type: row.actor_type, id: row.actor_id, label: actorLabel(row) },
      target: { type: row.target_type, id: row.target_id },
      details: row.details,
      ip: row.ip,
      user_agent: row.user_agent,
      created_at: row.created_at.getTime(),
    })),
    next_cursor,
  }
}
