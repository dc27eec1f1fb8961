// The operator API (decisions.md §2): projects, plans, limit overrides and API
// keys, behind HERALD_ADMIN_TOKEN. Every route has a CLI twin in cli.ts; both
// call admin.service.ts.
import type { FastifyRequest } from 'fastify'
import type { AppContext } from '../platform/context.ts'
import { AppError } from '../platform/errors.ts'
import type { App } from '../platform/http/app-type.ts'
import { adminAuth } from '../platform/http/auth.ts'

import {
  ApiKeyList,
  CreateApiKeyBody,
  CreatedApiKey,
  CreatedProject,
  CreateProjectBody,
  ListProjectsQuery,
  PATCH_PROJECT_BODY_LIMIT,
  Project,
  ProjectKeyParams,
  ProjectList,
  ProjectParams,
  UpdateProjectBody,
  VapidKeysBody,
} from './admin.schemas.ts'
import {
  createProjectApiKey,
  createProjectForOperator,
  getProject,
  listProjectApiKeys,
  listProjectsForOperator,
  replaceVapidKeys,
  revokeProjectApiKey,
  updateProjectSettings,
} from './admin.service.ts'
import { ErrorBody, Ok } from '../platform/http/shared-schemas.ts'
import { CreatedInvite, CreatedPasswordReset, CreatePasswordResetBody, InviteBody } from '../accounts/accounts.schemas.ts'
import { createPasswordReset } from '../accounts/passwords.service.ts'
import { createInvite } from '../accounts/invites.service.ts'
import { auditContext, OPERATOR } from '../audit/audit-context.ts'
import { Readable } from 'node:stream'
import { ExportBody, ExportQuery } from '../subscribers/subscribers.schemas.ts'
import { exportSubscribers } from '../subscribers/export.service.ts'
import { EXPORT_CONTENT_TYPES } from '../subscribers/subscribers.routes.ts'
import { findProjectKeys } from './projects.store.ts'
import { registerOperatorVapidKeyRoutes } from './vapid-keys.routes.ts'

const tags = ['admin']
const security = [{ adminToken: [] }]

/** Without an operator token configured, nobody is the operator: every admin request is refused. */
async function refuseAll(_request: FastifyRequest): Promise<void> {
  throw new AppError('invalid_admin_token', 'No operator token is configured on this server.')
}

export function registerAdminRoutes(app: App, ctx: AppContext): void {
  const onRequest = ctx.config.adminToken ? adminAuth(ctx.config.adminToken) : refuseAll
  const { db, config } = ctx

  app.post(
    '/admin/v1/projects',
    { onRequest, schema: { operationId: 'createProject', tags, security, summary: 'Create a project and its first API key, with a fresh or an imported VAPID pair', body: CreateProjectBody, response: { 201: CreatedProject, 400: ErrorBody, 401: ErrorBody } } },
    async (request, reply) => reply.code(201).send(await createProjectForOperator(db, request.body)),
  )

  app.get(
    '/admin/v1/projects',
    { onRequest, schema: { operationId: 'listProjects', tags, security, summary: 'List projects, newest first', querystring: ListProjectsQuery, response: { 200: ProjectList, 400: ErrorBody, 401: ErrorBody } } },
    async (request) => listProjectsForOperator(db, request.query),
  )

  app.get(
    '/admin/v1/projects/:id',
    { onRequest, schema: { operationId: 'getProject', tags, security, summary: 'Get a project with its limits and usage', params: ProjectParams, response: { 200: Project, 401: ErrorBody, 404: ErrorBody } } },
    async (request) => getProject(db, request.params.id),
  )

  app.patch(
    '/admin/v1/projects/:id',
    {
      onRequest,
      bodyLimit: PATCH_PROJECT_BODY_LIMIT,
      schema: {
        operationId: 'updateProject',
        tags,
        security,
        summary: 'Change plan, default icon, limit overrides or subscription expiry rules',
        description: 'limits are merged into the stored overrides: a number sets a field, null returns it to the plan value, an absent field keeps its override. expire_after_failures and expire_after_days_without_delivery: a number turns the rule on, null off, absence keeps it.',
        params: ProjectParams,
        body: UpdateProjectBody,
        response: { 200: Project, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
      },
    },
    async (request) => updateProjectSettings(db, config, auditContext(request, OPERATOR), request.params.id, request.body),
  )

  app.put(
    '/admin/v1/projects/:id/vapid-keys',
    {
      onRequest,
      schema: {
        operationId: 'replaceProjectVapidKeys',
        tags,
        security,
        summary: "Replace a project's VAPID key pair with an imported one, while it has no active subscriber",
        description: 'The pair is checked (the public key must be the private key\'s point on P-256), else 400 naming the field. Refused with 409 vapid_keys_in_use once the project has active subscribers: their subscriptions are bound to the current public key.',
        params: ProjectParams,
        body: VapidKeysBody,
        response: { 200: Project, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody },
      },
    },
    async (request) => replaceVapidKeys(db, auditContext(request, OPERATOR), request.params.id, request.body),
  )

  registerOperatorVapidKeyRoutes(app, ctx, onRequest)

  app.get(
    '/admin/v1/projects/:id/subscribers/export',
    {
      onRequest,
      schema: {
        operationId: 'exportProjectSubscribers',
        tags,
        security,
        summary: "Export a project's subscribers with their keys and the project's VAPID pair, so another sender can take over",
        description: 'As GET /v1/subscribers/export, plus keys { p256dh, auth } on each line (p256dh and auth columns in CSV). The NDJSON form starts with one line { herald_export: 1, project, vapid_public, vapid_private }, which POST /v1/subscribers/import skips. It holds secrets: keep the file as you keep the private key.',
        params: ProjectParams,
        querystring: ExportQuery,
        response: { 200: ExportBody, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
      },
    },
    async (request, reply) => {
      const keys = await findProjectKeys(db, request.params.id)
      if (!keys) throw new AppError('project_not_found', `No project ${request.params.id}.`)
      const format = request.query.format ?? 'ndjson'
      reply.type(EXPORT_CONTENT_TYPES[format])
      // A stream is sent as it comes (never through the serializer); the schema documents its text.
      return reply.send(Readable.from(exportSubscribers(db, keys.id, { format, vapid: { vapid_public: keys.vapid_public, vapid_private: keys.vapid_private } })) as unknown as string)
    },
  )

  app.get(
    '/admin/v1/projects/:id/api-keys',
    { onRequest, schema: { operationId: 'listProjectApiKeys', tags, security, summary: "List a project's API keys (never the keys themselves)", params: ProjectParams, response: { 200: ApiKeyList, 401: ErrorBody, 404: ErrorBody } } },
    async (request) => listProjectApiKeys(db, request.params.id),
  )

  app.post(
    '/admin/v1/projects/:id/api-keys',
    {
      onRequest,
      // The body is optional: a bare POST (no body at all) is validated as {}.
      // A body that is there must be the object the schema says; JSON null is not.
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {}
      },
      schema: { operationId: 'createProjectApiKey', tags, security, summary: 'Create an API key, optionally with a scope (default full)', params: ProjectParams, body: CreateApiKeyBody, response: { 201: CreatedApiKey, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody } },
    },
    async (request, reply) => reply.code(201).send(await createProjectApiKey(db, auditContext(request, OPERATOR), request.params.id, request.body ?? {})),
  )

  app.delete(
    '/admin/v1/projects/:id/api-keys/:key_id',
    { onRequest, schema: { operationId: 'revokeProjectApiKey', tags, security, summary: 'Revoke an API key at once', params: ProjectKeyParams, response: { 200: Ok, 401: ErrorBody, 404: ErrorBody } } },
    async (request) => {
      await revokeProjectApiKey(db, auditContext(request, OPERATOR), request.params.id, request.params.key_id)
      return { ok: true as const }
    },
  )

  app.post(
    '/admin/v1/projects/:id/members',
    {
      onRequest,
      schema: {
        operationId: 'inviteProjectMember',
        tags,
        security,
        summary: 'Invite a member (the first owner): answers a one-time invite link, valid 72 hours',
        params: ProjectParams,
        body: InviteBody,
        response: { 201: CreatedInvite, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await createInvite(db, config, auditContext(request, OPERATOR), { projectId: request.params.id, email: request.body.email, role: request.body.role, invitedBy: null })),
  )

  app.post(
    '/admin/v1/users/password-reset',
    {
      onRequest,
      schema: {
        operationId: 'createPasswordResetLink',
        tags,
        security,
        summary: 'Make a password reset link for an account: single use, valid one hour',
        description:
          'No e-mail is sent: hand the link to its owner. It ends the account\'s earlier links; using it sets a new password and ends every session of the account. An email with no account is 404 user_not_found.',
        body: CreatePasswordResetBody,
        response: { 201: CreatedPasswordReset, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
      },
    },
    async (request, reply) => reply.code(201).send(await createPasswordReset(db, config, auditContext(request, OPERATOR), request.body.email)),
  )
}
