// `herald subscribers import|export` (issue 23): the operator's twin of the
// import route and of the operator's export, straight against the database, so
// a move of millions needs no HTTP timeout to be thought about. Exit codes as
// the other operator commands: 0 done, 1 the operation failed, 2 bad arguments.
import { createReadStream, statSync } from 'node:fs'
import { once } from 'node:events'
import { parseArgs } from 'node:util'
import type { Config } from '../platform/config.ts'
import type { Database } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { CLI_AUDIT_CONTEXT } from '../audit/audit-context.ts'
import { effectiveLimits } from '../projects/plans.ts'
import { findProjectById } from '../projects/projects.store.ts'
import { exportSubscribers, type ExportFormat } from './export.service.ts'
import { importSubscribers } from './import.service.ts'
import { withProgress } from './import-progress.ts'

export const SUBSCRIBER_COMMANDS_HELP = `
  herald subscribers import FILE --project PROJECT_ID [--format ndjson|csv]
                         imports the file as POST /v1/subscribers/import does
                         (format from the extension: .csv is CSV, else NDJSON);
                         prints { imported, updated, skipped, errors };
                         on a terminal, a progress bar on stderr (bytes of
                         the file, lines, lines/s)
  herald subscribers export --project PROJECT_ID [--format ndjson|csv] [--keys]
                         writes every subscriber to stdout; --keys adds each
                         subscription's keys and (NDJSON) the VAPID pair first,
                         as GET /admin/v1/projects/:id/subscribers/export
`

class UsageError extends Error {}

function format(value: unknown, file?: string): ExportFormat {
  if (value === undefined) return file?.toLowerCase().endsWith('.csv') ? 'csv' : 'ndjson'
  if (value !== 'ndjson' && value !== 'csv') throw new UsageError(`--format ${String(value)}: ndjson or csv`)
  return value
}

async function project(db: Database, id: unknown) {
  if (typeof id !== 'string') throw new UsageError('--project is required')
  const row = await findProjectById(db, id)
  if (!row) throw new AppError('project_not_found', `No project ${id}.`)
  return { ...row, effectiveLimits: effectiveLimits(row.plan, row.limits) }
}

/** Writes to stdout, waiting when its buffer is full, so a large export is not held in memory. */
async function write(text: string): Promise<void> {
  if (!process.stdout.write(text)) await once(process.stdout, 'drain')
}

/** Runs a subscribers command; returns the exit code, or null when the command is not one of these. */
export async function runSubscriberCommand(db: Database, config: Config, command: string, args: string[]): Promise<number | null> {
  if (command !== 'subscribers') return null
  const [sub, ...rest] = args
  try {
    if (sub === 'import') {
      const { values, positionals } = parseArgs({ args: rest, options: { project: { type: 'string' }, format: { type: 'string' } }, allowPositionals: true, strict: true })
      if (positionals.length !== 1) throw new UsageError('expected one FILE')
      const target = await project(db, values.project)
      const file = positionals[0]!
      // A progress bar on a terminal (stderr); nothing extra when piped.
      const body = withProgress(createReadStream(file), statSync(file).size, process.stderr)
      const result = await importSubscribers(db, config, CLI_AUDIT_CONTEXT, target, format(values.format, file), body)
      console.log(JSON.stringify(result, null, 2))
      return 0
    }
    if (sub === 'export') {
      const { values } = parseArgs({ args: rest, options: { project: { type: 'string' }, format: { type: 'string' }, keys: { type: 'boolean' } }, strict: true })
      const target = await project(db, values.project)
      const vapid = values.keys ? { vapid_public: target.vapid_public, vapid_private: target.vapid_private } : undefined
      for await (const chunk of exportSubscribers(db, target.id, { format: format(values.format), vapid })) await write(chunk)
      return 0
    }
    throw new UsageError(`unknown command "subscribers ${sub ?? ''}"; expected import or export`)
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code
    if (err instanceof UsageError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'))) {
      console.error(`herald subscribers ${sub ?? ''}: ${(err as Error).message}\n${SUBSCRIBER_COMMANDS_HELP}`)
      return 2
    }
    if (err instanceof AppError) {
      console.error(JSON.stringify(err.toBody(), null, 2))
      return 1
    }
    if (code === 'ENOENT') {
      console.error(`herald subscribers ${sub}: cannot read the file: ${(err as Error).message}`)
      return 1
    }
    throw err
  }
}
