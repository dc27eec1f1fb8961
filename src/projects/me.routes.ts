// GET /v1/me (bearer) and GET /v1/vapid-public-key?project= (public, CORS):
// decisions.md §3.
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { AppError } from '../platform/errors.ts'
import { auditContext } from '../audit/audit-context.ts'
import { bearerAuth, enforceProjectRateLimit, projectFromQuery } from './project-auth.ts'
import { PATCH_PROJECT_BODY_LIMIT } from './admin.schemas.ts'
import { describeProject, updateOwnProject } from './me.service.ts'
import { MeResponse, UpdateMeBody, VapidKeyQuery, VapidKeyResponse } from './me.schemas.ts'
import { ErrorBody } from '../platform/http/shared-schemas.ts'

/**
 * A project's VAPID key never changes, so browsers may keep it a while; an
 * hour spares the API a request on every page view of a busy site.
 */
const VAPID_KEY_MAX_AGE_SECONDS = 3600

export function registerMeRoutes(app: App, ctx: AppContext): void {
  app.get('/v1/me', {
    onRequest: bearerAuth(ctx, 'project:read'),
    schema: {
      operationId: 'getCurrentProject',
      tags: ['project'],
      summary: 'The project of this API key: plan, limits, usage, VAPID public key',
      security: [{ apiKey: [] }],
      response: { 200: MeResponse, 401: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => describeProject(ctx.db, request.project))

  app.patch('/v1/me', {
    onRequest: bearerAuth(ctx, 'project:write'),
    // The same room as the operator's PATCH: a 256 KB data-URL icon grows by a third as base64.
    bodyLimit: PATCH_PROJECT_BODY_LIMIT,
    schema: {
      operationId: 'updateCurrentProject',
      tags: ['project'],
      summary: "Set the project's default notification icon, default time zone, quiet hours, subscription expiry rules or frequency caps",
      description: 'Sets the fields given (at least one), the others stay. default_icon takes the forms of notification.icon: an HTTPS URL, or a square PNG/JPEG/WebP data URL (at most 256 KB) that Herald hosts; default_timezone an IANA zone name; quiet_hours { start, end } local times or null (docs/timing.md). expire_after_failures and expire_after_days_without_delivery: a number turns the rule on, null off (docs/subscription-health.md). frequency_caps: up to 5 rules { max, per }, [] or null for none (docs/frequency-caps.md). Answers like GET /v1/me.',
      security: [{ apiKey: [] }],
      body: UpdateMeBody,
      response: { 200: MeResponse, 400: ErrorBody, 401: ErrorBody, 413: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => updateOwnProject(ctx.db, ctx.config, auditContext(request), request.project, request.body))

  app.get('/v1/vapid-public-key', {
    schema: {
      operationId: 'getVapidPublicKey',
      tags: ['project'],
      summary: "The project's VAPID public key, for the browser SDK (no API key needed)",
      security: [],
      querystring: VapidKeyQuery,
      response: { 200: VapidKeyResponse, 400: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => {
    if (!request.query.project) throw new AppError('missing_project', 'Give the project as the project query parameter.')
    const project = await projectFromQuery(ctx, request)
    if (!project) throw new AppError('project_not_found')
    request.project = project
    // Counted like the other browser routes, so it cannot be used to hammer the database for free.
    if (!(await enforceProjectRateLimit(ctx, request, reply))) throw new AppError('rate_limited')
    reply.header('Cache-Control', `public, max-age=${VAPID_KEY_MAX_AGE_SECONDS}`)
    return { vapid_public: project.vapid_public }
  })
}
