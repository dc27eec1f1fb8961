// How a request proves which project it acts for (api.md §5, decisions.md §2):
// a project's API key (bearer routes) or a project id (browser routes). Each
// is an onRequest hook, so a request is refused before its body is read; the
// request is then counted against the project's requests_per_minute. A bearer
// route names the permission it needs (access.ts), and the actor behind the
// credentials must hold it.
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import type { AppContext } from '../platform/context.ts'
import { AppError } from '../platform/errors.ts'
import { bearerToken } from '../platform/http/auth.ts'
import { ErrorBody } from '../platform/http/shared-schemas.ts'
import { authenticateSession, hasSessionCookie } from '../accounts/session-auth.ts'
import { roleIn } from '../accounts/sessions.store.ts'
import { enforceRateLimit } from '../platform/http/request-limit.ts'
import { allows, refusalCode, type Actor, type Permission } from '../access/access.ts'
import { lookupPrefix, secretMatches } from './api-keys.ts'
import { effectiveLimits, type Limits } from './plans.ts'
import { findActiveKeyByPrefix, findProjectById, LAST_USED_PRECISION_MS, markKeyUsed, type ProjectRow } from './projects.store.ts'

/** The project a request acts for, with its plan's numbers resolved. */
export interface AuthedProject extends ProjectRow {
  /** The plan's numbers with the project's overrides applied. */
  effectiveLimits: Limits
}

declare module 'fastify' {
  interface FastifyRequest {
    project: AuthedProject
    /** Who acts on a bearer route (set by bearerAuth); unset on browser routes. */
    actor?: Actor
  }
}

function authed(project: ProjectRow): AuthedProject {
  return { ...project, effectiveLimits: effectiveLimits(project.plan, project.limits) }
}

/** Counts the request against the project's requests_per_minute (request.project unless given); false past it. */
export function enforceProjectRateLimit(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  project: Pick<AuthedProject, 'id' | 'effectiveLimits'> = request.project,
): Promise<boolean> {
  return enforceRateLimit(ctx, request, reply, { key: `prj:${project.id}`, requestsPerMinute: project.effectiveLimits.requests_per_minute })
}

/**
 * Beacons a project's visitors' browsers send per minute for each request its
 * own callers may make. Every displayed notification sends a shown beacon
 * (issue 25), so a send to 10,000 browsers brings 10,000 beacons within
 * seconds: they have a budget of their own (a bucket apart from the API's),
 * so neither starves the other, still bounded to protect the database.
 */
export const BEACONS_PER_REQUEST = 100

/** Counts a beacon against the project's beacon budget (requests_per_minute × BEACONS_PER_REQUEST); false past it. */
export function enforceBeaconRateLimit(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, project: Pick<AuthedProject, 'id' | 'effectiveLimits'>): Promise<boolean> {
  return enforceRateLimit(ctx, request, reply, { key: `beacon:${project.id}`, requestsPerMinute: project.effectiveLimits.requests_per_minute * BEACONS_PER_REQUEST })
}

async function projectFromApiKey(ctx: AppContext, request: FastifyRequest): Promise<{ project: ProjectRow; actor: Actor }> {
  const key = bearerToken(request)
  const prefix = key ? lookupPrefix(key) : null
  if (!key || !prefix) throw new AppError('invalid_api_key')
  const found = await findActiveKeyByPrefix(ctx.db, prefix)
  if (!found || !secretMatches(key, found.key.hash)) throw new AppError('invalid_api_key')
  // last_used_at as read is at most a minute old, so most requests write nothing.
  const lastUsed = found.key.last_used_at?.getTime()
  if (lastUsed === undefined || Date.now() - lastUsed >= LAST_USED_PRECISION_MS) await markKeyUsed(ctx.db, found.key.id)
  return { project: found.project, actor: { type: 'key', id: found.key.id, scope: found.key.scope } }
}

/** The header a signed-in user names the project with; without it, the session's current project. */
export const PROJECT_HEADER = 'x-herald-project'

/**
 * A member's session: the project named by X-Herald-Project, or the
 * session's current one, acting with the user's role there. A project the
 * user is not a member of is 404 project_not_found, exactly like one that
 * does not exist, so a session cannot probe which project ids exist.
 */
async function projectFromSession(ctx: AppContext, request: FastifyRequest): Promise<{ project: ProjectRow; actor: Actor }> {
  const session = await authenticateSession(ctx.db, ctx.config, request)
  const header = request.headers[PROJECT_HEADER]
  const projectId = typeof header === 'string' && header !== '' ? header : session.project_id
  const role = projectId ? await roleIn(ctx.db, session.user_id, projectId) : null
  const project = role && projectId ? await findProjectById(ctx.db, projectId) : null
  if (!role || !project) throw new AppError('project_not_found')
  return { project, actor: { type: 'user', id: session.user_id, role } }
}

/** bearerAuth's hook, carrying the permission it checks (the role matrix test reads it from the route table). */
export type BearerHook = ((request: FastifyRequest, reply: FastifyReply) => Promise<void>) & { permission: Permission }

/**
 * Bearer routes: Authorization: Bearer <API key>, or (without an
 * Authorization header) a session cookie, acting with `permission`. Refused
 * with 401 before anything else, then counted against the rate limit, then
 * 403 when the actor does not hold the permission. A request that changes
 * something with a session cookie also needs its CSRF token; a key needs none.
 */
export function bearerAuth(ctx: AppContext, permission: Permission): BearerHook {
  const hook = async function (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const useSession = request.headers.authorization === undefined && hasSessionCookie(request)
    const { project, actor } = useSession ? await projectFromSession(ctx, request) : await projectFromApiKey(ctx, request)
    request.project = authed(project)
    request.actor = actor
    if (!(await enforceProjectRateLimit(ctx, request, reply))) throw new AppError('rate_limited')
    if (!allows(actor, permission)) throw new AppError(refusalCode(actor))
  }
  return Object.assign(hook, { permission })
}

/**
 * What bearerAuth itself can answer on any route it guards (docs/errors.md):
 * 401 invalid_api_key or invalid_session, 403 insufficient_scope,
 * insufficient_role or csrf_token_invalid, 404 project_not_found (a session
 * naming a project the user is not a member of), 429 rate_limited.
 */
const BEARER_ERROR_STATUSES = [401, 403, 404, 429] as const

/**
 * An onRoute hook (app.ts): puts bearerAuth's own answers and its second way
 * in (a member's session) into the OpenAPI entry of every route it guards, so
 * no route, including one added later, documents fewer than it can answer.
 */
export function documentBearerRoute(route: RouteOptions): void {
  const guarded = [route.onRequest].flat().some((hook) => typeof hook === 'function' && 'permission' in hook)
  const schema = route.schema as { response?: Record<string, unknown>; security?: Record<string, string[]>[] } | undefined
  if (!guarded || !schema) return
  schema.response = { ...Object.fromEntries(BEARER_ERROR_STATUSES.map((status) => [status, ErrorBody])), ...schema.response }
  const security = schema.security ?? [{ apiKey: [] }]
  schema.security = security.some((scheme) => 'session' in scheme) ? security : [...security, { session: [] }]
}

function projectIdFrom(request: FastifyRequest, allowHeader: boolean): string | null {
  const query = request.query as Record<string, unknown> | undefined
  const fromQuery = typeof query?.project === 'string' && query.project !== '' ? query.project : null
  if (fromQuery || !allowHeader) return fromQuery
  const header = request.headers['x-service-project']
  return typeof header === 'string' && header !== '' ? header : null
}

/** Browser routes: ?project=prj_x or X-Service-Project: prj_x (subscribe, unsubscribe). */
export function projectAuth(ctx: AppContext) {
  return async function (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const id = projectIdFrom(request, true)
    if (!id) throw new AppError('missing_project')
    const project = await findProjectById(ctx.db, id)
    if (!project) throw new AppError('project_not_found')
    request.project = authed(project)
    if (!(await enforceProjectRateLimit(ctx, request, reply))) throw new AppError('rate_limited')
  }
}

/**
 * Looks up the project named by ?project= only (events, notifications,
 * vapid-public-key); null when it is missing or unknown. Callers decide what
 * that means for them; nothing is thrown.
 */
export async function projectFromQuery(ctx: AppContext, request: FastifyRequest): Promise<AuthedProject | null> {
  const id = projectIdFrom(request, false)
  if (!id || id.length > 64) return null
  const project = await findProjectById(ctx.db, id)
  return project ? authed(project) : null
}
