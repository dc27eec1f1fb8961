// `herald backup` (issue 23): one NDJSON file with everything the chosen
// projects need (backup-tables.ts), a record a line, written a page at a time
// so two million subscribers never sit in memory:
//
//   {"herald_backup":1,"herald_version":…,"created_at":…,"storage":…,"projects":"all"|[ids],"migrations":[ids],"tables":{name:[columns]}}
//   {"t":"projects","r":{…the row, as to_jsonb gives it…}}
//   …
//   {"herald_backup_end":{"rows":{name:count}}}
//
// The header says which migrations the data had and which columns each table
// had; the last line says how many rows of each table came before it, so a
// restore knows a file that was cut short. Every read happens in one
// REPEATABLE READ transaction: one snapshot, so a subscriber written meanwhile
// is either wholly in the file (with its group memberships) or not at all.
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { VERSION } from '../platform/version.ts'
import { BACKUP_TABLES, type BackupTable } from './backup-tables.ts'

/** The file's format; a restore refuses a higher one. Raised only when a reader of the old format would misread the new. */
export const BACKUP_FORMAT = 1
/** Rows per query: a page of a few MB at most (a hosted image is up to 1 MB, 2 MB as hex). */
export const BACKUP_PAGE_SIZE = 2000

export interface BackupHeader {
  herald_backup: number
  herald_version: string
  created_at: string
  storage: 'embedded' | 'postgres'
  projects: 'all' | string[]
  migrations: number[]
  tables: Record<string, string[]>
}

export interface BackupSummary {
  projects: string[]
  rows: Record<string, number>
}

/** Writes text out, resolving once the destination can take more (backpressure). */
export type Write = (text: string) => Promise<void>

async function columnsOf(q: Queryable, table: string): Promise<string[]> {
  const result = await q.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`,
    [table],
  )
  return result.rows.map((row) => row.column_name)
}

/** One page of a table's rows in key order, after the given key (null: from the start). */
async function page(q: Queryable, table: BackupTable, all: boolean, projectIds: string[], after: string[] | null): Promise<Array<{ row: string; keys: string[] }>> {
  const where = all ? (table.ofAll ?? 'TRUE') : table.ofProjects
  const keyCols = table.key.map(([column]) => `t.${column}`).join(', ')
  // $1 is the project ids in a backup of some projects; the key's values follow.
  const first = all ? 1 : 2
  const keyParams = table.key.map(([, type], i) => `$${i + first}::${type}`).join(', ')
  const keyText = table.key.map(([column], i) => `t.${column}::text AS k${i}`).join(', ')
  const result = await q.query<Record<string, string>>(
    `SELECT to_jsonb(t)::text AS row, ${keyText}
       FROM ${table.name} t
      WHERE (${where}) ${after === null ? '' : `AND (${keyCols}) > (${keyParams})`}
      ORDER BY ${keyCols}
      LIMIT ${BACKUP_PAGE_SIZE}`,
    [...(all ? [] : [projectIds]), ...(after ?? [])],
  )
  return result.rows.map((r) => ({ row: r.row!, keys: table.key.map((_, i) => r[`k${i}`]!) }))
}

/**
 * Writes the backup of the given projects (null: every project, and every
 * user, member or not) through write. Unknown project ids are refused before
 * anything is written.
 */
export async function writeBackup(db: Database, projectIds: string[] | null, write: Write): Promise<BackupSummary> {
  return db.transaction(async (tx) => {
    // One snapshot for the whole file; nothing written. A backup of millions of
    // rows takes minutes: the everyday bounds on a statement and on an idle
    // transaction (the file's writer may wait on a slow disk) do not apply.
    await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY')
    await tx.query('SET LOCAL statement_timeout = 0')
    await tx.query('SET LOCAL idle_in_transaction_session_timeout = 0')
    // Times in the file in UTC whatever the server's zone (to_jsonb writes them in the session's).
    await tx.query("SET LOCAL TimeZone = 'UTC'")
    const all = projectIds === null
    const projects = all
      ? (await tx.query<{ id: string }>('SELECT id FROM projects ORDER BY id')).rows.map((row) => row.id)
      : projectIds
    if (!all) {
      const found = new Set((await tx.query<{ id: string }>('SELECT id FROM projects WHERE id = ANY($1)', [projectIds])).rows.map((row) => row.id))
      const missing = projectIds.find((id) => !found.has(id))
      if (missing) throw new AppError('project_not_found', `No project ${missing}.`)
    }
    const migrations = (await tx.query<{ id: number }>('SELECT id FROM schema_migrations ORDER BY id')).rows.map((row) => Number(row.id))
    const tables: Record<string, string[]> = {}
    for (const table of BACKUP_TABLES) tables[table.name] = await columnsOf(tx, table.name)
    const header: BackupHeader = {
      herald_backup: BACKUP_FORMAT,
      herald_version: VERSION,
      created_at: new Date().toISOString(),
      storage: db.kind,
      projects: all ? 'all' : projectIds,
      migrations,
      tables,
    }
    await write(`${JSON.stringify(header)}\n`)

    const rows: Record<string, number> = {}
    for (const table of BACKUP_TABLES) {
      rows[table.name] = 0
      const prefix = `{"t":${JSON.stringify(table.name)},"r":`
      let after: string[] | null = null
      for (;;) {
        const found = await page(tx, table, all, projects, after)
        if (found.length === 0) break
        let chunk = ''
        for (const { row } of found) chunk += `${prefix}${row}}\n`
        await write(chunk)
        rows[table.name] += found.length
        after = found[found.length - 1]!.keys
      }
    }
    await write(`${JSON.stringify({ herald_backup_end: { rows } })}\n`)
    return { projects, rows }
  })
}
