// Webhook endpoints a project registers (decisions.md §3). Delivery and
// signing live elsewhere; this is the registration contract.
import { Type, type Static } from 'typebox'

export const WEBHOOK_EVENTS = ['delivered', 'failed', 'clicked', 'dismissed'] as const
export type WebhookEventType = (typeof WEBHOOK_EVENTS)[number]

/** Endpoints per project, active or disabled: each event fans out to all of them. */
export const MAX_WEBHOOKS_PER_PROJECT = 10
export const WEBHOOK_URL_MAX = 2048

export const WebhookEvent = Type.Enum([...WEBHOOK_EVENTS])

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: WEBHOOK_URL_MAX, description: 'HTTPS URL on a public address' }),
    events: Type.Optional(
      Type.Array(WebhookEvent, { minItems: 1, uniqueItems: true, description: 'Default: all four event types' }),
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
  url: Type.String(),
  events: Type.Array(WebhookEvent),
  status: Type.Enum(['active', 'disabled']),
  created_at: Type.Integer({ description: 'Unix ms' }),
  disabled_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms, or null while active' }),
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

export const Ok = Type.Object({ ok: Type.Literal(true) })
