// Masked forms of what some actors may not see whole (issue 22): push
// endpoints and webhook URLs keep their field in every view, but an actor
// without the permission access.ts names gets the origin and, for an
// endpoint, a short tail to tell subscriptions apart. A masked value always
// holds "…" (U+2026), so it is never mistaken for, or usable as, the URL.
// And the one form of an API key anyone is shown: hk_live_ and 6 characters.

/**
 * How many random characters of a key lists and the audit log show after
 * `hk_live_`: enough to tell a project's keys apart (62^6 ≈ 5.7e10), a small
 * share of the key's 190 bits, and less than the whole 12-character lookup
 * prefix the database keeps.
 */
export const KEY_SHOWN_LENGTH = 6

/** What anyone is shown of a key, from its stored lookup prefix: `hk_live_AbC123` (projects/api-keys.ts API_KEY_PREFIX; access imports nothing). */
export function shownKeyPrefix(lookup: string): string {
  return 'hk_live_' + lookup.slice(0, KEY_SHOWN_LENGTH)
}

/** Characters of an endpoint's end shown masked: enough to tell two apart on a page, far too few to guess the rest. */
export const ENDPOINT_TAIL = 6
/**
 * The tail is shown only when the part after the origin is at least this
 * long, so it is at most a quarter of it (real push tokens run 100+ characters;
 * a short development endpoint shows none).
 */
const TAIL_MIN_REST = 4 * ENDPOINT_TAIL

function split(url: string): { origin: string; rest: string } | null {
  try {
    const parsed = new URL(url)
    if (parsed.origin === 'null') return null
    return { origin: parsed.origin, rest: parsed.pathname + parsed.search + parsed.hash }
  } catch {
    return null
  }
}

/** https://fcm.googleapis.com/fcm/send/abc…xyz → https://fcm.googleapis.com/…tail */
export function maskEndpoint(endpoint: string): string {
  const parts = split(endpoint)
  if (!parts) return '…'
  const tail = parts.rest.length >= TAIL_MIN_REST ? parts.rest.slice(-ENDPOINT_TAIL) : ''
  return `${parts.origin}/…${tail}`
}

/** https://hooks.example.com/services/T0/B0/secret → https://hooks.example.com/… (a bare origin stays as it is). */
export function maskWebhookUrl(url: string): string {
  const parts = split(url)
  if (!parts) return '…'
  return parts.rest === '/' ? `${parts.origin}/` : `${parts.origin}/…`
}
