// Shapes of GET /v1/me and GET /v1/vapid-public-key (decisions.md §3).
import { Type, type Static } from 'typebox'
import { PLAN_NAMES } from './plans.ts'
import { ExpiryRules, ExpiryRulesPatch } from './expiry-settings.ts'
import { LOCAL_TIME_PATTERN } from '../broadcasts/local-time.ts'

/** Quiet hours as set and shown (docs/timing.md). */
export const QuietHoursSchema = Type.Object(
  {
    start: Type.String({ pattern: LOCAL_TIME_PATTERN, description: 'Local time the window opens, HH:MM (included).' }),
    end: Type.String({ pattern: LOCAL_TIME_PATTERN, description: 'Local time it closes, HH:MM (excluded); before start: the window wraps midnight (22:00 to 08:00).' }),
  },
  { additionalProperties: false },
)
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
    default_timezone: Type.String({ description: "IANA zone of subscribers without one (local-time delivery, quiet hours). Default UTC." }),
    quiet_hours: Type.Union([QuietHoursSchema, Type.Null()], {
      description: "Pushes that would reach a subscriber inside this window (their local time) are held until it ends, never dropped; sends with urgency high or ignore_quiet_hours go through. null: none.",
    }),
    limits: EffectiveLimits,
    frequency_caps: Type.Array(FrequencyCapRule, {
      description: "The project's frequency caps (docs/frequency-caps.md); [] when none.",
    }),
    usage: Type.Object({
      subscribers: Type.Integer({ description: 'Active subscribers now.' }),
      pushes_this_month: Type.Integer({ description: 'Pushes counted against the cap in the current calendar month (UTC).' }),
    }),
    ...ExpiryRules,
  }),
})
export type MeResponse = Static<typeof MeResponse>

/**
 * PATCH /v1/me: what a project's own key may change. The dashboard sets the
 * default icon, the expiry rules (issue 23), the time settings and the
 * frequency caps (issue 24) here. Any of the fields, at least one: before the
 * rules, default_icon was required, so an empty body is still refused.
 */
export const UpdateMeBody = Type.Object(
  {
    default_icon: Type.Optional(Type.Union(
      [Type.String({ minLength: 1, description: 'HTTPS URL (at most 2048 chars) or PNG/JPEG/WebP data URL (square, at most 256 KB), hosted under /icons' }), Type.Null()],
      { description: 'Used when a send gives no notification.icon; null clears it.' },
    )),
    ...ExpiryRulesPatch,
    default_timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'IANA zone of subscribers without one, such as Europe/Paris. Omitted: unchanged.' })),
    quiet_hours: Type.Optional(Type.Union([QuietHoursSchema, Type.Null()], { description: 'The quiet hours (start and end must differ); null turns them off. Omitted: unchanged.' })),
    frequency_caps: Type.Optional(FrequencyCaps),
  },
  { additionalProperties: false, minProperties: 1 },
)
export type UpdateMeBody = Static<typeof UpdateMeBody>

export const VapidKeyQuery = Type.Object({
  project: Type.Optional(Type.String({ description: 'The project id, prj_…' })),
})

export const VapidKeyResponse = Type.Object({
  vapid_public: Type.String({ description: 'The VAPID public key (base64url).' }),
})

