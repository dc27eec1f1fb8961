// The limits of POST /v1/send (api.md §7, broadcasts.schemas.ts,
// media/image-check.ts), checked in the page as the owner types or picks a
// file, so a refusal names the field before any request. The server checks
// everything again; these only have to agree with it. Each check returns an
// error that starts with the field's label, or null.

export const TITLE_MAX = 256
export const BODY_MAX = 2048
export const URL_MAX = 2048
export const EXTERNAL_ID_MAX = 256
export const TOPIC_MAX = 32
export const TTL_MAX = 2_419_200
/** Decoded bytes, as the server counts them (the file itself, not its base64). */
export const ICON_BYTES = 256 * 1024
export const IMAGE_BYTES = 1024 * 1024
const SCHEDULE_MAX_MS = 90 * 24 * 60 * 60 * 1000
const MEDIA_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp'])

/** broadcasts.schemas.ts CLICK_URL: an absolute http(s) URL, or a path on the site ("//host" names another host). */
const CLICK_URL = /^(https?:\/\/[^\s/?#]+[^\s]*|\/(?!\/)[^\s]*)$/
const NAME = /^[A-Za-z0-9_-]+$/

const PLAN_ORDER = ['free', 'hobby', 'plus', 'pro', 'max']
export const atLeast = (plan, min) => PLAN_ORDER.indexOf(plan) >= PLAN_ORDER.indexOf(min)

/** Characters as the server's schema counts them: code points, so an emoji is one. */
export function chars(text) {
  let n = 0
  for (const _ of text) n++
  return n
}

export function sizeText(bytes) {
  // "1 MB", "1.1 MB", "256 KB": as the limits are written in api.md.
  return bytes >= 1024 * 1024 ? `${Number((bytes / (1024 * 1024)).toFixed(1))} MB` : `${Math.ceil(bytes / 1024)} KB`
}

function tooLong(label, text, max) {
  const n = chars(text)
  return n > max ? `${label}: over ${max} characters (${n}).` : null
}

export const checkTitle = (v) => tooLong('Title', v, TITLE_MAX)
export const checkBody = (v) => tooLong('Body', v, BODY_MAX)

export function checkLink(v) {
  if (!v) return null
  return tooLong('Link', v, URL_MAX) ??
    (CLICK_URL.test(v) ? null : 'Link: must be a full http(s):// URL or a path on your site starting with / (like /sale).')
}

/** A typed icon or image URL: HTTPS, at most 2048 characters. */
export function checkMediaUrl(label, v) {
  if (!v) return null
  if (v.length > URL_MAX) return `${label}: the URL is over ${URL_MAX} characters (${v.length}).`
  try {
    if (new URL(v).protocol === 'https:') return null
  } catch {
    // Not a URL at all: the message below.
  }
  return `${label}: must be an https:// URL, or pick a file.`
}

/** A picked file, before it is read: its type and size. */
export function checkMediaFile(label, file, maxBytes) {
  if (!MEDIA_TYPES.has(file.type)) return `${label}: must be a PNG, JPEG or WebP file (this one is ${file.type || 'of an unknown type'}).`
  if (file.size === 0) return `${label}: the file is empty.`
  if (file.size > maxBytes) return `${label}: over ${sizeText(maxBytes)} (this file is ${sizeText(file.size)}).`
  return null
}

export function checkSquare(label, width, height) {
  return width === height ? null : `${label}: must be square (this one is ${width} × ${height} pixels).`
}

export function checkExternalId(v) {
  if (!v) return null
  return tooLong('External id', v, EXTERNAL_ID_MAX) ?? (NAME.test(v) ? null : 'External id: only A-Z a-z 0-9 _ - are allowed.')
}

export function checkTopic(v) {
  if (!v) return null
  return tooLong('Topic', v, TOPIC_MAX) ?? (NAME.test(v) ? null : 'Topic: only A-Z a-z 0-9 _ - are allowed.')
}

export function checkTtl(v) {
  if (v === '') return null
  const n = Number(v)
  return Number.isInteger(n) && n >= 0 && n <= TTL_MAX ? null : `Time to live: a whole number of seconds from 0 to ${TTL_MAX}.`
}

/** v: the schedule as Unix ms (already read in its time zone), or a datetime-local string; null/'' = send now. */
export function checkSchedule(v, plan, now = Date.now()) {
  if (v === null || v === undefined || v === '') return null
  if (!atLeast(plan, 'plus')) return 'Schedule: needs the Plus plan or higher. Leave it empty to send now.'
  const at = typeof v === 'number' ? v : new Date(v).getTime()
  if (Number.isNaN(at)) return 'Schedule: not a date and time.'
  if (at <= now) return 'Schedule: must be in the future. Leave it empty to send now.'
  if (at - now > SCHEDULE_MAX_MS) return 'Schedule: at most 90 days ahead.'
  return null
}

/**
 * Local-time delivery (docs/timing.md): the date from yesterday (UTC) to 90
 * days ahead; whether it has passed depends on each subscriber's zone, which
 * the send's "where it has passed" choice covers.
 */
export function checkLocalSchedule(v, plan, now = Date.now()) {
  if (!v) return null
  if (!atLeast(plan, 'plus')) return 'Schedule: local-time delivery needs the Plus plan or higher. Leave it empty to send now.'
  const day = Date.parse(`${v.slice(0, 10)}T00:00:00Z`)
  if (Number.isNaN(day)) return 'Schedule: not a date and time.'
  const today = Math.floor(now / 86_400_000) * 86_400_000
  if (day < today - 86_400_000) return 'Schedule: that date has passed everywhere.'
  if (day > today + SCHEDULE_MAX_MS) return 'Schedule: at most 90 days ahead.'
  return null
}

/** broadcasts.schemas.ts: throttle_per_minute, NotificationAction, MAX_ACTIONS. */
export const THROTTLE_MIN = 60
export const THROTTLE_MAX = 600_000
export const ACTION_ID_MAX = 32
export const ACTION_TITLE_MAX = 64
export const MAX_ACTIONS = 2

export function checkThrottle(v) {
  if (v === '') return null
  const n = Number(v)
  return Number.isInteger(n) && n >= THROTTLE_MIN && n <= THROTTLE_MAX ? null : `Pushes per minute: a whole number from ${THROTTLE_MIN} to ${THROTTLE_MAX}, or empty for no limit.`
}

/**
 * A segment's filter as typed: JSON of one object. Its grammar is left to the
 * server's dry run, which names the wrong node (segment-filter.ts); this
 * returns { filter } or { error }.
 */
export function parseFilter(v) {
  if (!v.trim()) return { error: 'Filter: required for a segment.' }
  try {
    const filter = JSON.parse(v)
    if (filter && typeof filter === 'object' && !Array.isArray(filter)) return { filter }
    return { error: 'Filter: must be one JSON object, like {"tag": "plan", "eq": "pro"}.' }
  } catch {
    return { error: 'Filter: not valid JSON.' }
  }
}

/** One action button, as typed: both its text and id, or neither. Returns [titleError, idError, linkError]. */
export function checkAction(n, { title, action, url }) {
  const label = `Button ${n}`
  if (!title && !action && !url) return [null, null, null]
  const titleError = !title ? `${label} text: required for a button.` : tooLong(`${label} text`, title, ACTION_TITLE_MAX)
  const idError = !action ? `${label} id: required for a button.`
    : tooLong(`${label} id`, action, ACTION_ID_MAX) ?? (NAME.test(action) ? null : `${label} id: only A-Z a-z 0-9 _ - are allowed.`)
  const linkError = url ? checkLink(url)?.replace(/^Link/, `${label} opens`) ?? null : null
  return [titleError, idError, linkError]
}
