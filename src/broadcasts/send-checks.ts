// Form checks of a send's fields, shared by the send (send.service.ts) and
// the variants of an A/B test (experiments/experiment-send.ts).
import { AppError, invalidField } from '../platform/errors.ts'
import type { MediaKind } from '../media/media.service.ts'
import { hasMarkup } from '../templates/liquid.ts'

/** api.md §8: an HTTPS icon or image URL is at most 2048 chars. */
const MAX_MEDIA_URL_LENGTH = 2048

/**
 * The form of an icon or image before anything is stored: an HTTPS URL of at
 * most 2048 chars, or some data: URL (whose content resolveMedia checks).
 */
export function checkMediaForm(kind: MediaKind, value: string | undefined): void {
  // With variables, the template checks it (templates/personalization.ts) and each rendered URL is checked again.
  if (value === undefined || hasMarkup(value)) return
  const https = /^https:\/\//i.test(value)
  const data = /^data:/i.test(value)
  if ((https && value.length <= MAX_MEDIA_URL_LENGTH) || data) return
  const code = kind === 'icon' ? 'invalid_icon' : 'invalid_image'
  const message = https
    ? `notification.${kind} is an HTTPS URL of ${value.length} chars; at most ${MAX_MEDIA_URL_LENGTH} are allowed.`
    : `notification.${kind} must be an HTTPS URL or a data: URL.`
  throw new AppError(code, message)
}

/** An absolute click URL must parse; the schema's pattern only checks its outline. */
export function checkClickUrl(url: string, path = 'notification.url'): void {
  if (url.startsWith('/')) return
  try {
    new URL(url)
  } catch {
    throw invalidField(path, 'must be an absolute http(s) URL or a path starting with /')
  }
}

