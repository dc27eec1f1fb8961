// `herald backup` and `herald restore` (issue 23), straight against the
// database like the other operator commands. Exit codes as theirs: 0 done,
// 1 the operation failed (a database that is not empty, a file that is not a
// backup), 2 bad arguments.
import fs from 'node:fs'
import { once } from 'node:events'
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import { finished } from 'node:stream/promises'
import { createGzip } from 'node:zlib'
import type { Writable } from 'node:stream'
import { parseArgs } from 'node:util'
import type { Database } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { writeBackup, type BackupSummary } from './backup.ts'
import { restoreBackupFile } from './restore.ts'

export const BACKUP_COMMANDS_HELP = `
  herald backup [--project PROJECT_ID]... [--out FILE]
                         writes every project (or the ones named) with its keys,
                         subscribers, groups, webhooks, broadcasts, members and
                         API keys to FILE (mode 0600; gzip when FILE ends in .gz),
                         or to stdout; it holds secrets: keep it like a password
  herald restore FILE    reads a backup into an EMPTY database (no projects or
                         users), on either storage mode; checks every count;
                         exit code 3 when the database is not empty
`

class UsageError extends Error {}

/** Exit code of a restore refused because the database is not empty (nothing was written). */
export const RESTORE_NOT_EMPTY_EXIT = 3

/** Writes to the stream, waiting when its buffer is full, so a large backup is not held in memory. */
function writerTo(stream: Writable): (text: string) => Promise<void> {
  return async (text) => {
    if (!stream.write(text)) await once(stream, 'drain')
  }
}

/**
 * Writes the backup to file: first to a temporary file beside it, created with
 * mode 0600 (it holds private keys, webhook secrets and password hashes), then
 * renamed over the name, so the name never holds half a backup and an older
 * backup there is replaced only by a whole one. Gzip when the name ends in .gz.
 */
export async function backupToFile(db: Database, projectIds: string[] | null, file: string): Promise<BackupSummary> {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(4).toString('hex')}.partial`)
  const out = fs.createWriteStream(temporary, { flags: 'wx', mode: 0o600 })
  const gzip = file.endsWith('.gz') ? createGzip() : null
  if (gzip) gzip.pipe(out)
  const head = gzip ?? out
  try {
    const summary = await writeBackup(db, projectIds, writerTo(head))
    head.end()
    await finished(out)
    fs.renameSync(temporary, file)
    return summary
  } catch (err) {
    head.destroy()
    out.destroy()
    fs.rmSync(temporary, { force: true })
    throw err
  }
}

function countsLine(rows: Record<string, number>): string {
  return Object.entries(rows).map(([table, n]) => `${table} ${n}`).join(', ')
}

/** Runs backup or restore; returns the exit code, or null when the command is neither. */
export async function runBackupCommand(db: Database, command: string, args: string[]): Promise<number | null> {
  if (command !== 'backup' && command !== 'restore') return null
  try {
    if (command === 'backup') {
      const { values } = parseArgs({ args, options: { project: { type: 'string', multiple: true }, out: { type: 'string' } }, strict: true })
      const projects = values.project && values.project.length > 0 ? values.project : null
      if (values.out) {
        const summary = await backupToFile(db, projects, values.out)
        console.error(`herald backup: ${summary.projects.length} project(s) to ${values.out} (mode 0600): ${countsLine(summary.rows)}`)
      } else {
        await writeBackup(db, projects, writerTo(process.stdout))
      }
      return 0
    }
    const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true })
    if (positionals.length !== 1) throw new UsageError('expected one FILE')
    // A restore of millions takes minutes: on a terminal, the rows written so far, on one line.
    const progress = process.stderr.isTTY ? (n: number) => void process.stderr.write(`\rherald restore: ${n.toLocaleString('en-US')} rows written`) : undefined
    const summary = await restoreBackupFile(db, positionals[0]!, progress)
    if (progress) process.stderr.write('\n')
    console.log(JSON.stringify(summary, null, 2))
    return 0
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code
    if (err instanceof UsageError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS'))) {
      console.error(`herald ${command}: ${(err as Error).message}\n${BACKUP_COMMANDS_HELP}`)
      return 2
    }
    if (err instanceof AppError) {
      console.error(JSON.stringify(err.toBody(), null, 2))
      // Its own exit code: a script can tell "pointed at the wrong database" from a bad file.
      return err.code === 'restore_target_not_empty' ? RESTORE_NOT_EMPTY_EXIT : 1
    }
    if (code === 'ENOENT' || code === 'EACCES' || code === 'EEXIST') {
      console.error(`herald ${command}: ${(err as Error).message}`)
      return 1
    }
    throw err
  }
}
