// Shapes of the VAPID key routes (issue 23): the operator's
// /admin/v1/projects/:id/vapid-keys… and the owner's /v1/project/vapid-keys….
import { Type, type Static } from 'typebox'

const VapidKeyId = Type.String({ minLength: 1, maxLength: 64, description: 'vk_…' })

export const VapidKeyView = Type.Object({
  id: VapidKeyId,
  public_key: Type.String({ description: 'base64url uncompressed P-256 point: the applicationServerKey subscriptions on this key were made with' }),
  current: Type.Boolean({ description: 'New subscriptions are made with this key (the SDK and GET /v1/vapid-public-key serve it); exactly one key is current' }),
  created_at: Type.Integer({ description: 'Unix ms' }),
  retired_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms when it was retired (no push is signed with it since), or null' }),
  active_subscribers: Type.Integer({ minimum: 0, description: 'Active subscriptions made with this key, each still signed with it' }),
})
export type VapidKeyView = Static<typeof VapidKeyView>

export const VapidKeyList = Type.Object({ vapid_keys: Type.Array(VapidKeyView, { description: 'Every key of the project, retired ones too, oldest first' }) })
export type VapidKeyList = Static<typeof VapidKeyList>

export const RotatedVapidKeys = Type.Object({
  vapid_key: VapidKeyView,
  vapid_keys: VapidKeyList.properties.vapid_keys,
})
export type RotatedVapidKeys = Static<typeof RotatedVapidKeys>

export const RetiredVapidKey = Type.Object({
  vapid_key: VapidKeyView,
  expired_subscribers: Type.Integer({ minimum: 0, description: 'Active subscriptions made with the key, now expired (0 unless forced)' }),
})
export type RetiredVapidKey = Static<typeof RetiredVapidKey>

export const ProjectVapidKeyParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64, description: 'prj_…' }), key_id: VapidKeyId })
export const OwnVapidKeyParams = Type.Object({ key_id: VapidKeyId })

export const RetireVapidKeyQuery = Type.Object({
  force: Type.Optional(Type.Boolean({ default: false, description: 'Retire it even though active subscriptions use it: they are expired (lost) and counted in the answer' })),
})
export type RetireVapidKeyQuery = Static<typeof RetireVapidKeyQuery>
