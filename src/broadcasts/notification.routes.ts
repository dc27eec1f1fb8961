// GET /v1/notifications/:broadcast_id?project=prj_x (decisions.md §4): the
// notification's content, for a service worker whose push carried only the
// `fetch: true` stub because the full JSON did not fit one push record.
// Called cross-origin from the customer's service worker, without a key: the
// content is what every subscriber sees anyway, and broadcast ids are random.
import { Type } from 'typebox'
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { projectFromQuery } from '../projects/project-auth.ts'
import { AppError } from '../platform/errors.ts'
import { fullPayload, NotificationPayload } from './notification-payload.ts'
import { findBroadcast } from './broadcasts.store.ts'
import { ErrorBody } from '../platform/http/shared-schemas.ts'
import { experimentContent } from '../experiments/experiments.service.ts'

export function registerNotificationRoutes(app: App, ctx: AppContext): void {
  app.get(
    '/v1/notifications/:broadcast_id',
    {
      schema: {
        operationId: 'getNotification',
        tags: ['browser'],
        summary: "A broadcast's notification content, for the service worker",
        security: [],
        params: Type.Object({ broadcast_id: Type.String({ maxLength: 64 }) }),
        querystring: Type.Object({
          project: Type.Optional(Type.String()),
          variant: Type.Optional(Type.String({ description: "An A/B test's variant, as the push's stub named it: that variant's content (docs/experiments.md). A key the broadcast has not is ignored." })),
        }),
        response: { 200: NotificationPayload, 400: ErrorBody, 404: ErrorBody },
      },
    },
    async (request, reply) => {
      if (!request.query.project) throw new AppError('missing_project', 'Give the project as the project query parameter.')
      const project = await projectFromQuery(ctx, request)
      if (!project) throw new AppError('project_not_found')
      const broadcast = await findBroadcast(ctx.db, project.id, request.params.broadcast_id)
      // Scheduled and canceled broadcasts have sent nothing: their content is not out yet.
      if (!broadcast || broadcast.status === 'scheduled' || broadcast.status === 'canceled') throw new AppError('broadcast_not_found')
      reply.header('Cache-Control', 'private, max-age=300')
      // An A/B test: the variant the stub named, or for the rest of the audience the winner's content.
      const content = broadcast.has_experiment ? await experimentContent(ctx.db, broadcast.id, request.query.variant) : null
      return fullPayload({ ...broadcast, ...(content ?? {}), project_id: project.id, broadcast_id: broadcast.id })
    },
  )
}
