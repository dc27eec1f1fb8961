// Shapes of GET /v1/me and GET /v1/vapid-public-key (decisions.md §3).
import { Type, type Static } from 'typebox'
import { PLAN_NAMES } from './plans.ts'
import { FrequencyCapRule, FrequencyCaps } from '../frequency-caps/caps.schemas.ts'

const EffectiveLimits = Type.Object(
  {
    groups: Type.Integer(),
    subscribers: Type.Integer(),
    monthly_pushes: Type.Integer(),
    requests_per_minute: Type.Integer(),
  },
  { description: "The plan's numbers with this project's overrides applied." },
)

export const MeResponse = Type.Object({
  project: Type.Object({
    id: Type.String({ description: 'prj_…' }),
    name: Type.String(),
    domain: Type.Union([Type.String(), Type.Null()]),
    vapid_public: Type.String({ description: 'The VAPID public key (base64url), the applicationServerKey for pushManager.subscribe.' }),
    plan: Type.Enum([...PLAN_NAMES]),
    default_icon: Type.Union([Type.String(), Type.Null()], { description: 'Used when a send gives no notification.icon.' }),
    limits: EffectiveLimits,
    frequency_caps: Type.Array(FrequencyCapRule, {
      description: "The project's frequency caps (docs/frequency-caps.md); [] when none.",
    }),
    usage: Type.Object({
      subscribers: Type.Integer({ description: 'Active subscribers now.' }),
      pushes_this_month: Type.Integer({ description: 'Pushes counted against the cap in the current calendar month (UTC).' }),
    }),
  }),
})
export type MeResponse = Static<typeof MeResponse>

/**
 * PATCH /v1/me: what a project's own key may change. The dashboard sets the
 * default icon and the frequency caps here. A field left out is left as it is.
 */
export const UpdateMeBody = Type.Object(
  {
    default_icon: Type.Optional(Type.Union(
      [Type.String({ minLength: 1, description: 'HTTPS URL (at most 2048 chars) or PNG/JPEG/WebP data URL (square, at most 256 KB), hosted under /icons' }), Type.Null()],
      { description: 'Used when a send gives no notification.icon; null clears it.' },
    )),
    frequency_caps: Type.Optional(FrequencyCaps),
  },
  { additionalProperties: false, minProperties: 1, description: 'At least one of default_icon, frequency_caps.' },
)
export type UpdateMeBody = Static<typeof UpdateMeBody>

export const VapidKeyQuery = Type.Object({
  project: Type.Optional(Type.String({ description: 'The project id, prj_…' })),
})

export const VapidKeyResponse = Type.Object({
  vapid_public: Type.String({ description: 'The VAPID public key (base64url).' }),
})

