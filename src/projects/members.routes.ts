// /v1/members: a project's owners list its members and open invites, invite
// someone (an invite link), change a role, remove a member. Bearer routes with
// the permission members:manage, which only an owner's session holds: API
// keys never manage people (access/access.ts).
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { ErrorBody, Ok } from '../platform/http/shared-schemas.ts'
import { bearerAuth } from './project-auth.ts'
import { CreatedInvite, InviteBody, InviteParams, Member, MemberList, MemberParams, RoleBody } from '../accounts/accounts.schemas.ts'
import { createInvite } from '../accounts/invites.service.ts'
import { cancelInvite, changeRole, listMembers, removeMember } from '../accounts/members.service.ts'
import { auditContext } from '../audit/audit-context.ts'
import { apiKeyJson } from './api-keys.service.ts'
import { RemovedMember } from './api-keys.schemas.ts'
import { listActiveKeysMadeBy } from './projects.store.ts'

const tags = ['members']
const security = [{ session: [] }]

export function registerMembersRoutes(app: App, ctx: AppContext): void {
  const { db, config } = ctx
  const onRequest = bearerAuth(ctx, 'members:manage')

  app.get('/v1/members', {
    onRequest,
    schema: { operationId: 'listMembers', tags, security, summary: "The project's members and open invites", response: { 200: MemberList, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody } },
  }, async (request) => listMembers(db, request.project.id))

  app.post('/v1/members/invites', {
    onRequest,
    schema: {
      operationId: 'createInvite',
      tags,
      security,
      summary: 'Invite someone: answers a link, valid 72 hours for one acceptance, to hand over (no e-mail is sent)',
      body: InviteBody,
      response: { 201: CreatedInvite, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => {
    const invitedBy = request.actor?.type === 'user' ? request.actor.id : null
    const created = await createInvite(db, config, auditContext(request), { projectId: request.project.id, email: request.body.email, role: request.body.role, invitedBy })
    return reply.code(201).send(created)
  })

  app.delete('/v1/members/invites/:id', {
    onRequest,
    schema: { operationId: 'revokeInvite', tags, security, summary: 'Revoke an open invite', params: InviteParams, response: { 200: Ok, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody } },
  }, async (request) => {
    await cancelInvite(db, auditContext(request), request.project.id, request.params.id)
    return { ok: true as const }
  })

  app.patch('/v1/members/:user_id', {
    onRequest,
    schema: {
      operationId: 'changeMemberRole',
      tags,
      security,
      summary: "Change a member's role",
      description: 'Demoting the last owner is 409 last_owner.',
      params: MemberParams,
      body: RoleBody,
      response: { 200: Member, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => changeRole(db, auditContext(request), request.project.id, request.params.user_id, request.body.role))

  app.delete('/v1/members/:user_id', {
    onRequest,
    schema: {
      operationId: 'removeMember',
      tags,
      security,
      summary: 'Remove a member from the project',
      description: "Removing the last owner is 409 last_owner. The member loses the project at once, sessions included. API keys the member made keep working (they belong to the project's integrations): the answer lists those still active, so an owner can revoke them.",
      params: MemberParams,
      response: { 200: RemovedMember, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => {
    const projectId = request.project.id
    const keys = await removeMember(db, auditContext(request), projectId, request.params.user_id, (tx) => listActiveKeysMadeBy(tx, projectId, request.params.user_id))
    return { ok: true as const, active_api_keys: keys.map(apiKeyJson) }
  })
}
