// Request and response schemas of the broadcasts domain: POST /v1/send
// (api.md 4.7) and the broadcast records (decisions.md §3). The TypeScript
// types below come from these schemas.
import { Type, type Static } from 'typebox'
import { PushService } from '../subscribers/subscribers.schemas.ts'
import type { SegmentFilter } from './segment-filter.ts'

const EXTERNAL_ID = '^[A-Za-z0-9_-]+$'
const TOPIC = '^[A-Za-z0-9_-]+$'
/**
 * notification.url: an absolute http(s) URL, or a path on the customer's site
 * ("/", "/sale?x=1"). "//host" is refused: it looks like a path but names
 * another host.
 */
const CLICK_URL = '^(https?://[^\\s/?#]+[^\\s]*|/(?!/)[^\\s]*)$'
/** An action button's id: what the service worker reports back when it is clicked. */
const ACTION = '^[A-Za-z0-9_-]+$'
/** Chrome shows at most 2 action buttons (Notification.maxActions), as do OneSignal and PushAlert. */
export const MAX_ACTIONS = 2

/** One action button of a notification (docs/decisions.md "Action buttons"). */
export const NotificationAction = Type.Object(
  {
    action: Type.String({ minLength: 1, maxLength: 32, pattern: ACTION, description: 'Its id, unique in the notification: clicks on it are counted under it.' }),
    title: Type.String({ minLength: 1, maxLength: 64, description: 'The button text.' }),
    url: Type.Optional(
      Type.String({ maxLength: 2048, pattern: CLICK_URL, description: "Opened on a click on this button: absolute http(s) URL or a path starting with /. Default: the notification's url." }),
    ),
  },
  { additionalProperties: false },
)
export type NotificationAction = Static<typeof NotificationAction>

export const MAX_TTL = 2_419_200
/** throttle_per_minute: one push a second at the least, as the issue asks. */
export const MIN_THROTTLE_PER_MINUTE = 60
/**
 * And 10,000 pushes a second at the most: about twice what one worker sends
 * (docs/performance.md), so a larger figure would throttle nothing.
 */
export const MAX_THROTTLE_PER_MINUTE = 600_000
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

/**
 * The schema only asks for an object: segment-filter.ts checks the grammar
 * and names the wrong field (a recursive schema would report every
 * alternative failing at every level). Returned as stored.
 */
const SegmentFilterSchema = Type.Unsafe<SegmentFilter>({
  type: 'object',
  additionalProperties: true,
  description:
    'An expression tree (docs/segments.md). Nodes: `{ and: [...] }`, `{ or: [...] }`, `{ not: {...} }`. Leaves: ' +
    '`{ tag: "age", gt: 10 }` with one of eq, ne, in (array), exists (boolean), or one or more of gt, gte, lt, lte (numbers only); ' +
    '`{ group_id: "grp_…" }`; `{ external_id: "alice" }` or `{ external_id: { exists: true } }`; ' +
    '`{ created_at: { gte: <Unix ms> } }` and the same for last_seen_at (gt, gte, lt, lte); `{ push_service: "fcm" }`. ' +
    'Values are typed (10 is not "10"); ne matches a tag present with another value; not is the complement among active subscribers. ' +
    'At most 8 levels deep, 100 leaves, 100 values in an in list.',
})
export const SegmentTarget = Type.Object(
  { type: Type.Literal('segment'), filter: SegmentFilterSchema },
  { additionalProperties: false },
)

/** The target as stored and returned. */
export const Target = Type.Union([AllTarget, UserTarget, GroupTarget, SegmentTarget])
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
  properties: { type: { type: 'string', enum: ['all', 'user', 'group', 'segment'] } },
  discriminator: { propertyName: 'type' },
  oneOf: [AllTarget, UserTarget, GroupTarget, SegmentTarget],
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
        actions: Type.Optional(
          Type.Array(NotificationAction, { maxItems: MAX_ACTIONS, description: 'Up to 2 action buttons, each action id unique.' }),
        ),
      },
      { additionalProperties: false },
    ),
    ttl: Type.Optional(Type.Number({ minimum: 0, maximum: MAX_TTL, default: DEFAULT_TTL, description: 'Seconds, 0-2419200 (a fraction is rounded down: the TTL header is whole seconds). Default 86400.' })),
    urgency: Type.Optional(Type.Enum(URGENCIES, { default: 'normal' })),
    topic: Type.Optional(Type.String({ minLength: 1, maxLength: 32, pattern: TOPIC })),
    scheduled_at: Type.Optional(Type.Number({ description: 'Unix ms. Plus plan or higher; in the future and within 90 days.' })),
    throttle_per_minute: Type.Optional(
      Type.Integer({
        minimum: MIN_THROTTLE_PER_MINUTE,
        maximum: MAX_THROTTLE_PER_MINUTE,
        description:
          'At most this many pushes a minute for this broadcast, across all workers, retries included (60 to 600000; ' +
          'a scheduled broadcast keeps it when it fires). Spreads the clicks a big audience sends to your site. Default: as fast as Herald goes.',
      }),
    ),
    dry_run: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'true: check the send as a real one would (same errors) and answer 200 with its audience, payload size and warnings; nothing is created, stored or counted. Default false.',
      }),
    ),
  },
  { additionalProperties: false },
)
export type SendBody = Static<typeof SendBody>

/** Where a send came from, recorded as the broadcast's source (decisions.md §3: api or dashboard). */
export const BROADCAST_SOURCES = ['api', 'dashboard'] as const
export type BroadcastSource = (typeof BROADCAST_SOURCES)[number]

/** Idempotency-Key: 1-255 printable ASCII characters (space to tilde), as Stripe and the IETF draft allow. */
export const IDEMPOTENCY_KEY = '^[\\x20-\\x7E]+$'

export const SendHeaders = Type.Object({
  'x-herald-source': Type.Optional(
    Type.Enum([...BROADCAST_SOURCES], { description: "The broadcast's source: Herald's dashboard sends dashboard. Default api." }),
  ),
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: IDEMPOTENCY_KEY,
      description:
        'Makes retries safe: the first answer is stored for 24 hours per project and key and given again (header Idempotent-Replayed: true) ' +
        'to a retry with the same body, so however many retries arrive, one broadcast is created. The same key with another body is 422 ' +
        'idempotency_key_reused; while the first request runs, 409 idempotency_key_in_progress. Refused requests are not stored, and dry runs ignore the key. ' +
        '1-255 printable ASCII characters; a UUID is a good choice.',
    }),
  ),
})

export const SendResponse = Type.Object({
  broadcast_id: Type.String(),
  scheduled_at: Type.Optional(Type.Integer()),
})
export type SendResponse = Static<typeof SendResponse>

const NullableString = Type.Union([Type.String(), Type.Null()])
const NullableTime = Type.Union([Type.Integer(), Type.Null()])

/**
 * Why a push failed for good: the subscription is gone (404/410), the push
 * service refused it (another 4xx, or keys no push service takes), no answer
 * came within the TTL and the retries, or (issue 23) the push service said the
 * VAPID key is not the one the subscription was made with (Apple 400
 * VapidPkHashMismatch, FCM 403, Mozilla 401).
 */
export const FAIL_REASONS = ['gone', 'rejected', 'unreachable', 'vapid_key_mismatch'] as const
export type FailReason = (typeof FAIL_REASONS)[number]

/** The reason codes of last_error (decisions.md "Broadcast progress and stop"). */
export const PUSH_ERROR_REASONS = [
  'gone',
  'rejected',
  'payload_too_large',
  'rate_limited',
  'server_error',
  'timeout',
  'network_error',
  'private_address',
  'invalid_subscription',
  'vapid_key',
  'vapid_key_mismatch',
] as const
export type PushErrorReason = (typeof PUSH_ERROR_REASONS)[number]

const Count = Type.Integer({ minimum: 0 })
const PushServiceCounts = Type.Object({ delivered: Count, failed: Count, retrying: Count })

const BroadcastProgress = {
  pending: Type.Integer({ minimum: 0, description: 'Audience members not yet attempted; once the broadcast is no longer sending (stopped or failed), every push that will not be sent, those whose retry was canceled included. delivered + failed + pending + retrying = audience.' }),
  retrying: Type.Integer({ minimum: 0, description: 'Pushes waiting for a retry after a 429, a 5xx or no answer. Only a sending broadcast retries: 0 once it is stopped or failed.' }),
  failures: Type.Object(
    { gone: Count, rejected: Count, unreachable: Count, vapid_key_mismatch: Count },
    { description: 'failed by reason; they add up to failed. vapid_key_mismatch: the push service refused the VAPID key as not the one the subscription was made with (counted under rejected before issue 23).' },
  ),
  by_push_service: Type.Object(
    { fcm: PushServiceCounts, mozilla: PushServiceCounts, apple: PushServiceCounts, wns: PushServiceCounts, other: PushServiceCounts },
    { description: "delivered, failed and retrying by the subscriber's push service (every one always present)." },
  ),
  last_error: Type.Union([
    Type.Object({
      status: Type.Union([Type.Integer(), Type.Null()], { description: "The push service's HTTP status; null when it never answered or nothing was sent." }),
      reason: Type.Enum([...PUSH_ERROR_REASONS]),
      push_service: PushService,
      at: Type.Integer({ description: 'Unix ms' }),
    }),
    Type.Null(),
  ], { description: 'The latest push of this broadcast that was not delivered, retried ones included; null when none.' }),
  next_attempt_at: Type.Union([Type.Integer(), Type.Null()], { description: "Unix ms when this broadcast's next retry is due; null when none is queued or it is no longer sending." }),
}

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
    // Absent without actions: the view of a broadcast without them is what it was before they existed.
    actions: Type.Optional(Type.Array(NotificationAction, { description: 'The action buttons as sent; absent when none.' })),
  }),
  ttl: Type.Integer(),
  urgency: Type.String(),
  topic: NullableString,
  audience: Type.Integer(),
  delivered: Type.Integer(),
  failed: Type.Integer(),
  clicked: Type.Integer(),
  clicked_by_action: Type.Record(Type.String(), Type.Integer({ minimum: 0 }), {
    description: 'Clicks on each action button, by action id (every action of the notification, 0 included); the rest of clicked were on the notification itself. {} without actions.',
  }),
  dismissed: Type.Integer(),
  ...BroadcastProgress,
  throttle_per_minute: Type.Union([Type.Integer(), Type.Null()], { description: "The send's throttle_per_minute; null when not throttled." }),
  expected_finish_at: Type.Union([Type.Integer(), Type.Null()], {
    description:
      'Unix ms when a throttled broadcast should have pushed to its whole audience (its audience at the throttled rate, from when it fires; ' +
      'while sending, from the slots still to hand out); null when not throttled or once it is over.',
  }),
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

