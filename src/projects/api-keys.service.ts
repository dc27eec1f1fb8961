// A project's API keys as people manage them: create (the key shown once),
// list, revoke. The operator's routes and CLI (admin.service.ts) and the
// project's own /v1/api-keys (api-keys.routes.ts) both call these.
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'
import type { Database } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import type { ApiKeyView, CreateApiKeyBody, CreatedApiKey } from './api-keys.schemas.ts'
import { shownPrefix } from './api-keys.ts'
import { createApiKey } from './projects.service.ts'
import { findApiKey, listApiKeys, revokeApiKey, type ApiKeyRow } from './projects.store.ts'

/** The one mapping from a key's row to what an answer shows: never the key, its hash or its whole lookup prefix. */
export function apiKeyJson(row: ApiKeyRow): ApiKeyView {
  return {
    id: row.id,
    name: row.name,
    prefix: shownPrefix(row.prefix),
    scope: row.scope,
    created_at: row.created_at.getTime(),
    last_used_at: row.last_used_at ? row.last_used_at.getTime() : null,
    created_by: createdBy(row),
  }
}

/** Who made the key, as the views show it; null when nobody recorded it (keys older than migration 0018). */
function createdBy(row: ApiKeyRow): ApiKeyView['created_by'] {
  if (!row.created_by_type) return null
  return { type: row.created_by_type, id: row.created_by_id, email: row.created_by_email ?? null }
}

/**
 * A new key for the project (404 project_not_found when there is none): its
 * view and, this once, the key. Recorded in the audit log in the same
 * transaction, with its name and scope (never the key).
 */
export async function createKey(db: Database, audit: AuditContext, projectId: string, body: CreateApiKeyBody): Promise<CreatedApiKey> {
  const name = body.name ?? null
  const scope = body.scope ?? 'full'
  const { row, key } = await db.transaction(async (tx) => {
    const { actor } = audit
    const created = await createApiKey(tx, projectId, { name, scope, createdBy: { type: actor.type, id: actor.type === 'operator' ? null : actor.id } })
    await recordAudit(tx, { projectId, context: audit, action: 'api_key.create', target: { type: 'api_key', id: created.row.id }, details: { name, scope } })
    return created
  })
  return { ...apiKeyJson(row), api_key: key }
}

/** The keys that work, oldest first. */
export async function listActiveKeys(db: Database, projectId: string): Promise<ApiKeyView[]> {
  return (await listApiKeys(db, projectId, { activeOnly: true })).map(apiKeyJson)
}

/**
 * Revokes the key at once (its next request is 401). Revoking a key already
 * revoked succeeds again (the outcome is the same); a key id that is not the
 * project's is 404 api_key_not_found, whether or not another project has it.
 */
export async function revokeKey(db: Database, audit: AuditContext, projectId: string, keyId: string): Promise<void> {
  // Recorded when it revoked the key; revoking it again changes nothing and records nothing.
  const revoked = await db.transaction(async (tx) => {
    if (!(await revokeApiKey(tx, projectId, keyId))) return false
    await recordAudit(tx, { projectId, context: audit, action: 'api_key.revoke', target: { type: 'api_key', id: keyId } })
    return true
  })
  if (revoked) return
  if (!(await findApiKey(db, projectId, keyId))) {
    throw new AppError('api_key_not_found', `No API key ${keyId} in this project.`)
  }
}
