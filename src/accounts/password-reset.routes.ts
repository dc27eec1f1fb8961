// The reset page's two calls: what a reset link is for, and setting the new
// password with it. No credentials (the link is the credential); counted
// against the per-IP sign-in limit, since a guess at a token is a guess at a
// way in. The operator makes the links (projects/admin.routes.ts, the CLI).
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { ErrorBody } from '../platform/http/shared-schemas.ts'
import { requestOrigin } from '../audit/audit-context.ts'
import { PasswordResetBody, PasswordResetDone, PasswordResetTokenBody, PasswordResetView } from './accounts.schemas.ts'
import { countAttempt } from './login-limit.ts'
import { inspectPasswordReset, resetPassword } from './passwords.service.ts'

const tags = ['session']

export function registerPasswordResetRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx

  app.post('/v1/password-reset/inspect', {
    schema: {
      operationId: 'inspectPasswordReset',
      tags,
      security: [],
      summary: 'Which account a password reset link is for, before setting the new password',
      description: 'Unknown, used, superseded and expired links are all 404 password_reset_not_found. Counted against the per-IP sign-in limit.',
      body: PasswordResetTokenBody,
      response: { 200: PasswordResetView, 400: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => {
    reply.header('Cache-Control', 'no-store')
    await countAttempt(ctx, request, reply, null)
    return inspectPasswordReset(db, request.body.token)
  })

  app.post('/v1/password-reset', {
    schema: {
      operationId: 'resetPassword',
      tags,
      security: [],
      summary: 'Set a new password with a reset link the operator made',
      description:
        'Single use, within an hour of the link (404 password_reset_not_found after, or once used). Ends every session of the account; sign in afterwards with POST /v1/session. A password too easy to guess is 400 weak_password (the link stays usable). Counted against the per-IP sign-in limit.',
      body: PasswordResetBody,
      response: { 200: PasswordResetDone, 400: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => {
    await countAttempt(ctx, request, reply, null)
    return { ok: true as const, ...(await resetPassword(db, ctx.config, requestOrigin(request), request.body.token, request.body.password)) }
  })
}
