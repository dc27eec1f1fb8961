// Who may do what in a project (issue 13): every bearer route names the one
// permission it needs, and an actor (an API key with its scope, or a signed-in
// user with their role in the project) either holds it or gets a 403. The two
// tables below are the whole policy: a route never checks a role or a scope
// itself.

/** What a route does, as one permission. */
export const PERMISSIONS = [
  'project:read', // GET /v1/me, subscriber counts: what the dashboard's overview reads
  'project:write', // PATCH /v1/me (project settings)
  'broadcasts:read',
  'broadcasts:send', // send, schedule, stop, cancel
  'templates:write', // create, change and delete saved templates (reading them is broadcasts:read)
  'groups:read',
  'groups:write',
  'subscribers:read',
  'subscribers:tags', // change subscribers' tags
  'subscribers:write', // erase subscribers
  'subscribers:import', // bulk import (issue 23): full keys, owners and admins
  'webhooks:read',
  'webhooks:write',
  'keys:manage', // list, create and revoke the project's API keys
  'members:manage', // invite members, change roles, remove members
  'vapid_keys:manage', // list, rotate and retire the project's VAPID key pairs (issue 23): owners only
  'audit:read',
  'test_devices:use', // a member's own test devices and "send a test to me" (issue 25): sessions of owners, admins and editors, never a key
] as const
export type Permission = (typeof PERMISSIONS)[number]

/** An API key's scope, given when it is created; `full` is what every key could do before scopes. */
export const KEY_SCOPES = ['full', 'send', 'subscribers', 'groups', 'webhooks'] as const
export type KeyScope = (typeof KEY_SCOPES)[number]

/** A user's role in one project. */
export const ROLES = ['owner', 'admin', 'editor', 'viewer'] as const
export type Role = (typeof ROLES)[number]

/** Who is acting: the key or the user, and what it is allowed. */
export type Actor = { type: 'key'; id: string; scope: KeyScope } | { type: 'user'; id: string; role: Role }

const READ: Permission[] = ['project:read', 'broadcasts:read', 'groups:read', 'subscribers:read', 'webhooks:read']
const ALL: readonly Permission[] = PERMISSIONS

const BY_SCOPE: Record<KeyScope, ReadonlySet<Permission>> = {
  // Members are people: a key never manages them. Nor the VAPID keys: a leaked
  // API key must not be able to move the project's subscriptions to a key pair
  // nobody keeps, or retire the one they use.
  // Nor test devices: they are a person's own browsers, which a key has none of.
  full: new Set(ALL.filter((p) => p !== 'members:manage' && p !== 'vapid_keys:manage' && p !== 'test_devices:use')),
  send: new Set(['project:read', 'broadcasts:read', 'broadcasts:send', 'templates:write']),
  subscribers: new Set(['project:read', 'subscribers:read', 'subscribers:tags', 'subscribers:write']),
  groups: new Set(['project:read', 'groups:read', 'groups:write']),
  webhooks: new Set(['project:read', 'webhooks:read', 'webhooks:write']),
}

const BY_ROLE: Record<Role, ReadonlySet<Permission>> = {
  owner: new Set(ALL),
  // Rotating or retiring a VAPID key can silence every subscriber: an owner's call (docs/vapid-keys.md).
  admin: new Set(ALL.filter((p) => p !== 'members:manage' && p !== 'vapid_keys:manage')),
  editor: new Set([...READ, 'broadcasts:send', 'templates:write', 'groups:write', 'subscribers:tags', 'test_devices:use']),
  viewer: new Set(READ),
}

/** Whether the actor holds the permission. */
export function allows(actor: Actor, permission: Permission): boolean {
  return actor.type === 'key' ? BY_SCOPE[actor.scope].has(permission) : BY_ROLE[actor.role].has(permission)
}

/** The error code of a refusal: a key outside its scope, or a user whose role does not allow it. */
export function refusalCode(actor: Actor): 'insufficient_scope' | 'insufficient_role' {
  return actor.type === 'key' ? 'insufficient_scope' : 'insufficient_role'
}

/**
 * A push endpoint is a capability: whoever holds one can unsubscribe it
 * (POST /v1/unsubscribe). It is shown whole only to actors who may erase
 * subscribers anyway; others get it masked (masking.ts).
 */
export const SEES_PUSH_ENDPOINTS: Permission = 'subscribers:write'
/** A webhook URL may carry a secret in its path or query (chat services' incoming webhooks): whole only to who may change webhooks. */
export const SEES_WEBHOOK_URLS: Permission = 'webhooks:write'
