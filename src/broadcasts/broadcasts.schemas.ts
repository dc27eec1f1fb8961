// Request and response schemas of the broadcasts domain: POST /v1/send
// (api.md 4.7) and the broadcast records (decisions.md §3). The TypeScript
// types below come from these schemas.
import { Type, type Static } from 'typebox'

const EXTERNAL_ID = '^[A-Za-z0-9_-]+$'
const TOPIC = '^[A-Za-z0-9_-]+$'
/**
 * notification.url: an absolute http(s) URL, or a path on the customer's site
 * ("/", "/sale?x=1"). "//host" is refused: it looks like a path but names
 * another host.
 */
const CLICK_URL = '^(https?://[^\\s/?#]+[^\\s]*|/(?!/)[^\\s]*)$'

export const MAX_TTL = 2_419_200
export const DEFAULT_TTL = 86_400
export const URGENCIES = ['very-low', 'low', 'normal', 'high'] as const
export const BROADCAST_STATUSES = ['scheduled', 'pending', 'sending', 'sent', 'failed', 'canceled'] as const

export const AllTarget = Type.Object({ type: Type.Literal('all') }, { additionalProperties: false })
export const UserTarget = Type.Object(
  {
    type: Type.Literal('user'),
    external_id: Type.String({ minLength: 1, maxLength: 256, pattern: EXTERNAL_ID }),
  },
  { additionalProperties: false },
)
export const GroupTarget = Type.Object(
  { type: Type.Literal('group'), group_id: Type.String({ description: 'A group id, grp_…' }) },
  { additionalProperties: false },
)

/** The target as stored and returned. */
export const Target = Type.Union([AllTarget, UserTarget, GroupTarget])
export type Target = Static<typeof Target>

/**
 * The target as accepted: a oneOf with an OpenAPI/Ajv discriminator, so a
 * wrong target is reported against the branch its `type` names (or as an
 * unknown type) instead of as three failed alternatives.
 */
const TargetInput = Type.Unsafe<Target>({
  type: 'object',
  required: ['type'],
  // Repeats the tags so an unknown type reads "target.type: must be equal to
  // one of the allowed values" before Ajv's discriminator message.
  properties: { type: { type: 'string', enum: ['all', 'user', 'group'] } },
  discriminator: { propertyName: 'type' },
  oneOf: [AllTarget, UserTarget, GroupTarget],
})

export const SendBody = Type.Object(
  {
    target: TargetInput,
    notification: Type.Object(
      {
        title: Type.String({ minLength: 1, maxLength: 256 }),
        body: Type.String({ minLength: 1, maxLength: 2048 }),
        icon: Type.Optional(
          Type.String({ description: 'HTTPS URL (at most 2048 chars) or a PNG/JPEG/WebP data URL (at most 256 KB, square).' }),
        ),
        image: Type.Optional(
          Type.String({ description: 'Hobby plan or higher. HTTPS URL (at most 2048 chars) or a PNG/JPEG/WebP data URL (at most 1 MB).' }),
        ),
        url: Type.Optional(
          Type.String({ maxLength: 2048, pattern: CLICK_URL, description: 'Absolute http(s) URL or a path starting with /. Default /.' }),
        ),
      },
      { additionalProperties: false },
    ),
    ttl: Type.Optional(Type.Number({ minimum: 0, maximum: MAX_TTL, default: DEFAULT_TTL, description: 'Seconds, 0-2419200 (a fraction is rounded down: the TTL header is whole seconds). Default 86400.' })),
    urgency: Type.Optional(Type.Enum(URGENCIES, { default: 'normal' })),
    topic: Type.Optional(Type.String({ minLength: 1, maxLength: 32, pattern: TOPIC })),
    scheduled_at: Type.Optional(Type.Number({ description: 'Unix ms. Plus plan or higher; in the future and within 90 days.' })),
  },
  { additionalProperties: false },
)
export type SendBody = Static<typeof SendBody>

/** Where a send came from, recorded as the broadcast's source (decisions.md §3: api or dashboard). */
export const BROADCAST_SOURCES = ['api', 'dashboard'] as const
export type BroadcastSource = (typeof BROADCAST_SOURCES)[number]

export const SendHeaders = Type.Object({
  'x-herald-source': Type.Optional(
    Type.Enum([...BROADCAST_SOURCES], { description: "The broadcast's source: Herald's dashboard sends dashboard. Default api." }),
  ),
})

export const SendResponse = Type.Object({
  broadcast_id: Type.String(),
  scheduled_at: Type.Optional(Type.Integer()),
})
export type SendResponse = Static<typeof SendResponse>

const NullableString = Type.Union([Type.String(), Type.Null()])
const NullableTime = Type.Union([Type.Integer(), Type.Null()])

export const BroadcastView = Type.Object({
  id: Type.String(),
  status: Type.Enum(BROADCAST_STATUSES),
  source: Type.Enum([...BROADCAST_SOURCES]),
  target: Target,
  notification: Type.Object({
    title: Type.String(),
    body: Type.String(),
    icon: NullableString,
    image: NullableString,
    url: Type.String(),
  }),
  ttl: Type.Integer(),
  urgency: Type.String(),
  topic: NullableString,
  audience: Type.Integer(),
  delivered: Type.Integer(),
  failed: Type.Integer(),
  clicked: Type.Integer(),
  dismissed: Type.Integer(),
  /** Why a failed broadcast failed (e.g. the monthly cap at fire time); null otherwise. */
  failure_reason: NullableString,
  scheduled_at: NullableTime,
  started_at: NullableTime,
  finished_at: NullableTime,
  created_at: Type.Integer(),
})
export type BroadcastView = Static<typeof BroadcastView>

export const BroadcastIdParams = Type.Object({ id: Type.String() })

export const ListBroadcastsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
  cursor: Type.Optional(Type.String({ pattern: '^bdc_[0-9a-z]{26}$', description: 'next_cursor of the previous page.' })),
  status: Type.Optional(Type.Enum(BROADCAST_STATUSES)),
})
export type ListBroadcastsQuery = Static<typeof ListBroadcastsQuery>

export const ListBroadcastsResponse = Type.Object({
  broadcasts: Type.Array(BroadcastView),
  next_cursor: NullableString,
})

export const Ok = Type.Object({ ok: Type.Boolean() })

/** decisions.md §1; extra fields (issues, limit, audience, request_id) pass through. */
export const ErrorBody = Type.Object({
  error: Type.Object({ code: Type.String(), message: Type.String() }, { additionalProperties: true }),
})
