// What the browser receives (decisions.md §4): the notification as UTF-8 JSON,
// or, when that would not fit in one 4096-byte web push record, a small
// `fetch: true` stub that tells the service worker to fetch the content.

/** Largest plaintext that fits one aes128gcm record in a 4096-byte body: 4096 - 86 header - 1 delimiter - 16 tag. */
export const MAX_PLAINTEXT_BYTES = 3993

export interface NotificationContent {
  project_id: string
  broadcast_id: string
  title: string
  body: string
  icon: string | null
  image: string | null
  url: string
}

export interface PushPayload {
  v: 1
  project_id: string
  broadcast_id: string
  title?: string
  body?: string
  icon?: string
  image?: string
  url?: string
  fetch?: true
}

/** The full payload; icon and image are left out when there are none. */
export function fullPayload(content: NotificationContent): PushPayload {
  const payload: PushPayload = {
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
  const stub: PushPayload = { v: 1, project_id: content.project_id, broadcast_id: content.broadcast_id, fetch: true }
  return Buffer.from(JSON.stringify(stub), 'utf8')
}
