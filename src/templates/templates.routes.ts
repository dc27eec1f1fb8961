// /v1/templates (issue 24): saved notifications with variables and languages.
// Read with broadcasts:read (whoever sees broadcasts sees what they said);
// written with templates:write (editors and up, and send-scoped keys).
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { bearerAuth } from '../projects/project-auth.ts'
import { ErrorBody, Ok } from '../platform/http/shared-schemas.ts'
import { auditContext } from '../audit/audit-context.ts'
import { CreateTemplateBody, TemplateList, TemplateParams, TemplateView, UpdateTemplateBody } from './templates.schemas.ts'
import * as service from './templates.service.ts'

const tags = ['templates']
const security = [{ apiKey: [] }]

export function registerTemplatesRoutes(app: App, ctx: AppContext): void {
  app.get('/v1/templates', {
    onRequest: bearerAuth(ctx, 'broadcasts:read'),
    schema: { operationId: 'listTemplates', tags, security, summary: "List the project's templates, by name", response: { 200: TemplateList } },
  }, async (request) => ({ templates: await service.listTemplates(ctx.db, request.project.id) }))

  app.post('/v1/templates', {
    onRequest: bearerAuth(ctx, 'templates:write'),
    schema: {
      operationId: 'createTemplate',
      tags,
      security,
      summary: 'Save a template',
      description:
        'Fields may hold variables ({{ tags.first_name | default: "there" }}); each is parsed now, so a template that uses a tag, filter or ' +
        'variable templates do not allow is refused (400 template_invalid naming the field). Names are unique per project (409 template_name_taken).',
      body: CreateTemplateBody,
      response: { 201: TemplateView, 400: ErrorBody, 409: ErrorBody },
    },
  }, async (request, reply) => reply.code(201).send(await service.createTemplate(ctx.db, auditContext(request), request.project.id, request.body)))

  app.get('/v1/templates/:id', {
    onRequest: bearerAuth(ctx, 'broadcasts:read'),
    schema: { operationId: 'getTemplate', tags, security, summary: 'Get a template', params: TemplateParams, response: { 200: TemplateView, 404: ErrorBody } },
  }, async (request) => service.getTemplate(ctx.db, request.project.id, request.params.id))

  app.patch('/v1/templates/:id', {
    onRequest: bearerAuth(ctx, 'templates:write'),
    schema: {
      operationId: 'updateTemplate',
      tags,
      security,
      summary: 'Change a template',
      description: 'Each field given replaces the stored one whole, checked as at create. Broadcasts already sent with the template keep what they sent.',
      params: TemplateParams,
      body: UpdateTemplateBody,
      response: { 200: TemplateView, 400: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    },
  }, async (request) => service.updateTemplate(ctx.db, auditContext(request), request.project.id, request.params.id, request.body))

  app.delete('/v1/templates/:id', {
    onRequest: bearerAuth(ctx, 'templates:write'),
    schema: {
      operationId: 'deleteTemplate',
      tags,
      security,
      summary: 'Delete a template',
      description: 'Broadcasts sent with it, scheduled ones included, keep their own copy of its fields.',
      params: TemplateParams,
      response: { 200: Ok, 404: ErrorBody },
    },
  }, async (request) => {
    await service.deleteTemplate(ctx.db, auditContext(request), request.project.id, request.params.id)
    return { ok: true as const }
  })
}
