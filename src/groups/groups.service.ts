// Group rules: the per-plan cap, unique names, and "a group of another
// project does not exist" (404 group_not_found, never 403).
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { isId, newId } from '../platform/ids.ts'
import { howToLift, nextPlan } from '../projects/plans.ts'
import type { AuthedProject } from '../projects/project-auth.ts'
import type { AddMembersBody, CreateGroupBody, Group, UpdateGroupBody } from './groups.schemas.ts'
import * as store from './groups.store.ts'

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
export async function createGroup(db: Database, project: AuthedProject, body: CreateGroupBody): Promise<string> {
  const id = newId('grp')
  const cap = project.effectiveLimits.groups
  try {
    await db.transaction(async (tx) => {
      await store.lockProject(tx, project.id)
      if ((await store.countGroups(tx, project.id)) >= cap) {
        throw new AppError('group_limit_reached', `The project is at its plan's cap of ${cap} groups. ${howToLift(project.id, { limit: 'groups', plan: nextPlan(project.plan) })}`, { limit: cap })
      }
      await store.insertGroup(tx, { id, project_id: project.id, name: body.name, description: body.description ?? null })
    })
  } catch (err) {
    if (store.isUniqueViolation(err)) throw nameTaken(body.name)
    throw err
  }
  return id
}

/** Renames and/or redescribes; neither field given changes nothing but still needs the group to exist. */
export async function updateGroup(db: Database, projectId: string, groupId: string, body: UpdateGroupBody): Promise<void> {
  if (!isId('grp', groupId)) throw notFound(groupId)
  if (body.name === undefined && body.description === undefined) {
    if (!(await store.groupExists(db, projectId, groupId))) throw notFound(groupId)
    return
  }
  let found: boolean
  try {
    found = await store.updateGroup(db, projectId, groupId, { name: body.name, description: body.description })
  } catch (err) {
    if (store.isUniqueViolation(err) && body.name !== undefined) throw nameTaken(body.name)
    throw err
  }
  if (!found) throw notFound(groupId)
}

export async function deleteGroup(db: Database, projectId: string, groupId: string): Promise<void> {
  if (!isId('grp', groupId) || !(await store.deleteGroup(db, projectId, groupId))) throw notFound(groupId)
}

/** Returns how many memberships were actually inserted (api.md 4.5). */
export async function addMembers(db: Database, projectId: string, groupId: string, body: AddMembersBody): Promise<number> {
  if (!isId('grp', groupId) || !(await store.groupExists(db, projectId, groupId))) throw notFound(groupId)
  const ids = body.subscriber_ids.filter((id) => isId('sub', id))
  if (ids.length === 0) return 0
  try {
    return await store.addMembers(db, projectId, groupId, ids)
  } catch (err) {
    // The group was deleted between the check and the insert.
    if (store.isForeignKeyViolation(err)) throw notFound(groupId)
    throw err
  }
}

/** Removes one membership; a subscriber that was not a member is not an error (api.md 4.6 lists only group_not_found). */
export async function removeMember(db: Database, projectId: string, groupId: string, subscriberId: string): Promise<void> {
  if (!isId('grp', groupId) || !(await store.groupExists(db, projectId, groupId))) throw notFound(groupId)
  await store.removeMember(db, groupId, subscriberId)
}
