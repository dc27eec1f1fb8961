// The notification a broadcast sends, as the browser's service worker reads it
// (decisions.md §4): the push payload's JSON when it fits in one push, and the
// body of GET /v1/notifications/:broadcast_id when it does not (push-payload.ts
// then pushes a `fetch: true` stub instead).
import { Type, type Static } from 'typebox'
import { NotificationAction } from './broadcasts.schemas.ts'

export interface NotificationContent {
  project_id: string
  broadcast_id: string
  title: string
  body: string
  icon: string | null
  image: string | null
  url: string
  /** The action buttons; [] when none. */
  actions: NotificationAction[]
  /** An A/B test's variant this push is (docs/experiments.md); absent (or null) otherwise. */
  variant?: string | null
}

/** The push payload's JSON: also the body of GET /v1/notifications/:broadcast_id. */
export const NotificationPayload = Type.Object({
  v: Type.Literal(1),
  project_id: Type.String(),
  broadcast_id: Type.String(),
  title: Type.String(),
  body: Type.String(),
  icon: Type.Optional(Type.String()),
  image: Type.Optional(Type.String()),
  url: Type.String(),
  // Absent without actions, so a notification without them is the same bytes as before they existed.
  actions: Type.Optional(Type.Array(NotificationAction)),
  // Additive (decisions.md §4): the A/B test variant, which the service worker echoes in its beacons.
  variant: Type.Optional(Type.String({ description: "The A/B test variant this push is (docs/experiments.md); absent outside a test and for the rest of the audience." })),
})
export type NotificationPayload = Static<typeof NotificationPayload>

/** The full payload; icon, image and actions are left out when there are none. */
export function fullPayload(content: NotificationContent): NotificationPayload {
  const payload: NotificationPayload = {
    v: 1,
    project_id: content.project_id,
    broadcast_id: content.broadcast_id,
    title: content.title,
    body: content.body,
    url: content.url,
  }
  if (content.icon) payload.icon = content.icon
  if (content.image) payload.image = content.image
  if (content.actions.length > 0) payload.actions = content.actions
  if (content.variant) payload.variant = content.variant
  return payload
}
