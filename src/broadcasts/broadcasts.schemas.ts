// Request and response schemas of the broadcasts domain: POST /v1/send
// (api.md 4.7) and the broadcast records (decisions.md §3). The TypeScript
// types below come from these schemas.
import { Type, type Static } from 'typebox'
import { PushService } from '../subscribers/subscribers.schemas.ts'
import type { SegmentFilter } from './segment-filter.ts'
import { LOCAL_DATE_PATTERN, LOCAL_TIME_PATTERN, PAST_MODES } from './local-time.ts'
import { ON_CAPPED, SEND_CLASSES } from '../frequency-caps/caps.schemas.ts'
import { BroadcastFunnel } from './funnel.ts'

const EXTERNAL_ID = '^[A-Za-z0-9_-]+$'
const TOPIC = '^[A-Za-z0-9_-]+$'
import { CLICK_URL, MAX_ACTIONS, NotificationAction } from './notification-action.schemas.ts'
import { ExperimentInput, ExperimentView, Variants } from '../experiments/experiments.schemas.ts'
export { MAX_ACTIONS, NotificationAction }

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

/**
 * "Send a test to me" (issue 25, docs/first-use.md): the test devices of one
 * member (user_id), made by the dashboard's POST /v1/test-devices/send only;
 * POST /v1/send never accepts it (TargetInput below lists the four others).
 */
export const TestDevicesTarget = Type.Object(
  { type: Type.Literal('test_devices'), user_id: Type.String({ description: "The member (usr_…) whose own browsers received it: a send from the dashboard's \"Send a test to me\"." }) },
  { additionalProperties: false },
)

/** The target as stored and returned. */
export const Target = Type.Union([AllTarget, UserTarget, GroupTarget, SegmentTarget, TestDevicesTarget])
export type Target = Static<typeof Target>

/**
 * The target as accepted: a oneOf with an OpenAPI/Ajv discriminator, so a
 * wrong target is reported against the branch its `type` names (or as an
 * unknown type) instead of as three failed alternatives.
 */
const TargetInput = Type.Unsafe<Exclude<Target, { type: 'test_devices' }>>({
  type: 'object',
  required: ['type'],
  // Repeats the tags so an unknown type reads "target.type: must be equal to
  // one of the allowed values" before Ajv's discriminator message.
  properties: { type: { type: 'string', enum: ['all', 'user', 'group', 'segment'] } },
  discriminator: { propertyName: 'type' },
  oneOf: [AllTarget, UserTarget, GroupTarget, SegmentTarget],
})

/** The notification's fields as a send (or a template) gives them; they may hold variables (docs/templates.md). */
export const NotificationInput = Type.Object(
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
)
export type NotificationInput = Static<typeof NotificationInput>

/** A BCP 47 language tag as a key of `localized` (canonicalised, and checked, by templates/locale.ts). */
export const LOCALE_KEY = '^[A-Za-z0-9-]{1,64}$'
/** Languages one send or template may carry besides its default fields. */
export const MAX_LOCALIZED = 50
/** A variable's path as `defaults` names it. */
export const VARIABLE_PATH = '^(tags\\.[A-Za-z0-9_-]{1,64}|data\\.[A-Za-z0-9_-]{1,64}|external_id|locale)$'
/** At most this many characters in one `data` value: a notification field is at most 2048. */
export const DATA_STRING_MAX = 1024

/** One language's version of the notification: its title and body, and optionally its own click URL and buttons. */
export const LocalizedVersion = Type.Object(
  {
    title: Type.String({ minLength: 1, maxLength: 256 }),
    body: Type.String({ minLength: 1, maxLength: 2048 }),
    url: Type.Optional(Type.String({ maxLength: 2048, pattern: CLICK_URL, description: "Default: the default fields' url." })),
    actions: Type.Optional(
      Type.Array(NotificationAction, { maxItems: MAX_ACTIONS, description: "The buttons in this language; default: the default fields' actions." }),
    ),
  },
  { additionalProperties: false },
)
export type LocalizedVersion = Static<typeof LocalizedVersion>

export const Localized = Type.Record(Type.String({ pattern: LOCALE_KEY }), LocalizedVersion, {
  maxProperties: MAX_LOCALIZED,
  additionalProperties: false,
  description:
    'Versions of the notification by BCP 47 language tag ("fr", "pt-BR", "zh-Hant"), beside the default fields. Each subscriber gets the closest ' +
    "match to their locale (pt-BR, then pt, then the default fields; case-insensitive), never a forced English. At most 50.",
})
export type Localized = Static<typeof Localized>

export const VariableDefaults = Type.Record(Type.String({ pattern: VARIABLE_PATH }), Type.String({ maxLength: 256 }), {
  maxProperties: 50,
  additionalProperties: false,
  description: 'The value a variable takes for a subscriber who has none, by path: { "tags.first_name": "there" }. A default filter in the text wins over it.',
})
export type VariableDefaults = Static<typeof VariableDefaults>

export type DataValue = string | number | boolean
export const SendData = Type.Record(
  Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }),
  Type.Unsafe<DataValue>({ type: ['string', 'number', 'boolean'], maxLength: DATA_STRING_MAX, minimum: -Number.MAX_VALUE, maximum: Number.MAX_VALUE }),
  { maxProperties: 50, additionalProperties: false, description: 'Values of this send, read as `{{ data.<key> }}`: strings (at most 1024 characters), numbers or booleans; at most 50.' },
)
export type SendData = Static<typeof SendData>

/** What a variable without a value (nor a default) does: print empty, skip that subscriber, or refuse the send where it can be known. */
export const MISSING_POLICIES = ['default', 'skip_subscriber', 'fail'] as const
export type MissingPolicy = (typeof MISSING_POLICIES)[number]
/** What a rendered title, body or button text over its limit does: cut it ("…"), or skip that subscriber. */
export const TOO_LONG_POLICIES = ['truncate', 'skip'] as const
export type TooLongPolicy = (typeof TOO_LONG_POLICIES)[number]

/** The send's fields about variables and languages (docs/templates.md). */
const PersonalizationFields = {
  template_id: Type.Optional(Type.String({ maxLength: 64, description: 'A saved template (tpl_…) whose fields, defaults and languages this send uses; then leave notification out.' })),
  data: Type.Optional(SendData),
  defaults: Type.Optional(VariableDefaults),
  localized: Type.Optional(Localized),
  missing: Type.Optional(
    // No schema default: a default would be written into every validated body, changing the Idempotency-Key hash of sends that do not use it.
    Type.Enum(MISSING_POLICIES, {
      description:
        'A variable a subscriber has no value for, and no default: "default" prints it empty; "skip_subscriber" sends that subscriber nothing ' +
        '(counted in failures.skipped); "fail" also refuses the send (400 missing_variable) when a data variable is missing. Default "default".',
    }),
  ),
  on_too_long: Type.Optional(
    Type.Enum(TOO_LONG_POLICIES, {
      description: 'A rendered title (256), body (2048) or button text (64) over its limit, or a push over 4 KB: "truncate" cuts it and ends it with "…"; "skip" sends that subscriber nothing. Default "truncate".',
    }),
  ),
}

export const SendBody = Type.Object(
  {
    target: TargetInput,
    notification: Type.Optional(NotificationInput),
    ...PersonalizationFields,
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
    deliver_at_local: Type.Optional(
      Type.String({
        pattern: LOCAL_TIME_PATTERN,
        description:
          "Local-time delivery (docs/timing.md): each subscriber gets the push when the clocks of their time zone show this time, HH:MM or HH:MM:SS " +
          "(the subscriber's timezone, or the project's default_timezone when they have none). With deliver_on, on that date; without, the next time it comes " +
          '(today if still ahead there, else tomorrow). Plus plan or higher; not with scheduled_at. A time the clocks skip (spring forward) is the first instant after the jump; ' +
          'a time that happens twice (fall back) is the earlier one.',
      }),
    ),
    deliver_on: Type.Optional(
      Type.String({
        pattern: LOCAL_DATE_PATTERN,
        description: 'With deliver_at_local: the local date, YYYY-MM-DD, from yesterday (UTC) to 90 days ahead. Where it has already passed, past says what happens.',
      }),
    ),
    past: Type.Optional(
      Type.Enum([...PAST_MODES], {
        description:
          'With deliver_on: for subscribers whose deliver_on at deliver_at_local has already passed when the broadcast starts. next_day (default): the same time on the next day it lies ahead; ' +
          'now: at once; skip: not at all (counted in the broadcast\'s skipped).',
      }),
    ),
    ignore_quiet_hours: Type.Optional(
      // No schema default: Ajv would write it into the body, whose hash an Idempotency-Key is checked against.
      Type.Boolean({ description: "true: the project's quiet hours do not hold this send's pushes (as urgency high). Default false." }),
    ),
    // No schema default for class and on_capped: Ajv would write it into the
    // body, and the body's hash is what an Idempotency-Key is checked against,
    // so a retry of a send made before these fields existed would become 422.
    class: Type.Optional(
      Type.Enum([...SEND_CLASSES], {
        description:
          "marketing: the project's frequency_caps apply (docs/frequency-caps.md). transactional (an order confirmation, a password code): never capped, " +
          'but its pushes count towards the caps of later marketing sends. Default marketing, which changes nothing for a project without caps.',
      }),
    ),
    on_capped: Type.Optional(
      Type.Enum([...ON_CAPPED], {
        description:
          'A marketing send, for a subscriber a cap would take over: skip (the push fails with reason capped) or defer (it is sent when the window allows it, ' +
          'the broadcast staying sending until then). Default skip.',
      }),
    ),
    // An A/B test (docs/experiments.md); no schema defaults (experiments/experiment-send.ts applies them).
    variants: Type.Optional(Variants),
    experiment: Type.Optional(ExperimentInput),
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
 * came within the TTL and the retries, a personalized broadcast skipped the
 * subscriber (docs/templates.md), it was never sent because a frequency cap
 * of the project would have been exceeded (docs/frequency-caps.md), or
 * (issue 23) the push service said the VAPID key is not the one the
 * subscription was made with (Apple 400 VapidPkHashMismatch, FCM 403,
 * Mozilla 401).
 */
export const FAIL_REASONS = ['gone', 'rejected', 'unreachable', 'skipped', 'capped', 'vapid_key_mismatch'] as const
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
    { gone: Count, rejected: Count, unreachable: Count, skipped: Count, capped: Count, vapid_key_mismatch: Count },
    { description: 'failed by reason; they add up to failed. skipped: subscribers a personalized broadcast sent nothing to (docs/templates.md); capped: skipped for a frequency cap (never sent); vapid_key_mismatch: the push service refused the VAPID key as not the one the subscription was made with (counted under rejected before issue 23).' },
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
  personalization: Type.Optional(
    Type.Object(
      {
        template_id: NullableString,
        data: SendData,
        defaults: VariableDefaults,
        localized: Localized,
        missing: Type.Enum(MISSING_POLICIES),
        on_too_long: Type.Enum(TOO_LONG_POLICIES),
      },
      { description: 'How this broadcast was rendered per subscriber (docs/templates.md); absent for one that sent everyone the same push. notification then holds the default fields as written, variables and all.' },
    ),
  ),
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
  shown: Type.Integer({ minimum: 0, description: "Notifications Herald's service worker reported displayed (docs/funnel.md)." }),
  funnel: BroadcastFunnel,
  ...BroadcastProgress,
  capped: Type.Integer({ minimum: 0, description: "Subscribers skipped because a frequency cap of the project would have been exceeded (docs/frequency-caps.md): of failed, the same as failures.capped." }),
  class: Type.Enum([...SEND_CLASSES], { description: "The send's class: marketing (capped) or transactional (not capped, counted)." }),
  on_capped: Type.Enum([...ON_CAPPED], { description: 'What this send did with a subscriber over a cap: skip or defer.' }),
  throttle_per_minute: Type.Union([Type.Integer(), Type.Null()], { description: "The send's throttle_per_minute; null when not throttled." }),
  expected_finish_at: Type.Union([Type.Integer(), Type.Null()], {
    description:
      'Unix ms when a throttled broadcast should have pushed to its whole audience (its audience at the throttled rate, from when it fires; ' +
      'while sending, from the slots still to hand out); null when not throttled or once it is over.',
  }),
  deliver_at_local: NullableString,
  deliver_on: NullableString,
  past: Type.Union([Type.Enum([...PAST_MODES]), Type.Null()], { description: "The send's past; null when it gave none (next_day applies with a deliver_on)." }),
  ignore_quiet_hours: Type.Boolean(),
  waiting: Type.Array(
    Type.Object({
      at: Type.Integer({ description: 'Unix ms: when these pushes are due.' }),
      reason: Type.Union([Type.Literal('local_time'), Type.Literal('quiet_hours')], {
        description: "local_time: waiting for deliver_at_local in their zone; quiet_hours: held until the project's quiet hours end in their zone.",
      }),
      count: Type.Integer({ minimum: 0, description: 'Subscribers in this wave when it was planned.' }),
    }),
    { description: 'While sending: the pushes not yet started, by due time, earliest first; their counts are part of pending. [] otherwise.' },
  ),
  held: Type.Integer({ minimum: 0, description: "Of waiting, those held by the project's quiet hours." }),
  skipped: Type.Integer({ minimum: 0, description: 'Subscribers not pushed because their local time had passed (past: skip); not in audience.' }),
  // Absent without variants: the view of a broadcast without a test is what it was before tests existed.
  experiment: Type.Optional(ExperimentView),
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

