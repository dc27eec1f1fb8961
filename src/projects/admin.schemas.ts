// Request and response shapes of the operator API (decisions.md §2). The CLI
// validates its arguments against the same body schemas.
import { Type, type Static } from 'typebox'
import { PLAN_NAMES } from './plans.ts'
import { ApiKeyView } from './api-keys.schemas.ts'
import { ExpiryRules, ExpiryRulesPatch } from './expiry-settings.ts'

export { API_KEY_NAME_MAX, CreateApiKeyBody, CreatedApiKey } from './api-keys.schemas.ts'

/** Largest override accepted for any limit: far above every plan, far below 2^53. */
export const MAX_LIMIT_OVERRIDE = 1_000_000_000_000

export const PROJECT_NAME_MAX = 128
/** The longest DNS name (RFC 1035). */
export const DOMAIN_MAX = 253
/** Room for a 256 KB data-URL icon once base64 has grown it by a third, plus the JSON around it. */
export const PATCH_PROJECT_BODY_LIMIT = 512 * 1024

export const PlanName = Type.Enum([...PLAN_NAMES], { description: 'free < hobby < plus < pro < max' })

const ProjectId = Type.String({ minLength: 1, maxLength: 64, description: 'prj_…' })

export const ProjectParams = Type.Object({ id: ProjectId })
export const ProjectKeyParams = Type.Object({ id: ProjectId, key_id: Type.String({ minLength: 1, maxLength: 64, description: 'key_…' }) })

// An imported VAPID pair (issue 23), in the form `web-push generate-vapid-keys`
// prints: base64url, padding allowed. Lengths and the curve are checked by
// checkVapidKeyPair, whose errors say which. The bounds leave room for padding.
const VapidPrivate = Type.String({ minLength: 1, maxLength: 64, description: 'base64url P-256 private key (32 bytes); give it with vapid_public to import an existing pair' })
const VapidPublic = Type.String({ minLength: 1, maxLength: 128, description: 'base64url uncompressed P-256 public key (65 bytes), the point of vapid_private' })

export const VapidKeysBody = Type.Object(
  { vapid_private: VapidPrivate, vapid_public: VapidPublic },
  { additionalProperties: false },
)
export type VapidKeysBody = Static<typeof VapidKeysBody>

export const CreateProjectBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: PROJECT_NAME_MAX }),
    plan: Type.Optional(PlanName),
    domain: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: DOMAIN_MAX }), Type.Null()])),
    vapid_private: Type.Optional(VapidPrivate),
    vapid_public: Type.Optional(VapidPublic),
  },
  { additionalProperties: false },
)
export type CreateProjectBody = Static<typeof CreateProjectBody>

export const CreatedProject = Type.Object({
  id: Type.String(),
  name: Type.String(),
  plan: PlanName,
  api_key: Type.String({ description: 'Shown once; only its hash is stored.' }),
  vapid_public: Type.String(),
})
export type CreatedProject = Static<typeof CreatedProject>

const LimitValue = Type.Integer({ minimum: 0, maximum: MAX_LIMIT_OVERRIDE })
const LIMIT_FIELDS = ['groups', 'subscribers', 'monthly_pushes', 'requests_per_minute'] as const
export type LimitField = (typeof LIMIT_FIELDS)[number]
export { LIMIT_FIELDS }

export const Limits = Type.Object({
  groups: Type.Integer(),
  subscribers: Type.Integer(),
  monthly_pushes: Type.Integer(),
  requests_per_minute: Type.Integer(),
})

/** The stored overrides: only the fields that differ from the plan. */
export const LimitOverrides = Type.Object({
  groups: Type.Optional(Type.Integer()),
  subscribers: Type.Optional(Type.Integer()),
  monthly_pushes: Type.Optional(Type.Integer()),
  requests_per_minute: Type.Optional(Type.Integer()),
})

/** A change to the overrides: a number sets a field, null returns it to the plan's value, absence keeps it. */
export const LimitsPatch = Type.Object(
  {
    groups: Type.Optional(Type.Union([LimitValue, Type.Null()])),
    subscribers: Type.Optional(Type.Union([LimitValue, Type.Null()])),
    monthly_pushes: Type.Optional(Type.Union([LimitValue, Type.Null()])),
    requests_per_minute: Type.Optional(Type.Union([LimitValue, Type.Null()])),
  },
  { additionalProperties: false },
)
export type LimitsPatch = Static<typeof LimitsPatch>

export const UpdateProjectBody = Type.Object(
  {
    plan: Type.Optional(PlanName),
    default_icon: Type.Optional(
      Type.Union([Type.String({ minLength: 1, description: 'HTTPS URL or PNG/JPEG/WebP data URL (square, at most 256 KB)' }), Type.Null()]),
    ),
    limits: Type.Optional(LimitsPatch),
    ...ExpiryRulesPatch,
  },
  { additionalProperties: false },
)
export type UpdateProjectBody = Static<typeof UpdateProjectBody>

export const Project = Type.Object({
  id: Type.String(),
  name: Type.String(),
  domain: Type.Union([Type.String(), Type.Null()]),
  plan: PlanName,
  default_icon: Type.Union([Type.String(), Type.Null()]),
  limits: Limits,
  limit_overrides: LimitOverrides,
  usage: Type.Object({ subscribers: Type.Integer(), pushes_this_month: Type.Integer() }),
  vapid_public: Type.String(),
  created_at: Type.Integer({ description: 'Unix ms' }),
  ...ExpiryRules,
})
export type Project = Static<typeof Project>

export const ListProjectsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
  cursor: Type.Optional(Type.String({ pattern: '^prj_[0-9a-z]{26}$', description: 'next_cursor of the previous page' })),
})
export type ListProjectsQuery = Static<typeof ListProjectsQuery>

export const ProjectList = Type.Object({
  projects: Type.Array(Project),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
})
export type ProjectList = Static<typeof ProjectList>

/** The operator sees revoked keys too. */
export const ApiKey = Type.Object({
  ...ApiKeyView.properties,
  revoked_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms, or null while the key works' }),
})
export const ApiKeyList = Type.Object({ api_keys: Type.Array(ApiKey, { description: 'Every key, revoked ones too, oldest first' }) })
export type ApiKeyList = Static<typeof ApiKeyList>
