// Click links for Declarative Web Push (issue 12): a notification that the
// browser shows by itself (Safari 18.4+) opens its `navigate` URL without
// running any service worker, so no beacon can say it was clicked. Its
// `navigate` is therefore Herald's GET /c/:token, which records the click and
// redirects to the broadcast's own URL (events/click-link.routes.ts).
//
// The token is <broadcast_id>[.<action>].<mac>: the MAC (HMAC-SHA256, 128
// bits) covers the project, the broadcast, the action and the target URL as
// the broadcast stores it, so a token cannot be moved to another broadcast,
// project, action or URL, and the redirect goes only to a URL the broadcast
// itself carries (looked up, never read from the token). The key is derived
// (HKDF) from the project's VAPID private key: a secret every Herald process
// already shares through the database, per project, in both storage modes,
// with nothing new to configure or keep in step between machines.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'

/** 16 bytes of HMAC-SHA256: forging one is a 2^-128 guess; 22 characters in the URL. */
const MAC_BYTES = 16
const TOKEN = /^(bdc_[0-9a-z]{26})(?:\.([A-Za-z0-9_-]{1,32}))?\.([A-Za-z0-9_-]{22})$/

/** The key a project's click links are signed with. */
export function clickLinkKey(vapidPrivate: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(vapidPrivate, 'utf8'), Buffer.alloc(0), 'herald click link v1', 32))
}

export interface ClickLink {
  project_id: string
  broadcast_id: string
  /** The action button, or null for the notification itself. */
  action: string | null
  /** The target as the broadcast stores it (a path or an absolute URL). */
  url: string
}

function mac(key: Buffer, link: ClickLink): Buffer {
  // NUL separated: no part can contain one (ids and actions are [A-Za-z0-9_-], URLs have no NUL).
  const text = ['herald-click', link.project_id, link.broadcast_id, link.action ?? '', link.url].join('\0')
  return createHmac('sha256', key).update(text).digest().subarray(0, MAC_BYTES)
}

export function clickToken(key: Buffer, link: ClickLink): string {
  const parts = [link.broadcast_id, ...(link.action ? [link.action] : []), mac(key, link).toString('base64url')]
  return parts.join('.')
}

/** The broadcast and action a token names, before it is checked; null when it is not shaped like one. */
export function parseClickToken(token: string): { broadcast_id: string; action: string | null; mac: string } | null {
  const match = TOKEN.exec(token)
  return match ? { broadcast_id: match[1], action: match[2] ?? null, mac: match[3] } : null
}

export function clickTokenMatches(key: Buffer, link: ClickLink, tokenMac: string): boolean {
  // Compared as text: 22 base64url characters carry 132 bits for 128, and
  // decoding ignores the last 4, so comparing bytes would accept 16 spellings of one MAC.
  const given = Buffer.from(tokenMac, 'utf8')
  const expected = Buffer.from(mac(key, link).toString('base64url'), 'utf8')
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/**
 * The site's origin for a project whose `domain` is set ("shop.example.com"
 * → "https://shop.example.com"): what a path in a notification URL is
 * resolved against outside the service worker. Null without a usable domain.
 */
export function siteOrigin(domain: string | null): string | null {
  if (!domain) return null
  try {
    const url = new URL(`https://${domain}`)
    return url.host === domain.toLowerCase() ? url.origin : null
  } catch {
    return null
  }
}

/** An absolute click target: as given, or a path on the site's origin; null when a path has no origin to go on. */
export function absoluteTarget(url: string, origin: string | null): string | null {
  if (!url.startsWith('/')) return url
  return origin ? new URL(url, origin).href : null
}
