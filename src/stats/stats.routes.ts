// GET /v1/stats (issue 25, docs/stats.md): numbers over time, read by whoever
// may read the project's broadcasts.
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { ErrorBody } from '../platform/http/shared-schemas.ts'
import { bearerAuth } from '../projects/project-auth.ts'
import { StatsQuery, StatsResponse } from './stats.schemas.ts'
import { getStats } from './stats.service.ts'

export function registerStatsRoutes(app: App, ctx: AppContext): void {
  app.get('/v1/stats', {
    onRequest: bearerAuth(ctx, 'broadcasts:read'),
    schema: {
      operationId: 'getStats',
      tags: ['stats'],
      summary: 'Pushes, engagement and subscribers per hour or day',
      description:
        "Per hour or day of the project's default_timezone: pushes sent, delivered, shown, clicked, dismissed, failed by reason; " +
        'subscribers gained by source, lost by reason, and active at the end of each bucket. ' +
        'from and to are Unix ms (to excluded; default the last 30 days, or 24 hours for interval=hour); at most 1000 buckets. ' +
        'Counted from the upgrade to 0.3.0 on (stats_since). Anyone who may read broadcasts. docs/stats.md.',
      security: [{ apiKey: [] }, { session: [] }],
      querystring: StatsQuery,
      response: { 200: StatsResponse, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => getStats(ctx.db, request.project.id, request.query))
}
