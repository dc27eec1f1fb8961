// The /v1/test-devices routes (issue 25, "send a test to me"): a member's own
// browsers, subscribed from the dashboard with the project's VAPID key.
import { Type, type Static } from 'typebox'
import { SubscribeBody, PushService } from '../subscribers/subscribers.schemas.ts'
import { NotificationInput } from '../broadcasts/broadcasts.schemas.ts'

export const TestDevice = Type.Object({
  id: Type.String({ description: 'sub_…: the subscription, never listed among the subscribers.' }),
  label: Type.String({ description: 'What the browser is, e.g. "Chrome on Linux".' }),
  push_service: PushService,
  created_at: Type.Integer({ description: 'Unix ms' }),
  last_delivered_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms: the last push its push service accepted; null before the first.' }),
  consecutive_failures: Type.Integer({ description: 'Pushes that failed in a row: a browser that dropped its subscription fails from then on; remove it and subscribe again.' }),
})
export type TestDevice = Static<typeof TestDevice>

export const TestDeviceList = Type.Object({ test_devices: Type.Array(TestDevice, { description: "The signed-in member's test devices in this project, newest first." }) })

export const AddTestDeviceBody = Type.Object({
  endpoint: SubscribeBody.properties.endpoint,
  keys: SubscribeBody.properties.keys,
  label: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Default: "Browser".' })),
}, { additionalProperties: false })
export type AddTestDeviceBody = Static<typeof AddTestDeviceBody>

export const TestDeviceParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'sub_… of a test device' }) })

export const SendTestBody = Type.Object({
  notification: Type.Optional(Type.Pick(NotificationInput, ['title', 'body', 'url', 'icon'], {
    description: 'The draft to try (title, body, and optionally url and icon, as POST /v1/send takes them); default a fixed test message.',
  })),
}, { additionalProperties: false })
export type SendTestBody = Static<typeof SendTestBody>

export const SendTestResponse = Type.Object({
  broadcast_id: Type.String({ description: 'bdc_…: a broadcast like any other (source dashboard), with its counts.' }),
  audience: Type.Integer({ description: 'How many of your test devices it goes to.' }),
})

export const Deleted = Type.Object({ deleted: Type.Integer({ description: '1, or 0 when the id is none of your test devices.' }) })
