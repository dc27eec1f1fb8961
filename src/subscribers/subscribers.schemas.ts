// Request and response shapes of subscribe/unsubscribe (api.md 4.8, 4.9) and
// of the /v1/subscribers resource (decisions.md §3).
import { Type, type Static } from 'typebox'

/** api.md §8. */
export const ENDPOINT_MAX = 2048
export const KEY_MAX = 256
export const EXTERNAL_ID_MAX = 256
export const GROUP_IDS_MAX = 50

const BASE64URL = '^[A-Za-z0-9_-]+={0,2}$'
export const EXTERNAL_ID_PATTERN = '^[A-Za-z0-9_-]+$'

export const ExternalId = Type.String({
  minLength: 1,
  maxLength: EXTERNAL_ID_MAX,
  pattern: EXTERNAL_ID_PATTERN,
  description: 'The customer’s own user id: A-Z a-z 0-9 _ - only.',
})

/** Issue 12: at most 50 tags a subscriber, keys 1-64 of A-Z a-z 0-9 _ -, strings at most 256 characters. */
export const TAGS_MAX = 50
export const TAG_KEY_PATTERN = '^[A-Za-z0-9_-]{1,64}$'
export const TAG_STRING_MAX = 256

/** ?tag= of the list: a key, then optionally a colon and the value as text (colons allowed in it). */
export const TAG_FILTER_PATTERN = `^[A-Za-z0-9_-]{1,64}(:[\\s\\S]{0,${TAG_STRING_MAX}})?$`

export type TagValue = string | number | boolean
/**
 * One type list rather than an anyOf, so that a wrong value gives one issue
 * ("must be string,number,boolean") instead of three failed alternatives;
 * maxLength only applies to strings.
 */
export const TagValue = Type.Unsafe<TagValue>({
  type: ['string', 'number', 'boolean'],
  maxLength: TAG_STRING_MAX,
  // A JSON number past double range (1e400) parses to Infinity, which Ajv
  // takes for a number and JSON.stringify turns into null: refused here.
  minimum: -Number.MAX_VALUE,
  maximum: Number.MAX_VALUE,
})

function tagsSchema<V extends Parameters<typeof Type.Record>[1]>(value: V, description: string) {
  return Type.Record(Type.String({ pattern: TAG_KEY_PATTERN }), value, { maxProperties: TAGS_MAX, additionalProperties: false, description })
}

/** Tags as given at subscribe and stored on the subscriber. */
export const Tags = tagsSchema(
  TagValue,
  'Up to 50 keys (1-64 of A-Z a-z 0-9 _ -), each a string (at most 256 characters), a number or a boolean. Typed: 10 and "10" are different values.',
)
export type Tags = Static<typeof Tags>

/** The push service of a subscription, from its endpoint's host (migration 0006): apple is web.push.apple.com, wns Microsoft's. */
export const PUSH_SERVICES = ['fcm', 'mozilla', 'apple', 'wns', 'other'] as const
export const PushService = Type.Union([
  Type.Literal('fcm'), Type.Literal('mozilla'), Type.Literal('apple'), Type.Literal('wns'), Type.Literal('other'),
], {
  description: "The subscription's push service, from its endpoint's host: fcm, mozilla, apple, wns, or other.",
})
export type PushService = Static<typeof PushService>

export const SubscriberStatus = Type.Union([Type.Literal('active'), Type.Literal('unsubscribed'), Type.Literal('expired')])
export type SubscriberStatus = Static<typeof SubscriberStatus>

/** How a subscriber arrived (issue 23, migration 0023). */
export const SubscriberSource = Type.Union([Type.Literal('subscribe'), Type.Literal('import'), Type.Literal('migrated')], {
  description: 'How the subscriber arrived: subscribe (the SDK or POST /v1/subscribe), import (POST /v1/subscribers/import), or migrated (moved over from another provider\'s key by the SDK).',
})
export type SubscriberSource = Static<typeof SubscriberSource>

/** issue 23, docs/subscription-health.md. */
export const SubscriberHealth = Type.Union([Type.Literal('active'), Type.Literal('dormant'), Type.Literal('failing')], {
  description: 'failing: active, and its last push failed (consecutive_failures > 0). dormant: active, not failing, and neither a click nor a subscribe call from its browser (last_seen_at) in the last 30 days. active: active and neither.',
})
export type SubscriberHealth = Static<typeof SubscriberHealth>

/** Browser routes take the project as ?project= or the X-Service-Project header (api.md §5). */
export const ProjectQuery = Type.Object({
  project: Type.Optional(Type.String({ description: 'The project id, prj_…; or send the X-Service-Project header.' })),
})

/** The header form of the project (api.md §5); listed so the OpenAPI document shows it. */
export const ProjectHeaders = Type.Object({
  'x-service-project': Type.Optional(Type.String({ description: 'The project id, prj_…, when ?project= is not given.' })),
})

/** What a browser may say about how it arrived (issue 23): `import` is the import route's alone. */
export const SubscribeSource = Type.Union([Type.Literal('subscribe'), Type.Literal('migrated')], {
  default: 'subscribe',
  description: 'How this browser arrived, recorded on a new subscriber only (a known endpoint keeps its source): subscribe (default), or migrated when the SDK moved a subscription made with another application server key (migrate mode) to this project\'s key without a prompt.',
})

/**
 * The subscription this one takes the place of (issue 23: pushsubscriptionchange,
 * the SDK's migrate mode). `auth` is the proof: the old subscription's auth
 * secret, which only its browser and its senders hold (decisions.md).
 */
export const SubscribeReplaces = Type.Object({
  endpoint: Type.String({ minLength: 1, maxLength: ENDPOINT_MAX, description: 'The endpoint of the subscription being replaced.' }),
  auth: Type.String({ minLength: 1, maxLength: KEY_MAX, pattern: BASE64URL, description: 'That subscription\'s auth secret (keys.auth), base64url: the proof that the caller is its browser.' }),
}, {
  additionalProperties: false,
  description: 'The browser\'s previous subscription, which this one replaces. When the project has that endpoint and auth matches its stored auth secret, the new subscriber gets its external_id (unless one is given), its tags (merged under the ones given) and its groups (with the ones given), and the old one becomes expired, in one transaction. Otherwise nothing is carried and the old one is left as it is; the answer is the same either way, so it tells nothing about other subscriptions.',
})

// Extra fields are allowed: PushSubscription.toJSON() also carries expirationTime.
/** An IANA time zone name (checked against the runtime's time zone database by the service: 400 naming the field otherwise). */
export const Timezone = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'IANA time zone name, such as Europe/Paris (what Intl.DateTimeFormat().resolvedOptions().timeZone gives); offsets such as +02:00 are refused.',
})

export const SubscribeBody = Type.Object({
  endpoint: Type.String({ format: 'uri', maxLength: ENDPOINT_MAX, description: 'The push service URL the browser handed back.' }),
  keys: Type.Object({
    p256dh: Type.String({ minLength: 1, maxLength: KEY_MAX, pattern: BASE64URL, description: 'Base64url ECDH public key.' }),
    auth: Type.String({ minLength: 1, maxLength: KEY_MAX, pattern: BASE64URL, description: 'Base64url auth secret.' }),
  }),
  external_id: Type.Optional(Type.Union([ExternalId, Type.Null()], {
    description: 'Omitted: kept as it is on a repeat subscribe. null: cleared.',
  })),
  group_ids: Type.Optional(Type.Array(Type.String(), {
    maxItems: GROUP_IDS_MAX,
    description: 'Groups to join. Unknown ids and ids of other projects are silently dropped.',
  })),
  locale: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()], {
    description: 'The browser\'s language, a BCP 47 tag (navigator.language; the SDK sends it), stored canonical ("pt-br" → "pt-BR"). Omitted: kept as it is. null: cleared. 400 when it is not a BCP 47 tag.',
  })),
  tags: Type.Optional(tagsSchema(
    TagValue,
    'Tags to set (see Subscriber.tags). On a repeat subscribe they are merged into the stored ones (the keys given win, the others stay), so a page never wipes tags the server set. 400 when the result would hold more than 50 keys.',
  )),
  source: Type.Optional(SubscribeSource),
  replaces: Type.Optional(SubscribeReplaces),
  timezone: Type.Optional(Type.Union([Timezone, Type.Null()], {
    description: "The browser's IANA time zone (the SDK sends it), used by local-time delivery and quiet hours (docs/timing.md). Omitted: kept as it is on a repeat subscribe. null: cleared (the project's default_timezone applies).",
  })),
  vapid_public: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 128,
    description: "The applicationServerKey the browser subscribed with (base64url), one of the project's VAPID public keys that is not retired, else 400. Omitted: the project's current key. Each push to this subscription is signed with that key; a repeat subscribe moves the subscription to the key it names; one that names none keeps the stored key.",
  })),
})
export type SubscribeBody = Static<typeof SubscribeBody>

export const UnsubscribeBody = Type.Object({
  endpoint: Type.String({ minLength: 1, maxLength: ENDPOINT_MAX }),
})
export type UnsubscribeBody = Static<typeof UnsubscribeBody>

export const Subscriber = Type.Object({
  id: Type.String({ description: 'sub_…' }),
  endpoint: Type.String({
    description: 'The push endpoint, whole only for owners, admins and API keys of scope full or subscribers (who may erase subscribers): it is a capability, anyone holding it can unsubscribe it. Others get it masked: the push service origin, "/…" and the last 6 characters (https://fcm.googleapis.com/…Ab3dE9); a masked value always contains "…".',
  }),
  external_id: Type.Union([Type.String(), Type.Null()]),
  status: SubscriberStatus,
  push_service: PushService,
  group_ids: Type.Array(Type.String()),
  tags: Tags,
  locale: Type.Union([Type.String(), Type.Null()], { description: 'The subscriber\'s language, a canonical BCP 47 tag; null when unknown. Picks the localized version of a send (docs/templates.md).' }),
  created_at: Type.Integer({ description: 'Unix ms' }),
  last_seen_at: Type.Integer({ description: 'Unix ms: the last subscribe from this browser (the first, or a repeat that refreshed it).' }),
  source: SubscriberSource,
  last_delivered_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms: the last time a push service accepted a push for this subscriber (HTTP 201); null when none has yet. Apple accepts pushes even for dead endpoints.' }),
  last_clicked_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms: the last click on one of its notifications that Herald recorded; null when none.' }),
  consecutive_failures: Type.Integer({ description: 'Pushes that failed in a row since the last one accepted (404/410, other refusals, or unreachable after the last retry); 0 after an accepted push.' }),
  health: Type.Union([SubscriberHealth, Type.Null()], { description: 'For an active subscriber: failing, dormant or active (docs/subscription-health.md); null for unsubscribed and expired ones.' }),
  timezone: Type.Union([Type.String(), Type.Null()], { description: "IANA time zone; null when unknown (the project's default_timezone applies)." }),
  vapid_key_id: Type.Optional(Type.String({ description: "vk_…: the project's VAPID key pair the subscription was made with, which signs every push to it (GET /v1/vapid-keys lists the pairs)." })),
})
export type Subscriber = Static<typeof Subscriber>

/** The last millisecond a JavaScript Date can hold: a time filter beyond it could not be compared. */
const UNIX_MS_MAX = 8_640_000_000_000_000

/** decisions.md §3: ?limit= 1-100, default 50. */
export const PAGE_LIMIT_DEFAULT = 50
export const PAGE_LIMIT_MAX = 100

/** The filters of GET /v1/subscribers, shared with its export (issue 25): they combine. */
const SUBSCRIBER_FILTERS = {
  status: Type.Optional(SubscriberStatus),
  source: Type.Optional(SubscriberSource),
  external_id: Type.Optional(ExternalId),
  external_id_contains: Type.Optional(Type.String({
    minLength: 1,
    maxLength: EXTERNAL_ID_MAX,
    pattern: EXTERNAL_ID_PATTERN,
    description: 'Only subscribers whose external_id contains this, ignoring case (a search; external_id is the exact match).',
  })),
  tag: Type.Optional(Type.String({
    pattern: TAG_FILTER_PATTERN,
    description: 'key:value: only subscribers whose tag `key` has this value, compared as text (age:10 finds 10 and "10", vip:true finds true and "true"). A bare key: those that have the tag.',
  })),
  group_id: Type.Optional(Type.String({ maxLength: 64, description: 'Only members of this group.' })),
  health: Type.Optional(SubscriberHealth),
  delivered_before: Type.Optional(Type.Integer({ minimum: 0, maximum: UNIX_MS_MAX, description: 'Unix ms: only subscribers with no push accepted since then (the last one earlier, or none ever).' })),
  delivered_after: Type.Optional(Type.Integer({ minimum: 0, maximum: UNIX_MS_MAX, description: 'Unix ms: only subscribers with a push accepted at or after then.' })),
  clicked_before: Type.Optional(Type.Integer({ minimum: 0, maximum: UNIX_MS_MAX, description: 'Unix ms: only subscribers with no click recorded since then (the last one earlier, or none ever).' })),
  clicked_after: Type.Optional(Type.Integer({ minimum: 0, maximum: UNIX_MS_MAX, description: 'Unix ms: only subscribers with a click recorded at or after then.' })),
  min_consecutive_failures: Type.Optional(Type.Integer({ minimum: 1, maximum: 2147483647, description: 'Only subscribers whose last this many pushes (at least) failed in a row.' })),
}
export const SubscriberFilterQuery = Type.Object(SUBSCRIBER_FILTERS)
export type SubscriberFilterQuery = Static<typeof SubscriberFilterQuery>

export const ListSubscribersQuery = Type.Object({
  ...SUBSCRIBER_FILTERS,
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PAGE_LIMIT_MAX, default: PAGE_LIMIT_DEFAULT })),
  cursor: Type.Optional(Type.String({ pattern: '^sub_[0-9a-z]{26}$', description: 'next_cursor of the previous page.' })),
})
export type ListSubscribersQuery = Static<typeof ListSubscribersQuery>

export const SubscriberList = Type.Object({
  subscribers: Type.Array(Subscriber),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
})

export const SubscriberCounts = Type.Object({
  active: Type.Integer({ description: 'Receive pushes.' }),
  unsubscribed: Type.Integer({ description: 'Opted out through /v1/unsubscribe.' }),
  expired: Type.Integer({ description: 'Their push service answered 404 or 410.' }),
})
export type SubscriberCounts = Static<typeof SubscriberCounts>

export const SubscriberHealthCounts = Type.Object({
  active: Type.Integer({ description: 'Active subscribers neither failing nor dormant.' }),
  dormant: Type.Integer({ description: 'Active, not failing, and no click or subscribe call from their browser in the last 30 days.' }),
  failing: Type.Integer({ description: 'Active, and their last push failed (consecutive_failures > 0).' }),
}, { description: 'The active subscribers by health (docs/subscription-health.md); the three add up to counts.active.' })

export const SubscriberParams = Type.Object({ sid: Type.String({ description: 'A subscriber id, sub_…' }) })
export const ExternalIdParams = Type.Object({ external_id: ExternalId })
export const EraseByEndpointBody = Type.Object({ endpoint: Type.String({ minLength: 1, maxLength: ENDPOINT_MAX }) })
export type EraseByEndpointBody = Static<typeof EraseByEndpointBody>

/** PATCH bodies: null removes a key (merge), or is left out (replace). */
export const TagsPatchBody = Type.Object({
  tags: Type.Optional(tagsSchema(
    Type.Union([TagValue, Type.Null()]),
    'The tags (at most 50 keys of 1-64 A-Z a-z 0-9 _ -; strings of at most 256 characters, numbers or booleans). With merge: the keys given are set, null removes one, the others stay. Without: they replace all tags (null keys are left out). Omitted: the tags stay as they are (give at least one of tags, locale and timezone).',
  )),
  locale: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Null()], {
    description: 'The language, a BCP 47 tag, stored canonical; null clears it. Omitted: kept.',
  })),
  timezone: Type.Optional(Type.Union([Timezone, Type.Null()], { description: "Sets the subscriber's IANA time zone; null clears it (the project's default_timezone applies). Omitted: unchanged." })),
  merge: Type.Optional(Type.Boolean({ default: false, description: 'true: merge into the stored tags. Default false: replace them.' })),
}, { additionalProperties: false })
export type TagsPatchBody = Static<typeof TagsPatchBody>

export const Updated = Type.Object({ updated: Type.Integer({ description: 'Subscribers (devices) whose tags were set.' }) })

export const CreatedId = Type.Object({ id: Type.String() })
export const Deleted = Type.Object({ deleted: Type.Integer() })

/** ?format= of the exports (issue 23). */
const EXPORT_FORMAT = Type.Optional(Type.Union([Type.Literal('ndjson'), Type.Literal('csv')], { default: 'ndjson', description: 'ndjson (default): one JSON object a line; csv: a header line, then one subscription a line.' }))
export const ExportQuery = Type.Object({ format: EXPORT_FORMAT })
export type ExportQuery = Static<typeof ExportQuery>

/** GET /v1/subscribers/export: the format and the list's filters (issue 25), so a file holds what the list shows. */
export const ExportSubscribersQuery = Type.Object({ ...SUBSCRIBER_FILTERS, format: EXPORT_FORMAT })
export type ExportSubscribersQuery = Static<typeof ExportSubscribersQuery>

export const ExportBody = Type.String({
  description: 'The stream: every subscription of the project that the filters select (all without filters), oldest first, with endpoint, external_id, status, groups (names), tags, source, created_at and last_seen_at (Unix ms), in the form POST /v1/subscribers/import reads.',
})
