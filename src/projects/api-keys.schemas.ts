// The shapes of a project's API keys, shared by the operator API
// (/admin/v1/projects/:id/api-keys, the CLI) and the project's own
// /v1/api-keys: one body to create a key, one view of a key.
import { Type, type Static } from 'typebox'
import { KEY_SCOPES } from '../access/access.ts'

export const API_KEY_NAME_MAX = 128

export const KeyScopeSchema = Type.Enum([...KEY_SCOPES], {
  description:
    'What the key may do. full: everything but members; send: send, schedule, stop, cancel and read broadcasts; subscribers: read, tag and erase subscribers; groups: groups and their members; webhooks: webhooks. Every scope reads GET /v1/me.',
})

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: API_KEY_NAME_MAX }), Type.Null()])),
    scope: Type.Optional(KeyScopeSchema),
  },
  { additionalProperties: false, description: 'Both optional: no name, scope full.' },
)
export type CreateApiKeyBody = Static<typeof CreateApiKeyBody>

const keyFields = {
  id: Type.String({ description: 'key_…' }),
  name: Type.Union([Type.String(), Type.Null()]),
  prefix: Type.String({ description: 'hk_live_ and the first 6 random characters: enough to recognise a key, never to use it' }),
  scope: KeyScopeSchema,
  created_at: Type.Integer({ description: 'Unix ms' }),
  last_used_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms, to the minute (written at most once a minute); null before the first use' }),
  created_by: Type.Union(
    [
      Type.Object({
        type: Type.Enum(['user', 'key', 'operator'], { description: "user: a member's session; key: a full API key; operator: the operator API or the herald CLI" }),
        id: Type.Union([Type.String(), Type.Null()], { description: 'usr_… or key_…; null for the operator' }),
        email: Type.Union([Type.String(), Type.Null()], { description: "The member's email when a member made it" }),
      }),
      Type.Null(),
    ],
    { description: 'Who made the key. It keeps working when that member leaves the project (it belongs to the integration); null for keys made before Herald recorded this.' },
  ),
}

/** A key as lists show it: never the key, its hash or its whole lookup prefix. */
export const ApiKeyView = Type.Object(keyFields)
export type ApiKeyView = Static<typeof ApiKeyView>

export const CreatedApiKey = Type.Object({
  ...keyFields,
  api_key: Type.String({ description: 'Shown once; only its hash is stored.' }),
})
export type CreatedApiKey = Static<typeof CreatedApiKey>

export const ApiKeyList = Type.Object({ api_keys: Type.Array(ApiKeyView, { description: 'Keys that work (not revoked), oldest first' }) })
export type ApiKeyList = Static<typeof ApiKeyList>

export const ApiKeyParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64, description: 'key_…' }) })

/** DELETE /v1/members/:user_id: the removed member's keys that still work (they are not revoked by the removal). */
export const RemovedMember = Type.Object({
  ok: Type.Literal(true),
  active_api_keys: Type.Array(ApiKeyView, { description: 'Keys the removed member made that still work, oldest first: revoke those the project no longer needs (DELETE /v1/api-keys/:id).' }),
})
