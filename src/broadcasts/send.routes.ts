// POST /v1/send (api.md 4.7).
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { bearerAuth } from '../projects/project-auth.ts'
import { SendBody, SendHeaders, SendResponse } from './broadcasts.schemas.ts'
import { sendBroadcast } from './send.service.ts'
import { sendIdempotently } from './idempotent-send.ts'
import { DryRunResponse } from './dry-run.schemas.ts'
import { dryRunSend } from './dry-run.ts'
import { ErrorBody } from '../platform/http/shared-schemas.ts'
import { auditContext } from '../audit/audit-context.ts'
import { allows } from '../access/access.ts'

/**
 * A 1 MB image and a 256 KB icon as base64 data URLs take about 1.7 MB of
 * JSON (base64 adds a third); 2 MiB leaves room for the rest of the body.
 */
export const SEND_BODY_LIMIT = 2 * 1024 * 1024

export function registerSendRoutes(app: App, ctx: AppContext): void {
  app.post(
    '/v1/send',
    {
      bodyLimit: SEND_BODY_LIMIT,
      onRequest: bearerAuth(ctx, 'broadcasts:send'),
      schema: {
        operationId: 'sendNotification',
        tags: ['broadcasts'],
        summary: 'Send or schedule a broadcast',
        description:
          'Creates a broadcast and queues it for fan-out, at once or at scheduled_at (Plus plan or higher): 202. ' +
          'With "dry_run": true, checks the send exactly as a real one (same errors) and answers 200 with its audience, ' +
          'the size of each push and warnings, creating, storing and counting nothing. ' +
          'With an Idempotency-Key header, a retry gets the first answer again (Idempotent-Replayed: true) instead of a second broadcast.',
        security: [{ apiKey: [] }],
        headers: SendHeaders,
        body: SendBody,
        response: {
          200: DryRunResponse,
          202: SendResponse,
          400: ErrorBody,
          401: ErrorBody,
          403: ErrorBody,
          404: ErrorBody,
          409: ErrorBody,
          422: ErrorBody,
          429: ErrorBody,
        },
      },
    },
    async (request, reply) => {
      if (request.body.dry_run) {
        // The preview of rendered subscribers and the coverage only to who may read subscribers (dry-run.ts).
        const readsSubscribers = request.actor !== undefined && allows(request.actor, 'subscribers:read')
        return reply.code(200).send(await dryRunSend(ctx, request.project, request.body, { readsSubscribers }))
      }
      const source = request.headers['x-herald-source'] ?? 'api'
      const key = request.headers['idempotency-key']
      // A dry run creates nothing, so there is nothing to replay: it ignores the key (docs/decisions.md "Idempotent sends").
      // Nor is it recorded in the audit log: it changes nothing.
      const audit = auditContext(request)
      if (key === undefined) return reply.code(202).send(await sendBroadcast(ctx, request.project, request.body, audit, { source }))
      const answer = await sendIdempotently(ctx, request.project, request.body, key, audit, { source })
      if (answer.replayed) reply.header('idempotent-replayed', 'true')
      return reply.code(answer.status as 202).send(answer.body)
    },
  )
}
