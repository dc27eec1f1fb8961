// Creating projects and keys; the operator API and the CLI both call these.
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { newId } from '../platform/ids.ts'
import { generateApiKey } from './api-keys.ts'
import type { PlanName } from './plans.ts'
import { findProjectById, insertApiKey, insertProject, type ProjectRow } from './projects.store.ts'
import { generateVapidKeys } from './vapid-keys.ts'

export interface CreateProjectInput {
  name: string
  plan?: PlanName
  domain?: string | null
}

export interface CreatedProject {
  project: ProjectRow
  apiKey: string
  apiKeyId: string
}

export async function createProject(db: Database, input: CreateProjectInput): Promise<CreatedProject> {
  const vapid = generateVapidKeys()
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
    const { id, key } = await addApiKey(tx, project.id, 'default')
    return { project, apiKey: key, apiKeyId: id }
  })
}

export async function addApiKey(q: Queryable, projectId: string, name: string | null): Promise<{ id: string; key: string }> {
  const generated = generateApiKey()
  const id = newId('key')
  await insertApiKey(q, { id, project_id: projectId, name, prefix: generated.prefix, hash: generated.hash })
  return { id, key: generated.key }
}

/** A new key for an existing project (404 project_not_found otherwise), with q (the caller's transaction, to record it in the audit log). */
export async function createApiKey(q: Queryable, projectId: string, name: string | null): Promise<{ id: string; key: string }> {
  const project = await findProjectById(q, projectId)
  if (!project) throw new AppError('project_not_found')
  return addApiKey(q, projectId, name)
}
