// /v1/groups (api.md 4.1-4.6). Bearer auth; the service does the rest.
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { bearerAuth } from '../projects/project-auth.ts'

import {
  Added,
  AddMembersBody,
  CreatedId,
  CreateGroupBody,
  GroupList,
  GroupParams,
  MemberParams,
  UpdateGroupBody,
} from './groups.schemas.ts'
import * as service from './groups.service.ts'
import { ErrorBody, Ok } from '../platform/http/shared-schemas.ts'
import { auditContext } from '../audit/audit-context.ts'

const tags = ['groups']
const security = [{ apiKey: [] }]

export function registerGroupsRoutes(app: App, ctx: AppContext): void {

  app.get('/v1/groups', {
    onRequest: bearerAuth(ctx, 'groups:read'),
    schema: { operationId: 'listGroups', tags, security, summary: 'List every group of the project', response: { 200: GroupList, 401: ErrorBody, 429: ErrorBody } },
  }, async (request) => ({ groups: await service.listGroups(ctx.db, request.project.id) }))

  app.post('/v1/groups', {
    onRequest: bearerAuth(ctx, 'groups:write'),
    schema: {
      operationId: 'createGroup',
      tags,
      security,
      summary: 'Create a group',
      description: 'Subject to the plan’s group cap (403 group_limit_reached). Names are unique per project (409 group_name_taken).',
      body: CreateGroupBody,
      response: { 201: CreatedId, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 409: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => {
    const id = await service.createGroup(ctx.db, auditContext(request), request.project, request.body)
    return reply.code(201).send({ id })
  })

  app.patch('/v1/groups/:id', {
    onRequest: bearerAuth(ctx, 'groups:write'),
    schema: {
      operationId: 'updateGroup',
      tags,
      security,
      summary: 'Rename a group or change its description',
      description: 'description: null clears it. Sending neither field changes nothing.',
      params: GroupParams,
      body: UpdateGroupBody,
      response: { 200: Ok, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => {
    await service.updateGroup(ctx.db, auditContext(request), request.project.id, request.params.id, request.body)
    return { ok: true as const }
  })

  app.delete('/v1/groups/:id', {
    onRequest: bearerAuth(ctx, 'groups:write'),
    schema: {
      operationId: 'deleteGroup',
      tags,
      security,
      summary: 'Delete a group',
      description: 'Its memberships go with it; the subscribers stay.',
      params: GroupParams,
      response: { 200: Ok, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => {
    await service.deleteGroup(ctx.db, auditContext(request), request.project.id, request.params.id)
    return { ok: true as const }
  })

  app.post('/v1/groups/:id/subscribers', {
    onRequest: bearerAuth(ctx, 'groups:write'),
    schema: {
      operationId: 'addGroupSubscribers',
      tags,
      security,
      summary: 'Add subscribers to a group',
      description: 'Idempotent. Ids of other projects and unknown ids are silently dropped. added counts new memberships only.',
      params: GroupParams,
      body: AddMembersBody,
      response: { 200: Added, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => ({ added: await service.addMembers(ctx.db, auditContext(request), request.project.id, request.params.id, request.body) }))

  app.delete('/v1/groups/:id/subscribers/:sid', {
    onRequest: bearerAuth(ctx, 'groups:write'),
    schema: {
      operationId: 'removeGroupSubscriber',
      tags,
      security,
      summary: 'Remove one subscriber from a group',
      description: 'The subscriber stays active and in its other groups. 200 also when it was not a member.',
      params: MemberParams,
      response: { 200: Ok, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => {
    await service.removeMember(ctx.db, auditContext(request), request.project.id, request.params.id, request.params.sid)
    return { ok: true as const }
  })
}
