// GET /v1/broadcasts/export (issue 25): a new path beside the list, so the
// list's contract (JSON pages) stays as it is; the same read scope.
import { Readable } from 'node:stream'
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { bearerAuth } from '../projects/project-auth.ts'
import { ErrorBody } from '../platform/http/shared-schemas.ts'
import { invalidField } from '../platform/errors.ts'
import { ExportBroadcastsBody, ExportBroadcastsQuery } from './export.schemas.ts'
import { exportBroadcasts } from './export.service.ts'

const CONTENT_TYPES = { csv: 'text/csv; charset=utf-8', ndjson: 'application/x-ndjson' } as const

export function registerBroadcastExportRoutes(app: App, ctx: AppContext): void {
  // A static path: find-my-way prefers it to /v1/broadcasts/:id, and "export" is never a bdc_ id.
  app.get('/v1/broadcasts/export', {
    onRequest: bearerAuth(ctx, 'broadcasts:read'),
    schema: {
      operationId: 'exportBroadcasts',
      tags: ['broadcasts'],
      security: [{ apiKey: [] }],
      summary: 'Export broadcasts with their counts and funnel, streamed as CSV (or NDJSON)',
      description:
        'Newest first; the filters combine: status and source as in the list, and a date range on created_at (from inclusive, to exclusive, Unix ms). ' +
        'In CSV, a text cell a spreadsheet would run as a formula (starting with =, +, -, @, a tab or a carriage return) starts with an apostrophe (docs/exports.md).',
      querystring: ExportBroadcastsQuery,
      response: { 200: ExportBroadcastsBody, 400: ErrorBody, 401: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => {
    const { status, source, from, to } = request.query
    if (from !== undefined && to !== undefined && to <= from) throw invalidField('to', 'must be later than from')
    const format = request.query.format ?? 'csv'
    const filter = { status, source, from: from === undefined ? undefined : new Date(from), to: to === undefined ? undefined : new Date(to) }
    reply.type(CONTENT_TYPES[format])
    if (format === 'csv') reply.header('content-disposition', `attachment; filename="broadcasts-${request.project.id}.csv"`)
    // A stream is sent as it comes (never through the serializer); the schema documents its text.
    return reply.send(Readable.from(exportBroadcasts(ctx.db, request.project.id, filter, format)) as unknown as string)
  })
}
