// What the browser receives (decisions.md §4): the notification as UTF-8 JSON,
// or, when that would not fit in one 4096-byte web push record, a small
// `fetch: true` stub that tells the service worker to fetch the content.
// With a DeclarativeContext the same JSON also carries the Declarative Web
// Push form (declarative-payload.ts), as much of it as fits; one payload for
// every push service (docs/decisions.md "Declarative Web Push").

import { encryptedLength, MAX_PLAINTEXT_BYTES } from '../platform/webpush/record-size.mjs'
import { fullPayload, type NotificationContent } from './notification-payload.ts'
import { declarativeForm, type DeclarativeContext, type DeclarativeForm } from './declarative-payload.ts'

/** What a push carries instead when the full JSON would not fit. */
export interface FetchStub {
  v: 1
  project_id: string
  broadcast_id: string
  fetch: true
  /** The A/B test variant: the service worker fetches that variant's content (and echoes it in beacons). */
  variant?: string
}

const ELLIPSIS = '…'

function bytes(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value), 'utf8')
}

/**
 * The declarative form with its body cut (by code points, ending in "…") to
 * the longest that fits beside `herald`; null when not even an empty body does.
 */
function withCutBody(herald: object, form: DeclarativeForm): Buffer | null {
  const at = (n: number, chars: string[]) =>
    bytes({ ...herald, ...form, notification: { ...form.notification, body: n === chars.length ? form.notification.body : chars.slice(0, n).join('') + ELLIPSIS } })
  const chars = Array.from(form.notification.body)
  if (at(0, chars).length > MAX_PLAINTEXT_BYTES) return null
  let low = 0 // fits
  let high = chars.length // may not
  while (low < high) {
    const mid = Math.ceil((low + high) / 2)
    if (at(mid, chars).length <= MAX_PLAINTEXT_BYTES) low = mid
    else high = mid - 1
  }
  return at(low, chars)
}

/**
 * The bytes to encrypt for every subscriber of a broadcast (the same for all).
 * Without `declarative`: Herald's full JSON, or the stub. With it, the first
 * that fits of: the full JSON with the whole declarative form; with a lean
 * one (no icon, image or buttons); the stub with the lean form; the stub
 * with the lean form's body cut short; the stub alone.
 */
export function pushPlaintext(content: NotificationContent, declarative: DeclarativeContext | null = null): Buffer {
  const full = fullPayload(content)
  const stub: FetchStub = { v: 1, project_id: content.project_id, broadcast_id: content.broadcast_id, fetch: true, ...(content.variant ? { variant: content.variant } : {}) }
  const whole = declarative && declarativeForm(content, declarative, 'full')
  const lean = declarative && declarativeForm(content, declarative, 'lean')
  const candidates = whole && lean ? [{ ...full, ...whole }, { ...full, ...lean }, { ...stub, ...lean }] : [full]
  for (const candidate of candidates) {
    const encoded = bytes(candidate)
    if (encoded.length <= MAX_PLAINTEXT_BYTES) return encoded
  }
  return (lean && withCutBody(stub, lean)) ?? bytes(stub)
}

/**
 * What every push of a broadcast with this content carries, without
 * encrypting one (dry runs): whether it is the `fetch: true` stub, whether it
 * carries the declarative form, and the size in bytes of the encrypted body
 * sent to the push service.
 */
export function pushBodySize(content: NotificationContent, declarative: DeclarativeContext | null = null): { fetch: boolean; declarative: boolean; bytes: number } {
  const plaintext = pushPlaintext(content, declarative)
  const carried = JSON.parse(plaintext.toString('utf8')) as { fetch?: unknown; web_push?: unknown }
  return { fetch: carried.fetch === true, declarative: carried.web_push === 8030, bytes: encryptedLength(plaintext.length) }
}
