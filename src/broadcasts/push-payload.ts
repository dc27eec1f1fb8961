// What the browser receives (decisions.md §4): the notification as UTF-8 JSON,
// or, when that would not fit in one 4096-byte web push record, a small
// `fetch: true` stub that tells the service worker to fetch the content.

import { encryptedLength, MAX_PLAINTEXT_BYTES } from '../platform/webpush/record-size.mjs'
import { fullPayload, type NotificationContent } from './notification-payload.ts'

/** What a push carries instead when the full JSON would not fit. */
export interface FetchStub {
  v: 1
  project_id: string
  broadcast_id: string
  fetch: true
}

/** The bytes to encrypt for every subscriber of a broadcast (they are the same for all). */
export function pushPlaintext(content: NotificationContent): Buffer {
  const full = Buffer.from(JSON.stringify(fullPayload(content)), 'utf8')
  if (full.length <= MAX_PLAINTEXT_BYTES) return full
  const stub: FetchStub = { v: 1, project_id: content.project_id, broadcast_id: content.broadcast_id, fetch: true }
  return Buffer.from(JSON.stringify(stub), 'utf8')
}

/**
 * What every push of a broadcast with this content carries, without
 * encrypting one (dry runs): whether it is the `fetch: true` stub, and the
 * size in bytes of the encrypted body sent to the push service.
 */
export function pushBodySize(content: NotificationContent): { fetch: boolean; bytes: number } {
  const plaintext = pushPlaintext(content)
  const carried = JSON.parse(plaintext.toString('utf8')) as { fetch?: unknown }
  return { fetch: carried.fetch === true, bytes: encryptedLength(plaintext.length) }
}
