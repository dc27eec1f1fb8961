// What the browser receives (decisions.md §4): the notification as UTF-8 JSON,
// or, when that would not fit in one 4096-byte web push record, a small
// `fetch: true` stub that tells the service worker to fetch the content.

import { Type, type Static } from 'typebox'
import { MAX_PLAINTEXT_BYTES } from './encryption.ts'

export interface NotificationContent {
  project_id: string
  broadcast_id: string
  title: string
  body: string
  icon: string | null
  image: string | null
  url: string
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
})
export type NotificationPayload = Static<typeof NotificationPayload>

/** What a push carries instead when the full JSON would not fit. */
export interface FetchStub {
  v: 1
  project_id: string
  broadcast_id: string
  fetch: true
}

/** The full payload; icon and image are left out when there are none. */
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
  return payload
}

/** The bytes to encrypt for every subscriber of a broadcast (they are the same for all). */
export function pushPlaintext(content: NotificationContent): Buffer {
  const full = Buffer.from(JSON.stringify(fullPayload(content)), 'utf8')
  if (full.length <= MAX_PLAINTEXT_BYTES) return full
  const stub: FetchStub = { v: 1, project_id: content.project_id, broadcast_id: content.broadcast_id, fetch: true }
  return Buffer.from(JSON.stringify(stub), 'utf8')
}
