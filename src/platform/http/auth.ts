// The three ways a request proves who it is (api.md §5, decisions.md §2):
// a project's API key (bearer), a project id (browser routes), and the
// operator token (admin routes). Each is an onRequest hook, so a request is
// refused before its body is read; bearer and project requests are then
// counted against the project's requests_per_minute.
import { timingSafeEqual, createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../context.ts'
import { AppError } from '../errors.ts'
import { lookupPrefix, secretMatches } from '../../projects/api-keys.ts'
import { effectiveLimits, type Limits } from '../../projects/plans.ts'
import { findActiveKeyByPrefix, findProjectById, type ProjectRow } from '../../projects/projects.store.ts'

export interface AuthedProject extends ProjectRow {
  /** The plan's numbers with the project's overrides applied. */
  effectiveLimits: Limits
}

declare module 'fastify' {
  interface FastifyRequest {
    project: AuthedProject
  }
}

const RATE_WINDOW_MS = 60_000

function authed(project: ProjectRow): AuthedProject {
  return { ...project, effectiveLimits: effectiveLimits(project.plan, project.limits) }
}

/**
 * Counts the request against the project (request.project unless given) and
 * sets the RateLimit headers; false past the project's limit.
 */
export async function enforceRateLimit(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  project: Pick<AuthedProject, 'id' | 'effectiveLimits'> = request.project,
): Promise<boolean> {
  const limit = project.effectiveLimits.requests_per_minute
  let outcome
  try {
    outcome = await ctx.rateLimiter.hit(`prj:${project.id}`, limit, RATE_WINDOW_MS)
  } catch (err) {
    // A rate limiter that cannot be reached must not take the API down with it.
    request.log.warn({ err }, 'rate limiter unavailable; request allowed')
    return true
  }
  const resetSeconds = Math.ceil(outcome.resetMs / 1000)
  reply.header('RateLimit-Policy', `${limit};w=${RATE_WINDOW_MS / 1000}`)
  reply.header('RateLimit-Limit', String(limit))
  reply.header('RateLimit-Remaining', String(outcome.remaining))
  reply.header('RateLimit-Reset', String(resetSeconds))
  if (!outcome.allowed) reply.header('Retry-After', String(resetSeconds))
  return outcome.allowed
}

async function projectFromApiKey(ctx: AppContext, request: FastifyRequest): Promise<ProjectRow> {
  const header = request.headers.authorization
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null
  const key = match?.[1]
  const prefix = key ? lookupPrefix(key) : null
  if (!key || !prefix) throw new AppError('invalid_api_key')
  const found = await findActiveKeyByPrefix(ctx.db, prefix)
  if (!found || !secretMatches(key, found.key.hash)) throw new AppError('invalid_api_key')
  return found.project
}

/** Bearer routes: Authorization: Bearer <API key>. */
export function bearerAuth(ctx: AppContext) {
  return async function (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    request.project = authed(await projectFromApiKey(ctx, request))
    if (!(await enforceRateLimit(ctx, request, reply))) throw new AppError('rate_limited')
  }
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
    if (!(await enforceRateLimit(ctx, request, reply))) throw new AppError('rate_limited')
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

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest()
}

/** Operator routes: Authorization: Bearer <HERALD_ADMIN_TOKEN>. */
export function adminAuth(adminToken: string) {
  const expected = digest(adminToken)
  return async function (request: FastifyRequest): Promise<void> {
    const header = request.headers.authorization
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null
    // Comparing digests keeps the comparison constant-time whatever the length given.
    if (!match || !timingSafeEqual(digest(match[1]), expected)) throw new AppError('invalid_admin_token')
  }
}
