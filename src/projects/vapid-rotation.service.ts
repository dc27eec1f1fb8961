// Rotating and retiring a project's VAPID key pairs (issue 23), shared by the
// operator API, the CLI and the owner's /v1/project/vapid-keys routes. A push
// subscription is bound to the public key it was made with, so rotation adds a
// pair rather than replacing one: new subscriptions take the new pair, every
// existing one stays on its own and keeps being signed with it. A pair is
// retired only once no active subscription uses it, or when the operator
// forces it, which expires (loses) those subscriptions and says how many.
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { newId } from '../platform/ids.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'
import { findProjectById, findProjectForUpdate, type ProjectRow } from './projects.store.ts'
import { generateVapidKeys, type VapidKeyPair } from './vapid-keys.ts'
import {
  countActiveOnKey,
  ensureOriginalVapidKey,
  expireSubscribersOfKey,
  findVapidKeyForUpdate,
  insertVapidKey,
  listVapidKeys,
  markVapidKeyRetired,
  originalVapidKeyId,
  setCurrentVapidKey,
  type VapidKeyRow,
} from './vapid-keys.store.ts'
import type { RetiredVapidKey, RotatedVapidKeys, VapidKeyList, VapidKeyView } from './vapid-keys.schemas.ts'

/** The id of the project's current pair. */
export function currentVapidKeyId(project: Pick<ProjectRow, 'id' | 'vapid_key_id'>): string {
  return project.vapid_key_id ?? originalVapidKeyId(project.id)
}

/** The API shape of a key: never its private half. */
function keyJson(row: VapidKeyRow, currentId: string, activeSubscribers: number): VapidKeyView {
  return {
    id: row.id,
    public_key: row.public_key,
    current: row.id === currentId,
    created_at: row.created_at.getTime(),
    retired_at: row.retired_at ? row.retired_at.getTime() : null,
    active_subscribers: activeSubscribers,
  }
}

async function keysOf(q: Queryable, project: ProjectRow): Promise<VapidKeyView[]> {
  let rows = await listVapidKeys(q, project.id)
  if (rows.length === 0) {
    // A project made by the previous release during an upgrade: its original pair gets its row now.
    await ensureOriginalVapidKey(q, project.id)
    rows = await listVapidKeys(q, project.id)
  }
  const currentId = currentVapidKeyId(project)
  return rows.map((row) => keyJson(row, currentId, row.active_subscribers))
}

export async function listProjectVapidKeys(db: Database, projectId: string): Promise<VapidKeyList> {
  const project = await findProjectById(db, projectId)
  if (!project) throw new AppError('project_not_found', `No project ${projectId}.`)
  return { vapid_keys: await keysOf(db, project) }
}

/**
 * Makes a new pair (fresh, or an imported one already checked) the project's
 * current one. The project row stays locked to the commit, so two rotations at
 * once make two keys one after the other, never two current ones.
 */
export async function rotateVapidKeys(db: Database, audit: AuditContext, projectId: string, imported?: VapidKeyPair): Promise<RotatedVapidKeys> {
  const pair = imported ?? generateVapidKeys()
  return db.transaction(async (tx) => {
    const project = await findProjectForUpdate(tx, projectId)
    if (!project) throw new AppError('project_not_found', `No project ${projectId}.`)
    await ensureOriginalVapidKey(tx, projectId)
    const previous = currentVapidKeyId(project)
    const key = await insertVapidKey(tx, { id: newId('vk'), project_id: projectId, public_key: pair.publicKey, private_key: pair.privateKey })
    await setCurrentVapidKey(tx, projectId, key)
    // The public key is public; the private key never goes into the log.
    await recordAudit(tx, {
      projectId,
      context: audit,
      action: 'vapid_key.rotate',
      target: { type: 'vapid_key', id: key.id },
      details: { vapid_public: key.public_key, previous_key_id: previous, imported: imported !== undefined },
    })
    const keys = await keysOf(tx, { ...project, vapid_key_id: key.id })
    return { vapid_key: keys.find((k) => k.id === key.id)!, vapid_keys: keys }
  })
}

/**
 * Retires a pair that is not the current one. With active subscriptions on it,
 * 409 vapid_key_has_subscribers with their count, unless `force` (the
 * operator's alone), which expires them in the same transaction. Retiring a
 * retired pair again answers the same, and expires nothing.
 */
export async function retireVapidKey(db: Database, audit: AuditContext, projectId: string, keyId: string, force: boolean): Promise<RetiredVapidKey> {
  return db.transaction(async (tx) => {
    const project = await findProjectForUpdate(tx, projectId)
    if (!project) throw new AppError('project_not_found', `No project ${projectId}.`)
    await ensureOriginalVapidKey(tx, projectId)
    const key = await findVapidKeyForUpdate(tx, projectId, keyId)
    if (!key) throw new AppError('vapid_key_not_found', `No VAPID key ${keyId} in this project.`)
    const currentId = currentVapidKeyId(project)
    if (key.retired_at) return { vapid_key: keyJson(key, currentId, 0), expired_subscribers: 0 }
    if (key.id === currentId) throw new AppError('vapid_key_current', `${keyId} is the current VAPID key: rotate to a new one first, then retire this one once no subscription uses it.`)
    const active = await countActiveOnKey(tx, projectId, keyId)
    if (active > 0 && !force) {
      throw new AppError('vapid_key_has_subscribers', `${active} active subscriptions were made with ${keyId}; retiring it would lose them. Wait for them to move to the current key (the SDK moves returning visitors), or force it.`, { active_subscribers: active })
    }
    const expired = active > 0 ? await expireSubscribersOfKey(tx, projectId, keyId) : 0
    const retired = await markVapidKeyRetired(tx, keyId)
    await recordAudit(tx, {
      projectId,
      context: audit,
      action: 'vapid_key.retire',
      target: { type: 'vapid_key', id: keyId },
      details: { vapid_public: key.public_key, forced: force, expired_subscribers: expired },
    })
    return { vapid_key: keyJson(retired, currentId, 0), expired_subscribers: expired }
  })
}
