// The operator's view of projects and keys, shared by the /admin/v1 routes and
// the `herald projects|keys` CLI, so both answer the same JSON.
import type { Config } from '../platform/config.ts'
import type { Database } from '../platform/db/database.ts'
import { AppError, invalidField } from '../platform/errors.ts'
import { resolveMedia } from '../media/media.service.ts'
import type {
  ApiKeyList,
  CreateApiKeyBody,
  CreateProjectBody,
  CreatedApiKey,
  CreatedProject,
  LimitsPatch,
  ListProjectsQuery,
  Project,
  ProjectList,
  UpdateProjectBody,
  VapidKeysBody,
} from './admin.schemas.ts'
import { LIMIT_FIELDS } from './admin.schemas.ts'
import { effectiveLimits, type LimitOverrides } from './plans.ts'
import { createProject } from './projects.service.ts'
import { apiKeyJson, createKey, revokeKey } from './api-keys.service.ts'
import {
  findProjectById,
  findProjectForUpdate,
  listApiKeys,
  listProjectsPage,
  updateProject,
  updateVapidKeys,
  type ProjectRow,
} from './projects.store.ts'
import { projectUsage, type ProjectUsage } from './usage.store.ts'
import { readPage } from '../platform/paging.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'
import { lockActiveCount } from '../subscribers/subscribers.store.ts'
import { checkVapidKeyPair, type VapidKeyPair } from './vapid-keys.ts'
import { EXPIRY_FIELDS, expiryDetails } from './expiry-settings.ts'
import { ensureOriginalVapidKey, originalVapidKeyId, replaceVapidKeyPair } from './vapid-keys.store.ts'

export const DEFAULT_PAGE_SIZE = 50

/** Only the known limit fields, whatever else the jsonb column might hold. */
function storedOverrides(row: ProjectRow): LimitOverrides {
  const out: LimitOverrides = {}
  for (const field of LIMIT_FIELDS) {
    const value = row.limits?.[field]
    if (typeof value === 'number') out[field] = value
  }
  return out
}

/** The one mapping from a project row to its API shape. Never includes a secret. */
export function projectJson(row: ProjectRow, usage: ProjectUsage): Project {
  const overrides = storedOverrides(row)
  return {
    id: row.id,
    name: row.name,
    domain: row.domain,
    plan: row.plan,
    default_icon: row.default_icon,
    limits: effectiveLimits(row.plan, overrides),
    limit_overrides: overrides,
    usage: { subscribers: usage.subscribers, pushes_this_month: usage.pushes_this_month },
    vapid_public: row.vapid_public,
    created_at: row.created_at.getTime(),
    expire_after_failures: row.expire_after_failures,
    expire_after_days_without_delivery: row.expire_after_days_without_delivery,
  }
}

/** Stored overrides with a patch applied: a number sets a field, null removes it, absence keeps it. */
export function mergeOverrides(stored: LimitOverrides, patch: LimitsPatch): LimitOverrides {
  const merged: LimitOverrides = { ...stored }
  for (const field of LIMIT_FIELDS) {
    const value = patch[field]
    if (value === null) delete merged[field]
    else if (value !== undefined) merged[field] = value
  }
  return merged
}

async function requireProject(db: Database, id: string): Promise<ProjectRow> {
  const row = await findProjectById(db, id)
  if (!row) throw new AppError('project_not_found', `No project ${id}.`)
  return row
}

/** The imported pair of a create request, checked; undefined when neither half is given (a fresh pair). */
function importedPair(body: CreateProjectBody): VapidKeyPair | undefined {
  if (body.vapid_private === undefined && body.vapid_public === undefined) return undefined
  if (body.vapid_private === undefined) throw invalidField('vapid_private', 'is required with vapid_public: import both halves of the pair')
  if (body.vapid_public === undefined) throw invalidField('vapid_public', 'is required with vapid_private: import both halves of the pair')
  return checkVapidKeyPair(body.vapid_private, body.vapid_public)
}

export async function createProjectForOperator(db: Database, body: CreateProjectBody): Promise<CreatedProject> {
  const created = await createProject(db, { name: body.name, plan: body.plan, domain: body.domain ?? null, vapid: importedPair(body) })
  return {
    id: created.project.id,
    name: created.project.name,
    plan: created.project.plan,
    api_key: created.apiKey,
    vapid_public: created.project.vapid_public,
  }
}

export async function getProject(db: Database, id: string): Promise<Project> {
  const row = await requireProject(db, id)
  return projectJson(row, await projectUsage(db, id))
}

export async function listProjectsForOperator(db: Database, query: ListProjectsQuery): Promise<ProjectList> {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE
  const { rows, next_cursor } = await readPage(limit, (n) => listProjectsPage(db, n, query.cursor ?? null))
  const projects = await Promise.all(rows.map(async (row) => projectJson(row, await projectUsage(db, row.id))))
  return { projects, next_cursor }
}

/**
 * A default_icon as stored: an HTTPS URL as given, a data URL checked and hosted
 * like notification.icon. Shared by the operator route and PATCH /v1/me.
 * resolveMedia speaks of notification.icon; here the field is default_icon.
 */
export async function resolveDefaultIcon(db: Database, config: Config, value: string): Promise<string> {
  try {
    return await resolveMedia(db, config, 'icon', value)
  } catch (err) {
    if (err instanceof AppError && err.code === 'invalid_icon') {
      throw new AppError('invalid_icon', err.message.replace(/^notification\.icon\b/, 'default_icon'), err.extra)
    }
    throw err
  }
}

export async function updateProjectSettings(db: Database, config: Config, audit: AuditContext, id: string, body: UpdateProjectBody): Promise<Project> {
  await requireProject(db, id)
  // A data-URL icon is checked and stored before the row is locked; an HTTPS URL comes back as given.
  const defaultIcon =
    body.default_icon === undefined || body.default_icon === null
      ? body.default_icon
      : await resolveDefaultIcon(db, config, body.default_icon)
  const row = await db.transaction(async (tx) => {
    const current = await findProjectForUpdate(tx, id)
    if (!current) throw new AppError('project_not_found', `No project ${id}.`)
    const updated = await updateProject(tx, id, {
      plan: body.plan,
      default_icon: defaultIcon,
      limits: body.limits === undefined ? undefined : mergeOverrides(storedOverrides(current), body.limits),
      expire_after_failures: body.expire_after_failures,
      expire_after_days_without_delivery: body.expire_after_days_without_delivery,
    })
    const fields = (['plan', 'default_icon', 'limits', ...EXPIRY_FIELDS] as const).filter((field) => body[field] !== undefined)
    await recordAudit(tx, {
      projectId: id,
      context: audit,
      action: 'project.update',
      target: { type: 'project', id },
      details: { fields, ...(body.plan !== undefined ? { plan: body.plan } : {}), ...(defaultIcon !== undefined ? { default_icon: defaultIcon } : {}), ...(body.limits !== undefined ? { limits: body.limits } : {}), ...expiryDetails(body) },
    })
    return updated
  })
  if (!row) throw new AppError('project_not_found', `No project ${id}.`)
  return projectJson(row, await projectUsage(db, id))
}

/**
 * Replaces the project's VAPID pair with an imported one (issue 23), only while
 * it has no active subscriber: each push subscription is bound to the public
 * key it was made with, so a new pair would silence all of them. The counter
 * row stays locked until commit, so a subscribe cannot slip in between the
 * check and the change.
 */
export async function replaceVapidKeys(db: Database, audit: AuditContext, id: string, body: VapidKeysBody): Promise<Project> {
  const pair = checkVapidKeyPair(body.vapid_private, body.vapid_public)
  await requireProject(db, id)
  const row = await db.transaction(async (tx) => {
    const current = await findProjectForUpdate(tx, id)
    if (!current) throw new AppError('project_not_found', `No project ${id}.`)
    const active = await lockActiveCount(tx, id)
    if (active > 0) {
      throw new AppError('vapid_keys_in_use', `Project ${id} has ${active} active subscribers bound to its current VAPID public key; replacing the pair would stop every push to them.`, { active_subscribers: active })
    }
    // The current pair's row (the original one unless rotated) takes the new pair too.
    await ensureOriginalVapidKey(tx, id)
    await replaceVapidKeyPair(tx, current.vapid_key_id ?? originalVapidKeyId(id), { public_key: pair.publicKey, private_key: pair.privateKey })
    const updated = await updateVapidKeys(tx, id, { vapid_public: pair.publicKey, vapid_private: pair.privateKey })
    // The public key is public; the private key never goes into the log.
    await recordAudit(tx, { projectId: id, context: audit, action: 'project.update', target: { type: 'project', id }, details: { fields: ['vapid_keys'], vapid_public: pair.publicKey } })
    return updated
  })
  if (!row) throw new AppError('project_not_found', `No project ${id}.`)
  return projectJson(row, await projectUsage(db, id))
}

export async function createProjectApiKey(db: Database, audit: AuditContext, projectId: string, body: CreateApiKeyBody): Promise<CreatedApiKey> {
  return createKey(db, audit, projectId, body)
}

export async function listProjectApiKeys(db: Database, projectId: string): Promise<ApiKeyList> {
  await requireProject(db, projectId)
  const rows = await listApiKeys(db, projectId)
  return { api_keys: rows.map((row) => ({ ...apiKeyJson(row), revoked_at: row.revoked_at ? row.revoked_at.getTime() : null })) }
}

/** Revokes the key at once. Revoking a key already revoked succeeds again (the outcome is the same). */
export async function revokeProjectApiKey(db: Database, audit: AuditContext, projectId: string, keyId: string): Promise<void> {
  await requireProject(db, projectId)
  await revokeKey(db, audit, projectId, keyId)
}
