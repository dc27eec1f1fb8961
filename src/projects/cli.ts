// The operator CLI: the twin of every /admin/v1 route, printing the same JSON.
// Arguments are checked against the routes' own schemas. Exit codes: 0 done,
// 1 the operation failed (the error JSON is on stderr), 2 bad arguments.
import { EXPIRY_FIELDS } from './expiry-settings.ts'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import type { FastifyError } from 'fastify'
import type { TSchema } from 'typebox'
import type { Config } from '../platform/config.ts'
import type { Database } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { validationIssues } from '../platform/http/errors.ts'
import { validatorCompiler } from '../platform/http/validation.ts'
import { CreatePasswordResetBody, InviteBody } from '../accounts/accounts.schemas.ts'
import { createPasswordReset } from '../accounts/passwords.service.ts'
import { KEY_SCOPES } from '../access/access.ts'
import { createInvite } from '../accounts/invites.service.ts'
import { CLI_AUDIT_CONTEXT } from '../audit/audit-context.ts'
import {
  CreateApiKeyBody,
  CreateProjectBody,
  LIMIT_FIELDS,
  ListProjectsQuery,
  UpdateProjectBody,
  VapidKeysBody,
  type LimitsPatch,
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
import { listProjectVapidKeys, retireVapidKey, rotateVapidKeys } from './vapid-rotation.service.ts'
import { checkVapidKeyPair } from './vapid-keys.ts'

export const PROJECT_COMMANDS_HELP = `
  herald projects create --name NAME [--plan free|hobby|plus|pro|max] [--domain DOMAIN]
                         [--vapid-private=KEY --vapid-public=KEY]   import an existing
                         VAPID pair (base64url, as web-push generate-vapid-keys prints;
                         write KEY after '=', since a key may start with '-')
  herald projects set-vapid-keys PROJECT_ID --vapid-private=KEY --vapid-public=KEY
                         replace the pair while the project has no active subscriber
  herald projects vapid-keys PROJECT_ID
                         the project's VAPID key pairs: which is current, and how
                         many active subscriptions each still has
  herald projects rotate-vapid-keys PROJECT_ID [--vapid-private=KEY --vapid-public=KEY]
                         make a new pair (fresh, or imported) current; every existing
                         subscription stays on its own pair and keeps receiving
  herald projects retire-vapid-key PROJECT_ID KEY_ID [--force]
                         retire a pair no active subscription uses; --force retires
                         it anyway, expiring those subscriptions (their count is printed)
  herald projects list [--limit 1-100] [--cursor PROJECT_ID]
  herald projects get PROJECT_ID
  herald projects update PROJECT_ID [--plan PLAN] [--default-icon URL|null]
                         [--limit FIELD=N|null ...]   FIELD: ${LIMIT_FIELDS.join(', ')}
                         [--expire-after-failures N|null] [--expire-after-days-without-delivery N|null]
                         expire subscribers after N failed pushes in a row, or after N days
                         of failing pushes with none accepted (null: off, the default)
  herald keys create PROJECT_ID [--name NAME] [--scope ${KEY_SCOPES.join('|')}]
                         scope (default full): what the key may do, see decisions.md
  herald keys list PROJECT_ID
  herald keys revoke PROJECT_ID KEY_ID
  herald users create --email EMAIL --project PROJECT_ID --role owner|admin|editor|viewer
                         prints an invite link (valid 72 hours, one use) that
                         sets the person's password and makes them a member
  herald users reset-password EMAIL
                         prints a password reset link (valid one hour, one use)
                         for the account; using it ends all its sessions

  Each prints JSON, the same as the /admin/v1 API. Exit 0 on success, 1 when
  the operation fails (error JSON on stderr), 2 on bad arguments.
`

/** Bad command-line arguments: exit code 2. */
class UsageError extends Error {}

/** Checks a value against a route schema, so the CLI accepts exactly what the API does. */
function check<T>(schema: TSchema, value: unknown, httpPart: 'body' | 'querystring' = 'body'): T {
  const validate = validatorCompiler({ schema: schema as object, httpPart }) as unknown as {
    (data: unknown): boolean
    errors?: unknown[]
  }
  if (validate(value)) return value as T
  const issues = validationIssues({ validation: validate.errors } as unknown as FastifyError)
  throw new UsageError(issues.map((issue) => `${issue.path}: ${issue.message}`).join('\n'))
}

function parse(args: string[], options: ParseArgsConfig['options'], positionals: string[]) {
  const parsed = parseArgs({ args, options, allowPositionals: true, strict: true })
  if (parsed.positionals.length !== positionals.length) {
    const expected = positionals.length ? positionals.join(' ') : 'no positional arguments'
    throw new UsageError(`expected ${expected}, got ${parsed.positionals.length ? parsed.positionals.join(' ') : 'none'}`)
  }
  return { values: parsed.values as Record<string, string | string[] | undefined>, positionals: parsed.positionals }
}

/** `--limit groups=10 --limit subscribers=null` → { groups: 10, subscribers: null }. */
function parseLimits(items: string[]): LimitsPatch {
  const limits: Record<string, number | null> = {}
  for (const item of items) {
    const match = /^([a-z_]+)=(.*)$/.exec(item)
    if (!match) throw new UsageError(`--limit ${item}: expected FIELD=N or FIELD=null`)
    const [, field, raw] = match
    if (!(LIMIT_FIELDS as readonly string[]).includes(field)) {
      throw new UsageError(`--limit ${item}: FIELD is one of ${LIMIT_FIELDS.join(', ')}`)
    }
    if (raw !== 'null' && !/^\d+$/.test(raw)) throw new UsageError(`--limit ${item}: the value is a non-negative integer or null`)
    limits[field] = raw === 'null' ? null : Number(raw)
  }
  return limits as LimitsPatch
}

async function projects(db: Database, config: Config, sub: string | undefined, args: string[]): Promise<unknown> {
  switch (sub) {
    case 'create': {
      const { values } = parse(
        args,
        { name: { type: 'string' }, plan: { type: 'string' }, domain: { type: 'string' }, 'vapid-private': { type: 'string' }, 'vapid-public': { type: 'string' } },
        [],
      )
      if (values.name === undefined) throw new UsageError('--name is required')
      const body: Record<string, unknown> = { name: values.name }
      if (values.plan !== undefined) body.plan = values.plan
      if (values.domain !== undefined) body.domain = values.domain
      if (values['vapid-private'] !== undefined) body.vapid_private = values['vapid-private']
      if (values['vapid-public'] !== undefined) body.vapid_public = values['vapid-public']
      return createProjectForOperator(db, check(CreateProjectBody, body))
    }
    case 'list': {
      const { values } = parse(args, { limit: { type: 'string' }, cursor: { type: 'string' } }, [])
      const query: Record<string, unknown> = {}
      if (values.limit !== undefined) query.limit = values.limit
      if (values.cursor !== undefined) query.cursor = values.cursor
      return listProjectsForOperator(db, check(ListProjectsQuery, query, 'querystring'))
    }
    case 'get': {
      const { positionals } = parse(args, {}, ['PROJECT_ID'])
      return getProject(db, positionals[0])
    }
    case 'update': {
      const { values, positionals } = parse(
        args,
        {
          plan: { type: 'string' },
          'default-icon': { type: 'string' },
          limit: { type: 'string', multiple: true },
          'expire-after-failures': { type: 'string' },
          'expire-after-days-without-delivery': { type: 'string' },
        },
        ['PROJECT_ID'],
      )
      const body: Record<string, unknown> = {}
      if (values.plan !== undefined) body.plan = values.plan
      const icon = values['default-icon'] as string | undefined
      if (icon !== undefined) body.default_icon = icon === 'null' ? null : icon
      if (values.limit !== undefined) body.limits = parseLimits(values.limit as string[])
      for (const field of EXPIRY_FIELDS) {
        const value = values[field.replaceAll('_', '-')] as string | undefined
        // A number as a number, so the schema's integer check speaks of the field; anything else is left for it to refuse.
        if (value !== undefined) body[field] = value === 'null' ? null : /^-?\d+$/.test(value) ? Number(value) : value
      }
      return updateProjectSettings(db, config, CLI_AUDIT_CONTEXT, positionals[0], check(UpdateProjectBody, body))
    }
    case 'set-vapid-keys': {
      const { values, positionals } = parse(args, { 'vapid-private': { type: 'string' }, 'vapid-public': { type: 'string' } }, ['PROJECT_ID'])
      for (const name of ['vapid-private', 'vapid-public']) if (values[name] === undefined) throw new UsageError(`--${name} is required`)
      const body = check<VapidKeysBody>(VapidKeysBody, { vapid_private: values['vapid-private'], vapid_public: values['vapid-public'] })
      return replaceVapidKeys(db, CLI_AUDIT_CONTEXT, positionals[0], body)
    }
    case 'vapid-keys': {
      const { positionals } = parse(args, {}, ['PROJECT_ID'])
      return listProjectVapidKeys(db, positionals[0])
    }
    case 'rotate-vapid-keys': {
      const { values, positionals } = parse(args, { 'vapid-private': { type: 'string' }, 'vapid-public': { type: 'string' } }, ['PROJECT_ID'])
      const given = ['vapid-private', 'vapid-public'].filter((name) => values[name] !== undefined)
      if (given.length === 1) throw new UsageError('--vapid-private and --vapid-public go together: import both halves of the pair, or neither for a fresh one')
      const body = given.length === 2 ? check<VapidKeysBody>(VapidKeysBody, { vapid_private: values['vapid-private'], vapid_public: values['vapid-public'] }) : null
      return rotateVapidKeys(db, CLI_AUDIT_CONTEXT, positionals[0], body ? checkVapidKeyPair(body.vapid_private, body.vapid_public) : undefined)
    }
    case 'retire-vapid-key': {
      const { values, positionals } = parse(args, { force: { type: 'boolean' } }, ['PROJECT_ID', 'KEY_ID'])
      return retireVapidKey(db, CLI_AUDIT_CONTEXT, positionals[0], positionals[1], Boolean(values.force))
    }
    default:
      throw new UsageError(`unknown command "projects ${sub ?? ''}"; expected create, list, get, update, set-vapid-keys, vapid-keys, rotate-vapid-keys or retire-vapid-key`)
  }
}

async function keys(db: Database, sub: string | undefined, args: string[]): Promise<unknown> {
  switch (sub) {
    case 'create': {
      const { values, positionals } = parse(args, { name: { type: 'string' }, scope: { type: 'string' } }, ['PROJECT_ID'])
      const body: Record<string, unknown> = {}
      if (values.name !== undefined) body.name = values.name
      if (values.scope !== undefined) {
        if (!(KEY_SCOPES as readonly string[]).includes(values.scope as string)) {
          throw new UsageError(`--scope ${values.scope}: the scope is one of ${KEY_SCOPES.join(', ')}`)
        }
        body.scope = values.scope
      }
      return createProjectApiKey(db, CLI_AUDIT_CONTEXT, positionals[0], check<CreateApiKeyBody>(CreateApiKeyBody, body))
    }
    case 'list': {
      const { positionals } = parse(args, {}, ['PROJECT_ID'])
      return listProjectApiKeys(db, positionals[0])
    }
    case 'revoke': {
      const { positionals } = parse(args, {}, ['PROJECT_ID', 'KEY_ID'])
      await revokeProjectApiKey(db, CLI_AUDIT_CONTEXT, positionals[0], positionals[1])
      return { ok: true }
    }
    default:
      throw new UsageError(`unknown command "keys ${sub ?? ''}"; expected create, list or revoke`)
  }
}

async function users(db: Database, config: Config, sub: string | undefined, args: string[]): Promise<unknown> {
  if (sub === 'reset-password') {
    const { positionals } = parse(args, {}, ['EMAIL'])
    const body = check<{ email: string }>(CreatePasswordResetBody, { email: positionals[0] })
    return createPasswordReset(db, config, CLI_AUDIT_CONTEXT, body.email)
  }
  if (sub !== 'create') throw new UsageError(`unknown command "users ${sub ?? ''}"; expected create or reset-password`)
  const { values } = parse(args, { email: { type: 'string' }, project: { type: 'string' }, role: { type: 'string' } }, [])
  for (const name of ['email', 'project', 'role']) if (values[name] === undefined) throw new UsageError(`--${name} is required`)
  const body = check<InviteBody>(InviteBody, { email: values.email, role: values.role })
  return createInvite(db, config, CLI_AUDIT_CONTEXT, { projectId: values.project as string, email: body.email, role: body.role, invitedBy: null })
}

/** node:util parseArgs throws a TypeError with an ERR_PARSE_ARGS_* code for unknown or malformed options. */
function isParseArgsError(err: unknown): err is Error {
  const code = (err as { code?: unknown } | null)?.code
  return err instanceof Error && typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')
}

/** Runs a project/keys command; returns the exit code, or null when the command is not one of these. */
export async function runProjectCommand(db: Database, config: Config, command: string, args: string[]): Promise<number | null> {
  if (command !== 'projects' && command !== 'keys' && command !== 'users') return null
  const [sub, ...rest] = args
  try {
    const result = command === 'projects'
      ? await projects(db, config, sub, rest)
      : command === 'keys' ? await keys(db, sub, rest) : await users(db, config, sub, rest)
    console.log(JSON.stringify(result, null, 2))
    return 0
  } catch (err) {
    if (err instanceof UsageError || isParseArgsError(err)) {
      console.error(`herald ${command} ${sub ?? ''}: ${err.message}\n${PROJECT_COMMANDS_HELP}`)
      return 2
    }
    if (err instanceof AppError) {
      console.error(JSON.stringify(err.toBody(), null, 2))
      return 1
    }
    throw err
  }
}
