// The /v1/subscribers resource (decisions.md §3): list, read, tag (issue 12) and erase.
// Bearer auth. Erasure is a hard delete; memberships and event rows cascade.
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { bearerAuth } from '../projects/project-auth.ts'

import {
  Deleted,
  EraseByEndpointBody,
  ExternalIdParams,
  ListSubscribersQuery,
  Subscriber,
  SubscriberCounts,
  SubscriberList,
  SubscriberParams,
  TagsPatchBody,
  Updated,
} from './subscribers.schemas.ts'
import * as service from './subscribers.service.ts'
import { auditContext } from '../audit/audit-context.ts'
import * as store from './subscribers.store.ts'
import { ErrorBody } from '../platform/http/shared-schemas.ts'
import { allows, SEES_PUSH_ENDPOINTS } from '../access/access.ts'
import type { FastifyRequest } from 'fastify'

/** Endpoints whole only for actors who may erase subscribers; masked for the others (issue 22). */
const view = (request: FastifyRequest): service.SubscriberView => ({ endpoints: request.actor !== undefined && allows(request.actor, SEES_PUSH_ENDPOINTS) })
import { invalidField } from '../platform/errors.ts'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { ImportResult } from './import.schemas.ts'
import { importSubscribers, type ImportFormat } from './import.service.ts'
import { Readable } from 'node:stream'
import { exportSubscribers } from './export.service.ts'
import { ExportBody, ExportSubscribersQuery, SubscriberHealthCounts } from './subscribers.schemas.ts'
import { countByHealth } from './health.store.ts'

export const EXPORT_CONTENT_TYPES = { ndjson: 'application/x-ndjson', csv: 'text/csv; charset=utf-8' } as const

const tags = ['subscribers']
const security = [{ apiKey: [] }]

/** The import's format from its content type; null for any other type. */
function importFormat(contentType: string | undefined): ImportFormat | null {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
  return type === 'application/x-ndjson' ? 'ndjson' : type === 'text/csv' ? 'csv' : null
}

export function registerSubscribersRoutes(app: App, ctx: AppContext): void {
  app.register(async (plugin) => {
    const scope = plugin.withTypeProvider<TypeBoxTypeProvider>()
    // The upload is handed over as the raw stream, never parsed or buffered
    // whole: import.service.ts reads it line by line and enforces its own
    // size bound (IMPORT_BODY_MAX_BYTES), so Fastify's bodyLimit does not apply.
    scope.addContentTypeParser(['application/x-ndjson', 'text/csv'], (_request, payload, done) => done(null, payload))
    scope.post('/v1/subscribers/import', {
      onRequest: bearerAuth(ctx, 'subscribers:import'),
      schema: {
        operationId: 'importSubscribers',
        tags,
        security,
        summary: 'Import subscriptions from another provider, as NDJSON or CSV',
        description:
          'Send Content-Type: application/x-ndjson, one subscription a line: endpoint, keys { p256dh, auth }, and optionally external_id, group_ids or groups (names), tags, created_at. ' +
          'Each line is checked as POST /v1/subscribe checks its body; bad lines are skipped and reported, the good ones imported. ' +
          'Or Content-Type: text/csv, a header line naming the columns (endpoint, p256dh, auth, external_id, group_ids, groups, tags, created_at; lists and tags as JSON cells). ' +
          'Idempotent on endpoint: importing the same file again changes nothing. New subscribers count toward the plan\'s subscriber cap; lines over it are skipped. ' +
          "A line (or the vapid_public column) may name the VAPID public key its subscription was made with, one of the project's keys not retired; without it a new subscription is on the current key and an existing one keeps its own (docs/vapid-keys.md).",
        response: { 200: ImportResult, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 413: ErrorBody, 429: ErrorBody },
      },
    }, async (request) => {
      // Any other type was parsed by another parser (JSON) or not at all: only NDJSON is a stream here.
      const format = importFormat(request.headers['content-type'])
      if (!format) throw invalidField('content-type', 'must be application/x-ndjson or text/csv')
      return importSubscribers(ctx.db, ctx.config, auditContext(request), request.project, format, request.body as AsyncIterable<Buffer>)
    })
  })


  app.get('/v1/subscribers', {
    onRequest: bearerAuth(ctx, 'subscribers:read'),
    schema: {
      operationId: 'listSubscribers',
      tags,
      security,
      summary: 'List subscribers, newest first',
      description: 'Filters combine. Pass next_cursor back as ?cursor= for the next page; null means the last page.',
      querystring: ListSubscribersQuery,
      response: { 200: SubscriberList, 400: ErrorBody, 401: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => service.listSubscribers(ctx.db, request.project.id, request.query, view(request)))

  // Static paths: find-my-way prefers them to /:sid.
  app.get('/v1/subscribers/export', {
    onRequest: bearerAuth(ctx, 'subscribers:read'),
    schema: {
      operationId: 'exportSubscribers',
      tags,
      security,
      summary: 'Export the subscribers of the project, streamed as NDJSON or CSV (without the keys)',
      description: 'The filters are those of GET /v1/subscribers (they combine; none: every subscriber). In CSV, a text cell that a spreadsheet would run as a formula (starting with =, +, -, @, a tab or a carriage return) starts with an apostrophe, which POST /v1/subscribers/import removes again (docs/exports.md). The keys of each subscription, and the project\'s VAPID pair, are in the operator\'s export only (GET /admin/v1/projects/{id}/subscribers/export). Endpoints are masked, as in the subscriber list, for actors who may not erase subscribers (editors, viewers).',
      querystring: ExportSubscribersQuery,
      response: { 200: ExportBody, 400: ErrorBody, 401: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => {
    const format = request.query.format ?? 'ndjson'
    const filter = service.subscriberConditions(request.query)
    reply.type(EXPORT_CONTENT_TYPES[format])
    // A stream is sent as it comes (never through the serializer); the schema documents its text.
    return reply.send(Readable.from(exportSubscribers(ctx.db, request.project.id, { format, endpoints: view(request).endpoints, filter })) as unknown as string)
  })

  // A static path: find-my-way prefers it to /:sid, and "counts" is never a sub_ id.
  app.get('/v1/subscribers/counts', {
    onRequest: bearerAuth(ctx, 'project:read'),
    schema: {
      operationId: 'countSubscribers',
      tags,
      security,
      summary: 'How many subscribers the project has, by status',
      description: 'active, unsubscribed and expired, for an overview without listing every subscriber.',
      response: { 200: SubscriberCounts, 401: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => store.countByStatus(ctx.db, request.project.id))

  // A static path too; a separate route so that /counts stays a read of counters and indexes.
  app.get('/v1/subscribers/health', {
    onRequest: bearerAuth(ctx, 'project:read'),
    schema: {
      operationId: 'countSubscriberHealth',
      tags,
      security,
      summary: 'How many active subscribers are active, dormant or failing',
      description: 'failing: the last push failed; dormant: no click and no subscribe call from the browser in 30 days, not failing; active: the others (docs/subscription-health.md). One pass over the active subscribers.',
      response: { 200: SubscriberHealthCounts, 401: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => countByHealth(ctx.db, request.project.id))

  app.get('/v1/subscribers/:sid', {
    onRequest: bearerAuth(ctx, 'subscribers:read'),
    schema: { operationId: 'getSubscriber', tags, security, summary: 'Get one subscriber', params: SubscriberParams, response: { 200: Subscriber, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody } },
  }, async (request) => service.getSubscriber(ctx.db, request.project.id, request.params.sid, view(request)))

  app.patch('/v1/subscribers/:sid', {
    onRequest: bearerAuth(ctx, 'subscribers:tags'),
    schema: {
      operationId: 'updateSubscriberTags',
      tags,
      security,
      summary: "Set a subscriber's tags or time zone",
      description: 'Replaces its tags, or with merge: true sets the keys given (null removes one) and keeps the others. 400 when the result would hold more than 50 keys. timezone sets its IANA time zone (null clears it; docs/timing.md). Answers the updated subscriber.',
      params: SubscriberParams,
      body: TagsPatchBody,
      response: { 200: Subscriber, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => service.patchTags(ctx.db, auditContext(request), request.project.id, request.params.sid, request.body, view(request)))

  app.patch('/v1/subscribers/by-external-id/:external_id', {
    onRequest: bearerAuth(ctx, 'subscribers:tags'),
    schema: {
      operationId: 'updateUserSubscriberTags',
      tags,
      security,
      summary: 'Set the tags of every subscriber (device) of one user',
      description: 'As PATCH /v1/subscribers/{sid}, for every subscriber with this external_id whatever its status, all or none. 404 subscriber_not_found when there is none.',
      params: ExternalIdParams,
      body: TagsPatchBody,
      response: { 200: Updated, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => ({ updated: await service.patchTagsByExternalId(ctx.db, auditContext(request), request.project.id, request.params.external_id, request.body) }))

  // Static paths before /:sid: find-my-way prefers them, so "by-endpoint" is never read as an id.
  app.delete('/v1/subscribers/by-endpoint', {
    onRequest: bearerAuth(ctx, 'subscribers:write'),
    schema: {
      operationId: 'eraseSubscriberByEndpoint',
      tags,
      security,
      summary: 'Erase the subscriber with this endpoint',
      description: 'Hard delete of the row, its memberships and its events. deleted is 0 when the endpoint is not on file.',
      body: EraseByEndpointBody,
      response: { 200: Deleted, 400: ErrorBody, 401: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => ({ deleted: await service.eraseByEndpoint(ctx.db, auditContext(request), request.project.id, request.body.endpoint) }))

  app.delete('/v1/subscribers/by-external-id/:external_id', {
    onRequest: bearerAuth(ctx, 'subscribers:write'),
    schema: {
      operationId: 'eraseUserSubscribers',
      tags,
      security,
      summary: 'Erase every subscriber (device) of one user',
      description: 'Hard delete of the rows, their memberships and their events.',
      params: ExternalIdParams,
      response: { 200: Deleted, 400: ErrorBody, 401: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => ({ deleted: await service.eraseByExternalId(ctx.db, auditContext(request), request.project.id, request.params.external_id) }))

  app.delete('/v1/subscribers/:sid', {
    onRequest: bearerAuth(ctx, 'subscribers:write'),
    schema: {
      operationId: 'eraseSubscriber',
      tags,
      security,
      summary: 'Erase one subscriber',
      description: 'Hard delete of the row, its memberships and its events. Counts already on broadcasts stay.',
      params: SubscriberParams,
      response: { 200: Deleted, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => ({ deleted: await service.eraseById(ctx.db, auditContext(request), request.project.id, request.params.sid) }))
}
