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
