// Webhook endpoints a project registers (decisions.md §3). Delivery and
// signing live elsewhere; this is the registration contract.
import { Type, type Static } from 'typebox'

export const WEBHOOK_EVENTS = ['delivered', 'failed', 'clicked', 'dismissed', 'shown'] as const
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number]
/**
 * What an endpoint registered without `events` gets: the four of decisions.md
 * §3. `shown` (issue 25) is opt-in only: one per notification displayed, and a
 * handler written before it existed may reject a type it does not know.
 */
export const DEFAULT_WEBHOOK_EVENTS: readonly WebhookEventType[] = ['delivered', 'failed', 'clicked', 'dismissed']

/** Endpoints per project, active or disabled: each event fans out to all of them. */
export const MAX_WEBHOOKS_PER_PROJECT = 10
export const WEBHOOK_URL_MAX = 2048

export const WebhookEvent = Type.Enum([...WEBHOOK_EVENTS])

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: WEBHOOK_URL_MAX, description: 'HTTPS URL on a public address' }),
    events: Type.Optional(
      Type.Array(WebhookEvent, { minItems: 1, uniqueItems: true, description: 'Default: delivered, failed, clicked and dismissed; shown only when listed (docs/funnel.md)' }),
    ),
  },
  { additionalProperties: false },
)
export type CreateWebhookBody = Static<typeof CreateWebhookBody>

export const CreatedWebhook = Type.Object({
  id: Type.String({ description: 'whk_…' }),
  url: Type.String(),
  events: Type.Array(WebhookEvent),
  secret: Type.String({ description: 'whsec_ + base64 of 32 bytes, for Standard Webhooks signatures. Shown once.' }),
})
export type CreatedWebhook = Static<typeof CreatedWebhook>

export const Webhook = Type.Object({
  id: Type.String(),
  url: Type.String({
    description: 'The endpoint URL, whole only for owners, admins and API keys of scope full or webhooks (who may change webhooks): its path or query may hold a secret. Others get the origin and "/…" (https://hooks.example.com/…); a masked value always contains "…".',
  }),
  events: Type.Array(WebhookEvent),
  status: Type.Enum(['active', 'disabled'], { description: 'disabled: nothing is sent (see disabled_reason); PATCH { enabled: true } resumes' }),
  created_at: Type.Integer({ description: 'Unix ms' }),
  disabled_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms, or null while active' }),
  disabled_reason: Type.Union([Type.String(), Type.Null()], {
    description: "Why, in words: 'the endpoint answered 410 Gone', 'every attempt failed for 5 days (…)', 'disabled by the owner'; null while active",
  }),
})
export type Webhook = Static<typeof Webhook>

export const ListWebhooksQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
  cursor: Type.Optional(Type.String({ pattern: '^whk_[0-9a-z]{26}$', description: 'next_cursor of the previous page' })),
})
export type ListWebhooksQuery = Static<typeof ListWebhooksQuery>

export const WebhookList = Type.Object({
  webhooks: Type.Array(Webhook),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
})
export type WebhookList = Static<typeof WebhookList>

export const WebhookParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64, description: 'whk_…' }) })

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Type.String({ minLength: 1, maxLength: WEBHOOK_URL_MAX, description: 'HTTPS URL on a public address (checked as on create)' })),
    events: Type.Optional(Type.Array(WebhookEvent, { minItems: 1, uniqueItems: true })),
    enabled: Type.Optional(
      Type.Boolean({ description: 'false disables (pending deliveries wait); true resumes those still within their retry window' }),
    ),
  },
  { additionalProperties: false, minProperties: 1, description: 'At least one of url, events, enabled' },
)
export type UpdateWebhookBody = Static<typeof UpdateWebhookBody>

export const ListDeliveriesQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
  cursor: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,17}$', description: 'next_cursor of the previous page' })),
})
export type ListDeliveriesQuery = Static<typeof ListDeliveriesQuery>

export const DeliveryAttempt = Type.Object({
  id: Type.String({ description: 'The attempt, a decimal number; newer attempts have larger ones' }),
  event_id: Type.String({ description: 'evt_…, the webhook-id header of the request' }),
  event_type: Type.String({ description: 'delivered, failed, clicked, dismissed, or test' }),
  attempt: Type.Integer({ minimum: 1, description: '1 for the first attempt of the event, 2 for its first retry …' }),
  outcome: Type.Enum(['delivered', 'failed', 'retrying'], {
    description: 'delivered: 2xx; retrying: failed, tried again at next_attempt_at (null while the endpoint is disabled); failed: given up',
  }),
  response_status: Type.Union([Type.Integer(), Type.Null()], { description: "The endpoint's HTTP status, or null when it gave no answer" }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why there was no answer (timeout, connection refused, DNS …), else null' }),
  duration_ms: Type.Integer({ minimum: 0 }),
  attempted_at: Type.Integer({ description: 'Unix ms' }),
  next_attempt_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms of the retry this attempt scheduled, or null' }),
})
export type DeliveryAttempt = Static<typeof DeliveryAttempt>

export const DeliveryAttemptList = Type.Object({
  deliveries: Type.Array(DeliveryAttempt),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
})
export type DeliveryAttemptList = Static<typeof DeliveryAttemptList>

export const TestResult = Type.Object({
  delivered: Type.Boolean({ description: 'The endpoint answered 2xx' }),
  response_status: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why there was no answer, else null' }),
  duration_ms: Type.Integer({ minimum: 0 }),
})
export type TestResult = Static<typeof TestResult>

export const RotatedSecret = Type.Object({
  secret: Type.String({ description: 'The new whsec_ secret. Shown once.' }),
  previous_secret_expires_at: Type.Integer({ description: 'Unix ms until which deliveries also carry a signature with the previous secret' }),
})
export type RotatedSecret = Static<typeof RotatedSecret>

