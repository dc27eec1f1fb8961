// Icons and images given as data URLs: checked by their bytes, stored once by
// content hash, served from {cdn_url}/icons/<sha256>.<ext>.
import { createHash } from 'node:crypto'
import type { Queryable } from '../platform/db/database.ts'
import type { Config } from '../platform/config.ts'
import { AppError } from '../platform/errors.ts'
import { FORMATS, MediaCheckError, checkDataUrl, checkShape, isDataUrl, isHttpsUrl, type MediaKind } from './image-check.ts'
import { reencode } from './reencode.ts'
import { insertMedia } from './media.store.ts'

export type { MediaKind } from './image-check.ts'

function invalid(kind: MediaKind, reason: string): AppError {
  const what = kind === 'icon' ? 'notification.icon' : 'notification.image'
  return new AppError(kind === 'icon' ? 'invalid_icon' : 'invalid_image', `${what}: ${reason}`)
}

/**
 * Turns a notification icon or image as sent (HTTPS URL or data URL) into the
 * URL pushes carry: an HTTPS URL is returned as given; a data URL is validated,
 * stored and replaced by its hosted URL. Throws AppError invalid_icon or
 * invalid_image (400) for anything else.
 */
export async function resolveMedia(q: Queryable, config: Config, kind: MediaKind, value: string): Promise<string> {
  if (!isDataUrl(value)) {
    if (isHttpsUrl(value)) return value
    throw invalid(kind, 'must be an https:// URL of at most 2048 characters or a data:image/png, image/jpeg or image/webp base64 URL.')
  }
  try {
    const checked = checkDataUrl(kind, value)
    const encoded = await reencode(checked)
    // The decoder's own dimensions, in case the header read before decoding lied.
    checkShape(kind, encoded.width, encoded.height)
    // Stored under the format the bytes are, whatever the data URL's label said.
    const { ext, contentType } = FORMATS[encoded.format]
    const sha256 = createHash('sha256').update(encoded.bytes).digest('hex')
    await insertMedia(q, { sha256, ext, content_type: contentType, width: encoded.width, height: encoded.height, bytes: encoded.bytes })
    return `${config.cdnUrl}/icons/${sha256}.${ext}`
  } catch (err) {
    if (err instanceof MediaCheckError) throw invalid(kind, err.message)
    throw err
  }
}
