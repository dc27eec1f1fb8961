import { describe, expect, it } from 'vitest'
import { allows, KEY_SCOPES, PERMISSIONS, refusalCode, ROLES, type Actor, type Permission } from './access.ts'

const key = (scope: (typeof KEY_SCOPES)[number]): Actor => ({ type: 'key', id: 'key_x', scope })
const user = (role: (typeof ROLES)[number]): Actor => ({ type: 'user', id: 'usr_x', role })
const held = (actor: Actor): Permission[] => PERMISSIONS.filter((p) => allows(actor, p))

describe('what an API key may do, by scope (issue 13)', () => {
  it("full: what every key did before scopes, and its keys and audit log; never members, VAPID keys or a member's test devices", () => {
    expect(held(key('full'))).toEqual(PERMISSIONS.filter((p) => p !== 'members:manage' && p !== 'vapid_keys:manage' && p !== 'test_devices:use'))
  })
  it('send: send, read broadcasts, stop; nothing of groups, subscribers or webhooks', () => {
    expect(held(key('send'))).toEqual(['project:read', 'broadcasts:read', 'broadcasts:send', 'templates:write'])
  })
  it('subscribers, groups, webhooks: their own domain only', () => {
    expect(held(key('subscribers'))).toEqual(['project:read', 'subscribers:read', 'subscribers:tags', 'subscribers:write'])
    expect(held(key('groups'))).toEqual(['project:read', 'groups:read', 'groups:write'])
    expect(held(key('webhooks'))).toEqual(['project:read', 'webhooks:read', 'webhooks:write'])
  })
  it('is refused as insufficient_scope', () => {
    expect(refusalCode(key('send'))).toBe('insufficient_scope')
  })
})

describe('what a member may do, by role (issue 13)', () => {
  it('owner: everything; admin: everything but members and VAPID keys', () => {
    expect(held(user('owner'))).toEqual([...PERMISSIONS])
    expect(held(user('admin'))).toEqual(PERMISSIONS.filter((p) => p !== 'members:manage' && p !== 'vapid_keys:manage'))
  })
  it("editor: reads, compose and send, groups, subscribers' tags, their test devices; not erasure, webhooks, settings, keys, members or the audit log", () => {
    expect(held(user('editor'))).toEqual([
      'project:read', 'broadcasts:read', 'broadcasts:send', 'templates:write', 'groups:read', 'groups:write',
      'subscribers:read', 'subscribers:tags', 'webhooks:read', 'test_devices:use',
    ])
  })
  it('viewer: read only', () => {
    expect(held(user('viewer'))).toEqual(['project:read', 'broadcasts:read', 'groups:read', 'subscribers:read', 'webhooks:read'])
  })
  it('is refused as insufficient_role', () => {
    expect(refusalCode(user('viewer'))).toBe('insufficient_role')
  })
})
