// Creating projects and keys; the operator API and the CLI both call these.
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { newId } from '../platform/ids.ts'
import type { KeyScope } from '../access/access.ts'
import { generateApiKey } from './api-keys.ts'
import type { PlanName } from './plans.ts'
import { findProjectById, insertApiKey, insertProject, type ApiKeyRow, type ProjectRow } from './projects.store.ts'
import { generateVapidKeys, type VapidKeyPair } from './vapid-keys.ts'
import { insertVapidKey, originalVapidKeyId } from './vapid-keys.store.ts'

export interface CreateProjectInput {
  name: string
  plan?: PlanName
  domain?: string | null
  /** An imported pair, already checked (checkVapidKeyPair); a fresh one when absent. */
  vapid?: VapidKeyPair
}

export interface CreatedProject {
  project: ProjectRow
  apiKey: string
  apiKeyId: string
}

export async function createProject(db: Database, input: CreateProjectInput): Promise<CreatedProject> {
  const vapid = input.vapid ?? generateVapidKeys()
  return db.transaction(async (tx) => {
    const project = await insertProject(tx, {
      id: newId('prj'),
      name: input.name,
      domain: input.domain ?? null,
      plan: input.plan ?? 'free',
      default_icon: null,
      limits: {},
      vapid_public: vapid.publicKey,
      vapid_private: vapid.privateKey,
    })
    // The original pair's row (migration 0024): rotation adds more beside it.
    await insertVapidKey(tx, { id: originalVapidKeyId(project.id), project_id: project.id, public_key: vapid.publicKey, private_key: vapid.privateKey })
    const { row, key } = await addApiKey(tx, project.id, { name: 'default', scope: 'full' })
    return { project, apiKey: key, apiKeyId: row.id }
  })
}

export interface NewKeyInput {
  name: string | null
  /** Default 'full': what every key could do before scopes. */
  scope?: KeyScope
  /** Who makes it (api_keys.created_by_*); the operator when not given (a new project's first key). */
  createdBy?: { type: 'user' | 'key' | 'operator'; id: string | null }
}

/** A new key's row and the key itself, which exists only here: the table keeps its hash. */
export async function addApiKey(q: Queryable, projectId: string, input: NewKeyInput): Promise<{ row: ApiKeyRow; key: string }> {
  const generated = generateApiKey()
  const row = await insertApiKey(q, {
    id: newId('key'),
    project_id: projectId,
    name: input.name,
    prefix: generated.prefix,
    hash: generated.hash,
    scope: input.scope ?? 'full',
    created_by_type: input.createdBy?.type ?? 'operator',
    created_by_id: input.createdBy?.id ?? null,
  })
  return { row, key: generated.key }
}

/** A key for an existing project (404 project_not_found otherwise), with q (the caller's transaction, to record it in the audit log): the operator's route and CLI, and the project's own /v1/api-keys. */
export async function createApiKey(q: Queryable, projectId: string, input: NewKeyInput): Promise<{ row: ApiKeyRow; key: string }> {
  const project = await findProjectById(q, projectId)
  if (!project) throw new AppError('project_not_found')
  return addApiKey(q, projectId, input)
}
