// The 200 answer of POST /v1/send with "dry_run": true (issue 11): what the
// send would do, without doing it. Its request is the send body
// (broadcasts.schemas.ts), dry_run included.
import { Type, type Static } from 'typebox'

const Count = Type.Integer({ minimum: 0 })

export const DryRunWarning = Type.Object({
  code: Type.String({ description: 'Stable code to branch on; the list is in docs/decisions.md, "Dry run".' }),
  message: Type.String({ description: 'The warning in plain English.' }),
  path: Type.Optional(Type.String({ description: 'The request field the warning is about, e.g. notification.title.' })),
})
export type DryRunWarning = Static<typeof DryRunWarning>

const RenderedNotification = Type.Object({
  title: Type.String(),
  body: Type.String(),
  url: Type.String(),
  icon: Type.Union([Type.String(), Type.Null()]),
  image: Type.Union([Type.String(), Type.Null()]),
  actions: Type.Array(Type.Object({ action: Type.String(), title: Type.String(), url: Type.Optional(Type.String()) })),
})

/** A personalized send's preview (issue 24, docs/templates.md). */
export const DryRunPersonalization = Type.Object({
  variables: Type.Array(
    Type.Object({
      variable: Type.String({ description: 'tags.first_name, data.order_id, external_id or locale.' }),
      with_value: Type.Integer({ minimum: 0, description: 'Audience members who have a value for it (for data.*: the whole audience when the send gives it, else 0).' }),
      coverage: Type.Number({ minimum: 0, maximum: 1, description: 'with_value / audience (0 for an empty audience).' }),
      default: Type.Union([Type.String(), Type.Null()], { description: "The template's or send's default for it; null when none (a default filter in the text is not listed)." }),
    }),
  ),
  samples: Type.Array(
    Type.Object({
      subscriber_id: Type.String(),
      locale: Type.Union([Type.String(), Type.Null()]),
      language: Type.Union([Type.String(), Type.Null()], { description: 'The localized version this subscriber gets; null for the default fields.' }),
      notification: Type.Union([RenderedNotification, Type.Null()], { description: 'What this subscriber would be shown; null when skipped.' }),
      skipped: Type.Union([Type.String(), Type.Null()], { description: 'Why this subscriber would get nothing (e.g. "missing_variable: tags.first_name"); null when not skipped.' }),
    }),
    { description: 'Up to 5 real subscribers of the audience (the first by id), rendered as fan-out would.' },
  ),
})

export const DryRunResponse = Type.Object({
  dry_run: Type.Literal(true),
  audience: Type.Integer({ minimum: 0, description: 'Active subscribers the send would reach now (for scheduled_at: now, not at fire time).' }),
  by_push_service: Type.Object(
    { fcm: Count, mozilla: Count, apple: Count, wns: Count, other: Count },
    { description: 'The audience by push service (the subscribers\' push_service); the five add up to audience.' },
  ),
  payload_bytes: Type.Integer({ minimum: 0, description: 'Bytes of the encrypted body each push carries (RFC 8291 aes128gcm).' }),
  fetch: Type.Boolean({ description: 'true when the notification does not fit in one push: pushes carry a fetch: true stub and the service worker fetches the content.' }),
  declarative: Type.Boolean({ description: 'true when each push also carries the Declarative Web Push form (web_push: 8030), which Safari 18.4+ shows without a service worker; false when a click URL is a path and the project has no domain.' }),
  warnings: Type.Array(DryRunWarning),
  personalization: Type.Optional(DryRunPersonalization),
  throttle_per_minute: Type.Optional(Type.Integer({ description: 'The throttle_per_minute of the request, echoed; absent when not throttled.' })),
  waiting: Type.Optional(
    Type.Array(
      Type.Object({
        at: Type.Integer({ description: 'Unix ms: when these pushes would be due.' }),
        reason: Type.Union([Type.Literal('local_time'), Type.Literal('quiet_hours')]),
        count: Type.Integer({ minimum: 0 }),
      }),
      {
        description:
          "With deliver_at_local, or when the project's quiet hours apply: the pushes that would wait, by due time, as the broadcast's waiting would show them " +
          '(judged now, or at scheduled_at; docs/timing.md). Absent when every push would go out at once.',
      },
    ),
  ),
  skipped: Type.Optional(Type.Integer({ minimum: 0, description: 'With past: skip, the subscribers whose local time has passed and who would not be pushed. Present with waiting.' })),
  expected_duration_ms: Type.Optional(
    Type.Integer({ minimum: 0, description: 'With throttle_per_minute: how long the fan-out of the audience takes at that rate (audience × 60000 / rate).' }),
  ),
})
export type DryRunResponse = Static<typeof DryRunResponse>
