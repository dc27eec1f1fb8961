// `herald restore FILE` (issue 23): reads a backup (backup.ts) into an empty
// database, on either storage mode whatever mode wrote it.
//
// 1. The header is checked: a Herald backup, of a format and migrations this
//    release knows. The database must hold no project and no user.
// 2. The migrations the backup's data had are applied (not the newer ones),
//    so the rows go into the tables they were read from; then the rows, a
//    batch per transaction; then the remaining migrations, which bring the
//    restored data up to this release exactly as they bring a live database.
// 3. Work the backup could not carry is re-planned (scheduled broadcasts get
//    their job again; a broadcast caught sending is ended as failed), and every
//    table's count is checked against the file's last line.
//
// A restore that fails part way leaves the rows it had written: the message
// says so, and the way forward is an empty database again (drop and recreate
// it, or a new data directory).
import { createReadStream } from 'node:fs'
import { createGunzip } from 'node:zlib'
import type { Readable } from 'node:stream'
import type { Database, Queryable } from '../platform/db/database.ts'
import { migrate, readMigrations } from '../platform/db/migrate.ts'
import { AppError } from '../platform/errors.ts'
import { enqueue } from '../platform/jobs/queue.ts'
import * as broadcastState from '../broadcasts/broadcast-state.ts'
import { readLines } from '../subscribers/import-lines.ts'
import { BACKUP_TABLES } from './backup-tables.ts'
import { BACKUP_FORMAT, type BackupHeader } from './backup.ts'
import { BROADCAST_PAYLOAD_VERSION } from '../broadcasts/payload-version.ts'

/** Rows per transaction: bounded, so a restore of millions holds a few MB and no long transaction. */
export const RESTORE_BATCH_ROWS = 1000
/** …and bytes of JSON per transaction, for tables of large rows (hosted images, up to 2 MB of hex each). */
export const RESTORE_BATCH_BYTES = 4 * 1024 * 1024
/** The longest line read: a hosted image of 1 MB is ~2 MB of hex; far above any real row. */
const MAX_LINE_BYTES = 64 * 1024 * 1024

export interface RestoreSummary {
  projects: number
  rows: Record<string, number>
  /** Scheduled broadcasts given their job again. */
  rescheduled: number
  /** Broadcasts ended as failed: caught sending, or their time passed before the restore. */
  interrupted: number
}

const invalid = (message: string) => new AppError('invalid_backup', message)

/** The file as a stream of bytes, gunzipped when it starts with gzip's magic bytes. */
export async function openBackupFile(file: string): Promise<Readable> {
  const head = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = []
    const stream = createReadStream(file, { start: 0, end: 1 })
    stream.on('data', (chunk) => chunks.push(chunk as Buffer))
    stream.on('end', () => resolve(Buffer.concat(chunks)))
    stream.on('error', reject)
  })
  const input = createReadStream(file)
  return head[0] === 0x1f && head[1] === 0x8b ? input.pipe(createGunzip()) : input
}

function parseHeader(text: string | null): BackupHeader {
  let header: Partial<BackupHeader>
  try {
    header = JSON.parse(text ?? '') as Partial<BackupHeader>
  } catch {
    throw invalid('The file is not a Herald backup: its first line is not JSON.')
  }
  if (typeof header !== 'object' || header === null || typeof header.herald_backup !== 'number') throw invalid('The file is not a Herald backup: its first line has no herald_backup.')
  if (header.herald_backup > BACKUP_FORMAT) throw invalid(`The backup is in format ${header.herald_backup}, made by Herald ${header.herald_version}; this release reads format ${BACKUP_FORMAT}. Restore with that release or a newer one.`)
  if (!Array.isArray(header.migrations) || typeof header.tables !== 'object' || header.tables === null) throw invalid('The backup header lacks its migrations or tables.')
  return header as BackupHeader
}

/** Whether the database holds nothing a restore could collide with (tables not made yet count as empty). */
async function isEmpty(db: Database): Promise<boolean> {
  const exists = await db.query<{ projects: string | null; users: string | null }>("SELECT to_regclass('projects')::text AS projects, to_regclass('users')::text AS users")
  const row = exists.rows[0]!
  if (row.projects && (await db.query('SELECT 1 FROM projects LIMIT 1')).rows.length > 0) return false
  if (row.users && (await db.query('SELECT 1 FROM users LIMIT 1')).rows.length > 0) return false
  return true
}

/** Columns a restore writes: those that are not computed by the database. */
async function writableColumns(q: Queryable, table: string): Promise<Set<string>> {
  const result = await q.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER'`,
    [table],
  )
  return new Set(result.rows.map((row) => row.column_name))
}

/** Checks the backup against this database and answers, per table, the column list to insert. */
async function planColumns(db: Database, header: BackupHeader): Promise<Map<string, string>> {
  const plan = new Map<string, string>()
  for (const [table, columns] of Object.entries(header.tables)) {
    if (!BACKUP_TABLES.some((t) => t.name === table)) throw invalid(`The backup holds a table this release does not restore: ${table}. Restore with the release that made it (${header.herald_version}) or a newer one.`)
    const writable = await writableColumns(db, table)
    const all = await db.query<{ column_name: string }>('SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1', [table])
    const known = new Set(all.rows.map((row) => row.column_name))
    const unknown = columns.filter((column) => !known.has(column))
    if (unknown.length > 0) throw invalid(`The backup's ${table} has columns this release does not have (${unknown.join(', ')}). Restore with the release that made it (${header.herald_version}) or a newer one.`)
    // Column names come from information_schema of this database, quoted all the same.
    plan.set(table, columns.filter((column) => writable.has(column)).map((column) => `"${column}"`).join(', '))
  }
  return plan
}

/** The row part of a line `{"t":"name","r":{…}}`, as written: the text of the row itself, unparsed, so nothing is lost (bigints). */
function rowText(line: string, table: string): string {
  const prefix = `{"t":${JSON.stringify(table)},"r":`
  if (line.startsWith(prefix) && line.endsWith('}')) return line.slice(prefix.length, -1)
  return JSON.stringify((JSON.parse(line) as { r: unknown }).r)
}

async function insertBatch(db: Database, table: string, columns: string, rows: string[]): Promise<void> {
  await db.transaction(async (tx) => {
    // Rows come back as they were: a restored subscriber is no gain of today's hour (migration 0033).
    await tx.query("SELECT set_config('herald.stats', 'off', true)")
    await tx.query(
      `INSERT INTO ${table} (${columns}) SELECT ${columns} FROM jsonb_populate_recordset(NULL::${table}, $1::jsonb)`,
      [`[${rows.join(',')}]`],
    )
  })
}

/**
 * Reads the backup from input into db, which must be empty. Refuses (and
 * writes nothing) when it is not, or when the file is not a backup this
 * release can read.
 */
export async function restoreBackup(db: Database, input: AsyncIterable<Buffer | string>, onProgress?: (rowsSoFar: number) => void): Promise<RestoreSummary> {
  const lines = readLines(input, MAX_LINE_BYTES)[Symbol.asyncIterator]()
  const first = await lines.next()
  const header = parseHeader(first.done ? null : first.value.text)
  const known = readMigrations()
  const knownIds = new Set(known.map((m) => m.id))
  const newer = header.migrations.filter((id) => !knownIds.has(id))
  if (newer.length > 0) throw invalid(`The backup was made by Herald ${header.herald_version}, with migrations this release does not have (${newer.join(', ')}). Restore with that release or a newer one.`)
  if (!(await isEmpty(db))) {
    throw new AppError('restore_target_not_empty', 'This database already holds projects or users: a backup is restored into an empty one only. Point DATABASE_URL at a new database (or HERALD_DATA_DIR at a new directory) and run the restore again.')
  }
  // The schema the data was read from first; the newer migrations after the rows.
  await migrate(db, known.filter((m) => header.migrations.includes(m.id)))
  const columns = await planColumns(db, header)

  const rows: Record<string, number> = Object.fromEntries(Object.keys(header.tables).map((table) => [table, 0]))
  let expected: Record<string, number> | null = null
  let batchTable: string | null = null
  let batch: string[] = []
  let batchBytes = 0
  let written = 0
  const flush = async (): Promise<void> => {
    if (batchTable === null || batch.length === 0) return
    await insertBatch(db, batchTable, columns.get(batchTable)!, batch)
    rows[batchTable]! += batch.length
    written += batch.length
    onProgress?.(written)
    batch = []
    batchBytes = 0
  }
  try {
    for (let next = await lines.next(); !next.done; next = await lines.next()) {
      const line = next.value
      if (expected !== null) throw invalid(`Line ${line.number}: the backup goes on after its last line.`)
      if (line.tooLong) throw invalid(`Line ${line.number} is longer than ${MAX_LINE_BYTES} bytes.`)
      if (line.text.trim() === '') continue
      let record: { t?: unknown; herald_backup_end?: { rows?: Record<string, number> } }
      try {
        record = JSON.parse(line.text)
      } catch {
        throw invalid(`Line ${line.number} is not valid JSON.`)
      }
      if (record.herald_backup_end) {
        expected = record.herald_backup_end.rows ?? {}
        continue
      }
      const table = record.t
      if (typeof table !== 'string' || !columns.has(table)) throw invalid(`Line ${line.number}: no table ${JSON.stringify(table)} in this backup.`)
      if (table !== batchTable || batch.length >= RESTORE_BATCH_ROWS || batchBytes >= RESTORE_BATCH_BYTES) {
        await flush()
        batchTable = table
      }
      const text = rowText(line.text, table)
      batch.push(text)
      batchBytes += text.length
    }
    await flush()
  } catch (err) {
    if (err instanceof AppError) throw new AppError(err.code, `${err.message} The rows before it were restored: start again with an empty database.`, err.extra)
    throw err
  }
  if (expected === null) throw invalid('The backup ends before its last line: the file was cut short. The rows in it were restored: start again with an empty database and a whole file.')

  await migrate(db)
  const { rescheduled, interrupted } = await replan(db)
  await verify(db, expected, rows)
  const projects = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM projects')).rows[0]!.n
  return { projects, rows, rescheduled, interrupted }
}

/**
 * What the backup could not carry, since jobs are not in it: a scheduled
 * broadcast gets its job again (or fails, if its time passed before the
 * restore: an old backup must not send a stale campaign); a broadcast caught
 * pending or sending is ended as failed, with the reason, since the pushes
 * it had left are not known.
 */
async function replan(db: Database): Promise<{ rescheduled: number; interrupted: number }> {
  return db.transaction(async (tx) => {
    const open = await tx.query<{ id: string; status: string; scheduled_at: Date | null }>(
      "SELECT id, status, scheduled_at FROM broadcasts WHERE status IN ('scheduled', 'pending', 'sending') ORDER BY id",
    )
    let rescheduled = 0
    let interrupted = 0
    for (const broadcast of open.rows) {
      const at = broadcast.scheduled_at === null ? null : new Date(broadcast.scheduled_at)
      if (broadcast.status === 'scheduled' && at !== null && at.getTime() > Date.now()) {
        await enqueue(tx, 'fire_broadcast', { broadcast_id: broadcast.id }, { runAt: at, payloadVersion: BROADCAST_PAYLOAD_VERSION })
        rescheduled++
        continue
      }
      const reason = broadcast.status === 'scheduled'
        ? 'restore: its scheduled time passed before the backup was restored; not sent'
        : 'restore: the backup was taken while it was sending; the pushes it had left were not sent'
      await broadcastState.fail(tx, broadcast.id, reason)
      interrupted++
    }
    return { rescheduled, interrupted }
  })
}

/** Every table holds what the file's last line says; every project's subscriber counter matches its rows. */
async function verify(db: Database, expected: Record<string, number>, restored: Record<string, number>): Promise<void> {
  for (const [table, count] of Object.entries(expected)) {
    // A name from the file goes into SQL text only once it is known to be one of the tables a backup holds.
    if (!BACKUP_TABLES.some((t) => t.name === table) || !(table in restored)) throw invalid(`The backup's last line counts a table it does not hold: ${JSON.stringify(table)}.`)
    const inDb = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n
    if (restored[table] !== count || inDb !== count) {
      throw invalid(`${table}: the backup has ${count} rows, ${restored[table] ?? 0} were read and ${inDb} are in the database.`)
    }
  }
  const drift = await db.query<{ project_id: string }>(
    `SELECT p.id AS project_id FROM projects p LEFT JOIN project_counters c ON c.project_id = p.id
      WHERE COALESCE(c.active_subscribers, -1) <> (SELECT count(*) FROM subscribers s WHERE s.project_id = p.id AND s.status = 'active')`,
  )
  if (drift.rows.length > 0) throw invalid(`The active subscriber count of ${drift.rows[0]!.project_id} does not match its subscribers after the restore.`)
}

/** restoreBackup from a file (gzip or not). */
export async function restoreBackupFile(db: Database, file: string, onProgress?: (rowsSoFar: number) => void): Promise<RestoreSummary> {
  return restoreBackup(db, await openBackupFile(file), onProgress)
}
