// Turns anything thrown in a request into Herald's error body (decisions.md §1):
// AppError as given, schema failures as invalid_request with issues, body
// parsing failures as invalid_json / payload_too_large, a value the database
// refuses as invalid_request, anything else as a 500 that carries the request
// id and no stack trace.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import findMyWay from 'find-my-way'
import { AppError, type ValidationIssue } from '../errors.ts'

interface AjvLikeError {
  instancePath?: string
  message?: string
  keyword?: string
  params?: Record<string, unknown>
}

function issuePath(context: string | undefined, error: AjvLikeError): string {
  const parts = (error.instancePath ?? '').split('/').filter(Boolean)
  if (error.keyword === 'required' && typeof error.params?.missingProperty === 'string') {
    parts.push(error.params.missingProperty)
  }
  const path = parts.join('.')
  if (context && context !== 'body') return path ? `${context}.${path}` : context
  return path || '(body)'
}

/** Ajv's message, naming what Ajv leaves out: the unknown property, the allowed values. */
function issueMessage(error: AjvLikeError): string {
  const message = error.message ?? 'is invalid'
  const extra = error.params?.additionalProperty
  if (error.keyword === 'additionalProperties' && typeof extra === 'string') return `${message}: '${extra}'`
  const allowed = error.params?.allowedValues
  if (error.keyword === 'enum' && Array.isArray(allowed)) return `must be one of: ${allowed.join(', ')}`
  return message
}

export function validationIssues(error: FastifyError): ValidationIssue[] {
  const context = (error as FastifyError & { validationContext?: string }).validationContext
  return (error.validation ?? []).map((item) => ({
    path: issuePath(context, item as AjvLikeError),
    message: issueMessage(item as AjvLikeError),
  }))
}

/**
 * SQLSTATE codes that only a value from the request can cause once it got past
 * validation: class 22 (data exception: invalid text, out of range numbers and
 * dates, NUL in text, bad Unicode escapes) and 54000 (a value over a program
 * limit, such as an over-long index key).
 */
export function isBadValueError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && (/^22[0-9A-Z]{3}$/.test(code) || code === '54000')
}

export function toAppError(error: FastifyError | AppError | Error): AppError | null {
  if (error instanceof AppError) return error
  if (isBadValueError(error)) {
    // The database's own text is not echoed: it may quote the value or the schema.
    return new AppError('invalid_request', 'A value in the request cannot be stored.', {
      issues: [{ path: '(request)', message: 'holds a value the database cannot store (out of range, or not valid text)' }],
    })
  }
  const fastifyError = error as FastifyError
  if (fastifyError.validation) {
    const issues = validationIssues(fastifyError)
    const first = issues[0]
    const message = first ? `${first.path}: ${first.message}` : 'The request is invalid.'
    return new AppError('invalid_request', message, { issues })
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large')
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('invalid_json')
  }
  if (error instanceof SyntaxError && fastifyError.statusCode === 400) return new AppError('invalid_json')
  return null
}

/** Routes that must answer 202 { ok: true } whatever goes wrong (api.md 4.10). */
const ALWAYS_ACCEPTED = new Set(['/v1/events'])

export function installErrorHandling(app: FastifyInstance): void {
  // A second router that only knows which paths exist, to tell 404 from 405.
  const known = findMyWay({ ignoreTrailingSlash: true })
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    for (const method of methods) {
      if (method === 'HEAD' || method === 'OPTIONS') continue
      try {
        known.on(method as 'GET', route.url, () => undefined)
      } catch {
        // The same path registered twice (e.g. by a plugin); the first is enough.
      }
    }
  })

  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (ALWAYS_ACCEPTED.has(request.routeOptions.url ?? '')) {
      return reply.code(202).send({ ok: true })
    }
    const appError = toAppError(error)
    if (appError) {
      if (appError.status >= 500) request.log.error({ err: error }, 'request failed')
      // A value validation should have refused: answered as the client's fault, logged so the rule can be added.
      else if (isBadValueError(error)) request.log.warn({ err: error }, 'the database refused a value from the request')
      return reply.code(appError.status).send(appError.toBody())
    }
    request.log.error({ err: error }, 'request failed')
    const internal = new AppError('internal_error', undefined, { request_id: request.id })
    return reply.code(500).send(internal.toBody())
  })

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]
    const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
    const allowed = methods.filter((method) => method !== request.method && known.find(method, path) !== null)
    if (allowed.length > 0 && !known.find(request.method as 'GET', path)) {
      reply.header('Allow', allowed.join(', '))
      return reply.code(405).send(new AppError('method_not_allowed').toBody())
    }
    return reply.code(404).send(new AppError('not_found').toBody())
  })
}
