// Icons and images given as data URLs: checked by their bytes, stored once by
// content hash, served from {cdn_url}/icons/<sha256>.<ext>.
// (Interface fixed here; implementation in progress.)
import type { Queryable } from '../platform/db/database.ts'
import type { Config } from '../platform/config.ts'
import { AppError } from '../platform/errors.ts'

export type MediaKind = 'icon' | 'image'

/**
 * Turns a notification icon or image as sent (HTTPS URL or data URL) into the
 * URL pushes carry: an HTTPS URL is returned as given; a data URL is validated,
 * stored and replaced by its hosted URL. Throws AppError invalid_icon or
 * invalid_image (400) for anything else.
 */
export async function resolveMedia(q: Queryable, config: Config, kind: MediaKind, value: string): Promise<string> {
  void q
  void config
  throw new AppError(kind === 'icon' ? 'invalid_icon' : 'invalid_image', `not implemented yet: ${value.slice(0, 16)}`)
}
