// Builds the HTTP application: platform plumbing first (errors, validation,
// OpenAPI, CORS), then each domain registers its own routes.
import Fastify, { type FastifyReply, type RouteOptions } from 'fastify'
import cors from '@fastify/cors'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { AppContext } from './platform/context.ts'
import type { App } from './platform/http/app-type.ts'
import { installErrorHandling } from './platform/http/errors.ts'
import { refuseUnstorableStrings, validatorCompiler } from './platform/http/validation.ts'
import { discardUnreadBodies } from './platform/http/unread-body.ts'
import { documentBodyLimit } from './platform/http/body-limit-docs.ts'
import { newId } from './platform/ids.ts'
import { RequestLog } from './platform/http/request-log.ts'
import { AppError } from './platform/errors.ts'
import { registerAdminRoutes } from './projects/admin.routes.ts'
import { registerMeRoutes } from './projects/me.routes.ts'
import { registerApiKeysRoutes } from './projects/api-keys.routes.ts'
import { registerVapidKeyRoutes } from './projects/vapid-keys.routes.ts'
import { documentBearerRoute } from './projects/project-auth.ts'
import { registerSessionRoutes } from './accounts/session.routes.ts'
import { registerMembersRoutes } from './projects/members.routes.ts'
import { registerAuditRoutes } from './projects/audit-log.routes.ts'
import { registerStatsRoutes } from './stats/stats.routes.ts'
import { registerGroupsRoutes } from './groups/groups.routes.ts'
import { registerTemplatesRoutes } from './templates/templates.routes.ts'
import { registerSubscribeRoutes } from './subscribers/subscribe.routes.ts'
import { registerSubscribersRoutes } from './subscribers/subscribers.routes.ts'
import { registerSendRoutes } from './broadcasts/send.routes.ts'
import { registerBroadcastsRoutes } from './broadcasts/broadcasts.routes.ts'
import { registerBroadcastExportRoutes } from './broadcasts/export.routes.ts'
import { registerTestDeviceRoutes } from './test-devices/test-devices.routes.ts'
import { registerExperimentsRoutes } from './experiments/experiments.routes.ts'
import { registerNotificationRoutes } from './broadcasts/notification.routes.ts'
import { registerEventsRoutes } from './events/events.routes.ts'
import { registerWebhooksRoutes } from './webhooks/webhooks.routes.ts'
import { registerMediaRoutes } from './media/media.routes.ts'
import { registerHealthRoutes } from './platform/http/health.routes.ts'
import { registerSdkRoutes } from './sdk/sdk.routes.ts'
import { registerDashboardRoutes } from './dashboard/dashboard.routes.ts'
import { installRequestMetrics, registerMetricsRoute } from './platform/metrics/metrics-http.ts'

/** Default body limit; routes that take images (send, project icon) raise their own. */
export const DEFAULT_BODY_LIMIT = 64 * 1024

/**
 * Routes a browser calls from the customer's site, cross-origin: these answer
 * CORS. Bearer routes do not, so an API key pasted into a web page cannot be
 * used from it.
 */
const BROWSER_ROUTES = [/^\/v1\/(subscribe|unsubscribe|events|vapid-public-key)(\?|$)/, /^\/v1\/notifications\//]

export interface BuildAppOptions {
  /** Readiness as seen by /readyz: the database answers and the worker (if any) runs. */
  isReady?: () => Promise<boolean> | boolean
  /** Called for every route as it is registered (tests use it to list the routes). */
  onRoute?: (route: RouteOptions) => void
}

export async function buildApp(ctx: AppContext, options: BuildAppOptions = {}): Promise<App> {
  const app = Fastify({
    loggerInstance: ctx.log,
    bodyLimit: DEFAULT_BODY_LIMIT,
    genReqId: () => newId('req'),
    // X-Forwarded-For only from the proxies HERALD_TRUST_PROXY names; else the
    // socket's address, so a client cannot pick the IP its limits and the audit log see.
    trustProxy: ctx.config.trustProxy.length > 0 ? ctx.config.trustProxy : false,
    return503OnClosing: true,
    // A line per request at debug only (platform/http/request-log.ts).
    logController: new RequestLog(),
    // Fastify's default of 100 would answer 414 to a valid external_id (up to
    // 256 characters) in DELETE /v1/subscribers/by-external-id/:external_id.
    routerOptions: { maxParamLength: 1024 },
    // Errors raised by the router before any route runs (a malformed or
    // over-long path) get Herald's error body too.
    frameworkErrors: (error, request, reply: FastifyReply) => {
      const appError = error.code === 'FST_ERR_BAD_URL' || error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? new AppError('invalid_request', 'The URL path is malformed or too long.', {
          issues: [{ path: 'params', message: 'must be percent-encoded UTF-8, at most 1024 characters a segment' }],
        })
        : new AppError('internal_error', undefined, { request_id: request.id })
      void reply.code(appError.status).send(appError.toBody())
    },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App

  app.setValidatorCompiler(validatorCompiler)
  // Bodies are JSON (api.md). Only the events beacon also takes text/plain, in its own scope.
  app.removeContentTypeParser('text/plain')
  installErrorHandling(app)
  installRequestMetrics(app, ctx.metrics)
  // A 413 (or any early answer) is read by the client, not lost to a reset.
  discardUnreadBodies(app)

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Herald API',
        version: '1.0.0',
        // Rendered as Markdown by /docs: a bare <API key> would be read as an
        // HTML tag and dropped ("Bearer ;"), so literal text goes in code spans.
        description: 'Self-hosted web push notifications. Bearer routes take `Authorization: Bearer <API key>`, or a member\'s session cookie (POST /v1/session) with `X-CSRF-Token` on requests that change something and `X-Herald-Project` to pick the project; browser routes take `?project=prj_x`.',
      },
      servers: [{ url: ctx.config.publicUrl }],
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'hk_live_…', description: 'A project API key, `hk_live_…`' },
          project: { type: 'apiKey', in: 'query', name: 'project', description: 'The project id (prj_…). Not a credential: no operation uses this scheme any more (the browser routes take `project` as a query parameter and are public); kept so earlier documents still resolve.' },
          adminToken: { type: 'http', scheme: 'bearer', description: 'The operator token, `HERALD_ADMIN_TOKEN`' },
          session: { type: 'apiKey', in: 'cookie', name: 'herald_session', description: 'A member\'s session (POST /v1/session); requests that change something also send `X-CSRF-Token`' },
        },
      },
    },
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())

  await app.register(cors, {
    delegator: (request, callback) => {
      const browserRoute = BROWSER_ROUTES.some((pattern) => pattern.test(request.url ?? ''))
      callback(null, browserRoute
        ? { origin: true, methods: ['GET', 'POST'], allowedHeaders: ['Content-Type', 'X-Service-Project'], maxAge: 86400 }
        : { origin: false })
    },
  })

  // After CORS, so a browser can read the 400; before every route's own hooks (authentication among them).
  refuseUnstorableStrings(app)

  if (options.onRoute) app.addHook('onRoute', options.onRoute)
  app.addHook('onRoute', documentBearerRoute)
  app.addHook('onRoute', documentBodyLimit)
  registerHealthRoutes(app, ctx, options.isReady ?? (() => true))
  registerMetricsRoute(app, ctx)
  registerAdminRoutes(app, ctx)
  registerMeRoutes(app, ctx)
  registerApiKeysRoutes(app, ctx)
  registerVapidKeyRoutes(app, ctx)
  registerSessionRoutes(app, ctx)
  registerMembersRoutes(app, ctx)
  registerAuditRoutes(app, ctx)
  registerStatsRoutes(app, ctx)
  registerGroupsRoutes(app, ctx)
  registerTemplatesRoutes(app, ctx)
  registerSubscribeRoutes(app, ctx)
  registerSubscribersRoutes(app, ctx)
  registerSendRoutes(app, ctx)
  registerBroadcastsRoutes(app, ctx)
  registerBroadcastExportRoutes(app, ctx)
  registerTestDeviceRoutes(app, ctx)
  registerExperimentsRoutes(app, ctx)
  registerNotificationRoutes(app, ctx)
  registerEventsRoutes(app, ctx)
  registerWebhooksRoutes(app, ctx)
  registerMediaRoutes(app, ctx)
  registerSdkRoutes(app, ctx)
  registerDashboardRoutes(app, ctx)

  await app.ready()
  return app
}
