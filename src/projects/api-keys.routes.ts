// /v1/api-keys: a project's owners and admins (and a full-scope key) list the
// keys that work, create one (the key is in that answer only) and revoke one,
// from the dashboard or a script. The permission is keys:manage
// (access/access.ts); the operator API keeps its own twin of each.
import { auditContext } from '../audit/audit-context.ts'
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { ErrorBody, Ok } from '../platform/http/shared-schemas.ts'
import { ApiKeyList, ApiKeyParams, CreateApiKeyBody, CreatedApiKey } from './api-keys.schemas.ts'
import { createKey, listActiveKeys, revokeKey } from './api-keys.service.ts'
import { bearerAuth } from './project-auth.ts'

const tags = ['api-keys']
const security: Array<Record<string, string[]>> = [{ apiKey: [] }, { session: [] }]

export function registerApiKeysRoutes(app: App, ctx: AppContext): void {
  const { db } = ctx
  const onRequest = bearerAuth(ctx, 'keys:manage')

  app.get('/v1/api-keys', {
    onRequest,
    schema: {
      operationId: 'listApiKeys',
      tags,
      security,
      summary: "The project's API keys that work, oldest first (never the keys themselves)",
      response: { 200: ApiKeyList, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => ({ api_keys: await listActiveKeys(db, request.project.id) }))

  app.post('/v1/api-keys', {
    onRequest,
    // The body is optional, as on the operator's route: a bare POST is validated as {}.
    preValidation: async (request) => {
      if (request.body === undefined) request.body = {}
    },
    schema: {
      operationId: 'createApiKey',
      tags,
      security,
      summary: 'Create an API key, optionally named and restricted to a scope (default full)',
      description: 'The answer is the only time the key is shown; Herald keeps its hash.',
      body: CreateApiKeyBody,
      response: { 201: CreatedApiKey, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => reply.code(201).send(await createKey(db, auditContext(request), request.project.id, request.body ?? {})))

  app.delete('/v1/api-keys/:id', {
    onRequest,
    schema: {
      operationId: 'revokeApiKey',
      tags,
      security,
      summary: 'Revoke an API key at once',
      description: "Its next request is 401 invalid_api_key. A key may revoke itself. Another project's key id is 404 api_key_not_found.",
      params: ApiKeyParams,
      response: { 200: Ok, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => {
    await revokeKey(db, auditContext(request), request.project.id, request.params.id)
    return { ok: true as const }
  })
}
