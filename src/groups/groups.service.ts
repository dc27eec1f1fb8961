// Group rules: the per-plan cap, unique names, and "a group of another
// project does not exist" (404 group_not_found, never 403).
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { isId, newId } from '../platform/ids.ts'
import { howToLift, nextPlan } from '../projects/plans.ts'
import type { AuthedProject } from '../projects/project-auth.ts'
import type { AddMembersBody, CreateGroupBody, Group, UpdateGroupBody } from './groups.schemas.ts'
import * as store from './groups.store.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'

function notFound(groupId: string): AppError {
  return new AppError('group_not_found', `No group ${groupId} in this project.`)
}

function nameTaken(name: string): AppError {
  return new AppError('group_name_taken', `Another group in this project is named "${name}".`)
}

export async function listGroups(q: Queryable, projectId: string): Promise<Group[]> {
  const rows = await store.listGroups(q, projectId)
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    description: row.description,
    member_count: row.member_count,
    created_at: row.created_at.getTime(),
  }))
}

/**
 * Creates a group under the plan's cap. The project row is locked first so
 * two concurrent creates cannot both pass the count at cap - 1. The
 * UNIQUE (project_id, name) constraint settles concurrent same-name creates.
 */
export async function createGroup(db: Database, audit: AuditContext, project: AuthedProject, body: CreateGroupBody): Promise<string> {
  const id = newId('grp')
  const cap = project.effectiveLimits.groups
  try {
    await db.transaction(async (tx) => {
      await store.lockProject(tx, project.id)
      if ((await store.countGroups(tx, project.id)) >= cap) {
        throw new AppError('group_limit_reached', `The project is at its plan's cap of ${cap} groups. ${howToLift(project.id, { limit: 'groups', plan: nextPlan(project.plan) })}`, { limit: cap })
      }
      await store.insertGroup(tx, { id, project_id: project.id, name: body.name, description: body.description ?? null })
      await recordAudit(tx, { projectId: project.id, context: audit, action: 'group.create', target: { type: 'group', id }, details: { name: body.name } })
    })
  } catch (err) {
    if (store.isUniqueViolation(err)) throw nameTaken(body.name)
    throw err
  }
  return id
}

/**
 * Renames and/or redescribes; neither field given changes nothing (and is not
 * recorded) but still needs the group to exist.
 */
export async function updateGroup(db: Database, audit: AuditContext, projectId: string, groupId: string, body: UpdateGroupBody): Promise<void> {
  if (!isId('grp', groupId)) throw notFound(groupId)
  if (body.name === undefined && body.description === undefined) {
    if (!(await store.groupExists(db, projectId, groupId))) throw notFound(groupId)
    return
  }
  try {
    await db.transaction(async (tx) => {
      if (!(await store.updateGroup(tx, projectId, groupId, { name: body.name, description: body.description }))) throw notFound(groupId)
      // The new name (a label, as on create); a description is free text and only named as changed.
      const fields = [...(body.name !== undefined ? ['name'] : []), ...(body.description !== undefined ? ['description'] : [])]
      await recordAudit(tx, { projectId, context: audit, action: 'group.update', target: { type: 'group', id: groupId }, details: { fields, ...(body.name !== undefined ? { name: body.name } : {}) } })
    })
  } catch (err) {
    if (store.isUniqueViolation(err) && body.name !== undefined) throw nameTaken(body.name)
    throw err
  }
}

export async function deleteGroup(db: Database, audit: AuditContext, projectId: string, groupId: string): Promise<void> {
  if (!isId('grp', groupId)) throw notFound(groupId)
  await db.transaction(async (tx) => {
    if (!(await store.deleteGroup(tx, projectId, groupId))) throw notFound(groupId)
    await recordAudit(tx, { projectId, context: audit, action: 'group.delete', target: { type: 'group', id: groupId } })
  })
}

/**
 * Returns how many memberships were actually inserted (api.md 4.5). One audit
 * entry for the whole request, with how many ids were given and how many were
 * added; the ids themselves are not copied into the log.
 */
export async function addMembers(db: Database, audit: AuditContext, projectId: string, groupId: string, body: AddMembersBody): Promise<number> {
  if (!isId('grp', groupId) || !(await store.groupExists(db, projectId, groupId))) throw notFound(groupId)
  const ids = body.subscriber_ids.filter((id) => isId('sub', id))
  try {
    return await db.transaction(async (tx) => {
      const added = ids.length === 0 ? 0 : await store.addMembers(tx, projectId, groupId, ids)
      await recordAudit(tx, { projectId, context: audit, action: 'group.members.add', target: { type: 'group', id: groupId }, details: { requested: body.subscriber_ids.length, count: added } })
      return added
    })
  } catch (err) {
    // The group was deleted between the check and the insert.
    if (store.isForeignKeyViolation(err)) throw notFound(groupId)
    throw err
  }
}

/** Removes one membership; a subscriber that was not a member is not an error (api.md 4.6 lists only group_not_found). */
export async function removeMember(db: Database, audit: AuditContext, projectId: string, groupId: string, subscriberId: string): Promise<void> {
  if (!isId('grp', groupId) || !(await store.groupExists(db, projectId, groupId))) throw notFound(groupId)
  await db.transaction(async (tx) => {
    const removed = await store.removeMember(tx, groupId, subscriberId)
    // The subscriber's id only when it was a member of this group: whatever else was given is not echoed into the log.
    await recordAudit(tx, { projectId, context: audit, action: 'group.members.remove', target: { type: 'group', id: groupId }, details: removed > 0 ? { subscriber_id: subscriberId, count: removed } : { count: 0 } })
  })
}
