// POST /v1/broadcasts/:id/experiment/decide (docs/experiments.md): a person
// ends an A/B test early and picks the winner (or takes the leader now).
// Who may send may decide (broadcasts:send); viewers may not.
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { bearerAuth } from '../projects/project-auth.ts'
import { BroadcastIdParams, BroadcastView } from '../broadcasts/broadcasts.schemas.ts'
import { getBroadcast } from '../broadcasts/broadcasts.service.ts'
import { ErrorBody } from '../platform/http/shared-schemas.ts'
import { auditContext } from '../audit/audit-context.ts'
import { DecideBody } from './experiments.schemas.ts'
import { decideExperiment } from './experiments.service.ts'

export function registerExperimentsRoutes(app: App, ctx: AppContext): void {
  app.post(
    '/v1/broadcasts/:id/experiment/decide',
    {
      onRequest: bearerAuth(ctx, 'broadcasts:send'),
      schema: {
        operationId: 'decideExperiment',
        tags: ['broadcasts'],
        summary: "End a broadcast's A/B test early and send the winner to the rest",
        description:
          'With { winner: "b" }, that variant; with {}, the leader now. The winner goes to the rest of the audience at once. ' +
          '404 experiment_not_found for a broadcast without a test; 409 experiment_not_decidable when the test is not running ' +
          '(not started, already decided, test_share 1, or the broadcast stopped). Answers the broadcast, with its experiment.',
        security: [{ apiKey: [] }],
        params: BroadcastIdParams,
        body: DecideBody,
        response: { 200: BroadcastView, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody },
      },
    },
    async (request) => {
      await decideExperiment(ctx.db, auditContext(request), request.project.id, request.params.id, request.body?.winner)
      return getBroadcast(ctx.db, request.project.id, request.params.id)
    },
  )
}
