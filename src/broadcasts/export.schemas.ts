// GET /v1/broadcasts/export (issue 25): the list's filter, a date range and a format.
import { Type, type Static } from 'typebox'
import { BROADCAST_SOURCES, BROADCAST_STATUSES } from './broadcasts.schemas.ts'

/** The last millisecond a JavaScript Date can hold. */
const UNIX_MS_MAX = 8_640_000_000_000_000

export const ExportBroadcastsQuery = Type.Object({
  status: Type.Optional(Type.Enum(BROADCAST_STATUSES, { description: 'Only broadcasts with this status (as GET /v1/broadcasts).' })),
  source: Type.Optional(Type.Enum([...BROADCAST_SOURCES], { description: 'Only broadcasts sent through the API (api) or from the dashboard (dashboard).' })),
  from: Type.Optional(Type.Integer({ minimum: 0, maximum: UNIX_MS_MAX, description: 'Unix ms: only broadcasts created at or after then.' })),
  to: Type.Optional(Type.Integer({ minimum: 0, maximum: UNIX_MS_MAX, description: 'Unix ms: only broadcasts created before then.' })),
  format: Type.Optional(Type.Union([Type.Literal('csv'), Type.Literal('ndjson')], {
    description: 'csv (default): a header line, then one broadcast a line; ndjson: one JSON object a line, with the same fields.',
  })),
})
export type ExportBroadcastsQuery = Static<typeof ExportBroadcastsQuery>

export const ExportBroadcastsBody = Type.String({
  description:
    'The stream, newest first: id, created_at, scheduled_at, started_at, finished_at (ISO 8601, UTC; empty when not yet), status, source, ' +
    'title, body, url, target (JSON), then the funnel: audience, sent, delivered, cannot_report_shown, shown, failed, clicked, dismissed, click_rate ' +
    '(clicked over delivered, 0 to 1; empty when nothing was delivered), shown_rate and click_through_shown (the funnel\'s rates). docs/exports.md explains each column.',
})
