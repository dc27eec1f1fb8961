// GET /v1/audit-log (issue 13): owners and admins (and full keys) read who
// changed what in their project. The entries are written by each domain's
// services through audit/audit.store.ts recordAudit; the log is read here, beside the
// project's other views, because reading it takes the project's authentication.
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { ErrorBody } from '../platform/http/shared-schemas.ts'
import { bearerAuth } from './project-auth.ts'
import { AuditList, ListAuditQuery } from '../audit/audit.schemas.ts'
import { listAuditLog } from '../audit/audit.service.ts'

export function registerAuditRoutes(app: App, ctx: AppContext): void {
  app.get('/v1/audit-log', {
    onRequest: bearerAuth(ctx, 'audit:read'),
    schema: {
      operationId: 'listAuditLog',
      tags: ['audit'],
      summary: "The project's audit log, newest first",
      description:
        'Every change made through the API or the dashboard: who (a user, a key or the operator), what, the target, when and from where. ' +
        'Filters: actor_id, action (exact, or a prefix ending with a dot such as broadcast.), target_id, since and until (Unix ms). ' +
        'Owners, admins and full API keys only.',
      security: [{ apiKey: [] }, { session: [] }],
      querystring: ListAuditQuery,
      response: { 200: AuditList, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => listAuditLog(ctx.db, request.project.id, request.query))
}
