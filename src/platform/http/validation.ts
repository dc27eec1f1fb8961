// Request validation: bodies are checked strictly (a number sent as a string
// is an error, as a customer coding against api.md expects), while query
// strings and path parameters are coerced, since they only ever arrive as text.
//
// Beside the schemas, one rule holds for every route: no string in a request
// may hold what PostgreSQL cannot store as text. A NUL (U+0000) is refused by
// PostgreSQL outright, and a lone UTF-16 surrogate is not Unicode at all (node-pg
// silently turns it into U+FFFD; PGlite's wire encoder miscounts it and sends
// a corrupt message). Such a string is a 400 invalid_request naming the field,
// checked before anything else looks at the request (authentication reads the
// query string, and looks the project up).
import { Stream } from 'node:stream'
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, HookHandlerDoneFunction } from 'fastify'
import { AppError, type ValidationIssue } from '../errors.ts'

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    // oneOf + discriminator (e.g. send's target): errors name the branch the tag picks.
    discriminator: true,
    strict: false,
  })
  ;(addFormats as unknown as (a: Ajv) => void)(ajv)
  return ajv
}

const bodyAjv = makeAjv(false)
const textAjv = makeAjv(true)

export function validatorCompiler({ schema, httpPart }: { schema: FastifySchema; httpPart?: string }) {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv
  return ajv.compile(schema as object)
}

/** NUL, or (with the u flag, where a proper pair is one code point) a surrogate standing alone. */
const UNSTORABLE = /\0|\p{Cs}/u

const NUL_MESSAGE = 'must not contain the NUL character (U+0000)'
const SURROGATE_MESSAGE = 'must be valid Unicode (it holds an unpaired UTF-16 surrogate)'

function problemWith(text: string): string | null {
  if (!UNSTORABLE.test(text)) return null
  return text.includes('\0') ? NUL_MESSAGE : SURROGATE_MESSAGE
}

/** Enough to tell the client what to fix; a body full of bad strings does not get a list as long. */
const MAX_ISSUES = 10

interface Visit {
  value: unknown
  key: string | null
  parent: Visit | null
}

function pathOf(visit: Visit, root: string): string {
  const keys: string[] = []
  for (let at: Visit | null = visit; at; at = at.parent) if (at.key !== null) keys.push(at.key)
  const path = keys.reverse().join('.')
  if (root === 'body') return path || '(body)'
  return path ? `${root}.${path}` : root
}

/**
 * An object whose fields are data: anything but a stream. A route that takes
 * its body as a stream (POST /v1/subscribers/import) has the request's
 * IncomingMessage as its body: walking that (socket, server, parser, cyclic)
 * never ended and grew the heap until the process died (issue 23: out of
 * memory at 20,000 lines); such a route checks each line it reads itself.
 */
function isPlainData(item: unknown): item is Record<string, unknown> {
  return item !== null && typeof item === 'object' && !(item instanceof Stream)
}

/**
 * The strings (values and property names, at any depth) that PostgreSQL cannot
 * store, as issues under `root` ('body', 'querystring', 'params').
 * Iterative, so a deeply nested body cannot exhaust the stack.
 */
export function unstorableStrings(value: unknown, root: string): ValidationIssue[] {
  const issues: ValidationIssue[] = []
  const pending: Visit[] = [{ value, key: null, parent: null }]
  while (pending.length > 0 && issues.length < MAX_ISSUES) {
    const visit = pending.pop()!
    const item = visit.value
    if (typeof item === 'string') {
      const problem = problemWith(item)
      if (problem) issues.push({ path: pathOf(visit, root), message: problem })
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) pending.push({ value: item[i], key: String(i), parent: visit })
    } else if (isPlainData(item)) {
      const entries = Object.entries(item)
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]
        const problem = problemWith(key)
        // The name itself is not echoed back: the issue points at the object holding it.
        if (problem) issues.push({ path: pathOf(visit, root), message: `has a property name that ${problem}` })
        else pending.push({ value: child, key, parent: visit })
      }
    }
  }
  return issues
}

function refuse(issues: ValidationIssue[]): AppError {
  const first = issues[0]
  return new AppError('invalid_request', `${first.path}: ${first.message}`, { issues })
}

/**
 * Installs the rule on every route: the URL's parts as soon as the request
 * arrives (before authentication reads them), the body once parsed (before
 * schema validation). Headers need no check: Node's parser refuses NUL in
 * them, and it reads their bytes as Latin-1, which has no surrogates.
 * POST /v1/events turns the refusal into its 202 in the error handler, like
 * any other.
 */
export function refuseUnstorableStrings(app: FastifyInstance): void {
  app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const issues = [...unstorableStrings(request.params, 'params'), ...unstorableStrings(request.query, 'querystring')]
    done(issues.length > 0 ? refuse(issues) : undefined)
  })
  app.addHook('preValidation', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    // The import routes' body is the request stream itself: unstorableStrings
    // does not walk streams (isPlainData), and the import checks each line.
    const issues = unstorableStrings(request.body, 'body')
    done(issues.length > 0 ? refuse(issues) : undefined)
  })
}
