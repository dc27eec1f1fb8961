// GET /icons/<sha256>.<ext>: the hosted icons and images (decisions.md §6).
// Content-addressed, so a URL's bytes never change: cached for a year.
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { AppError } from '../platform/errors.ts'
import { findMedia } from './media.store.ts'
import { HOSTED_FILE_NAME } from './media.service.ts'
import { MediaFileParams, MediaFileResponse } from './media.schemas.ts'
import { ErrorBody } from '../platform/http/shared-schemas.ts'

export function registerMediaRoutes(app: App, ctx: AppContext): void {
  app.get('/icons/:file', {
    schema: {
      operationId: 'getIcon',
      tags: ['media'],
      security: [],
      summary: 'A hosted notification icon or image',
      params: MediaFileParams,
      response: {
        200: MediaFileResponse,
        304: { type: 'null', description: 'Not modified (If-None-Match matched).' },
        404: ErrorBody,
      },
    },
  }, async (request, reply) => {
    const match = HOSTED_FILE_NAME.exec(request.params.file)
    const media = match ? await findMedia(ctx.db, match[1]) : null
    // A known hash with another extension is not that file: one URL per file.
    if (!match || !media || media.ext !== match[2]) throw new AppError('media_not_found')
    const etag = `"${media.sha256}"`
    reply
      .header('Cache-Control', 'public, max-age=31536000, immutable')
      .header('ETag', etag)
      .header('X-Content-Type-Options', 'nosniff')
      // Notifications and pages on other sites (some behind COEP) load these.
      .header('Cross-Origin-Resource-Policy', 'cross-origin')
      // Should the file ever be opened as a document, it can run nothing.
      .header('Content-Security-Policy', "default-src 'none'; sandbox")
    if (request.headers['if-none-match'] === etag) return reply.code(304).send(null)
    return reply.type(media.content_type).send(media.bytes)
  })
}
