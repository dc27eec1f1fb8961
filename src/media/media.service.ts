// Icons and images given as data URLs: checked by their bytes, stored once by
// content hash, served from {cdn_url}/icons/<sha256>.<ext>.
import { createHash } from 'node:crypto'
import type { Queryable } from '../platform/db/database.ts'
import type { Config } from '../platform/config.ts'
import { AppError } from '../platform/errors.ts'
import { FORMATS, MediaCheckError, checkDataUrl, checkShape, isDataUrl, isHttpsUrl, type MediaKind } from './image-check.ts'
import { reencode } from './reencode.ts'
import { findMedia, insertMedia, type MediaRow } from './media.store.ts'

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
  const { url, file } = await checkMedia(config, kind, value)
  if (file) await insertMedia(q, file)
  return url
}

/**
 * Everything resolveMedia does but storing: the URL pushes would carry, and
 * for a data URL the file that would be stored under it (null for an HTTPS
 * URL). A dry run of POST /v1/send calls this, so it refuses exactly what a
 * real send refuses and stores nothing.
 */
export async function checkMedia(config: Config, kind: MediaKind, value: string): Promise<{ url: string; file: MediaRow | null }> {
  if (!isDataUrl(value)) {
    if (isHttpsUrl(value)) return { url: value, file: null }
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
    const file = { sha256, ext, content_type: contentType, width: encoded.width, height: encoded.height, bytes: encoded.bytes }
    return { url: `${config.cdnUrl}/icons/${sha256}.${ext}`, file }
  } catch (err) {
    if (err instanceof MediaCheckError) throw invalid(kind, err.message)
    throw err
  }
}

/** The file name of a hosted file under {cdn_url}/icons/: its SHA-256 and extension. */
export const HOSTED_FILE_NAME = /^([0-9a-f]{64})\.(png|jpg|webp)$/

/** Whether url is a file Herald hosts: {cdn_url}/icons/<sha256>.<ext>, stored with that extension. */
export async function isHostedMedia(q: Queryable, config: Config, url: string): Promise<boolean> {
  const prefix = `${config.cdnUrl}/icons/`
  const match = url.startsWith(prefix) ? HOSTED_FILE_NAME.exec(url.slice(prefix.length)) : null
  if (!match) return false
  const file = await findMedia(q, match[1])
  return file !== null && file.ext === match[2]
}
