// Numbered plain-SQL migrations from migrations/, each applied in its own
// transaction and recorded in that same transaction. An advisory lock keeps
// two processes starting at once from applying the same file twice.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Database } from './database.ts'

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../migrations')
/** Arbitrary, fixed key for pg_advisory_xact_lock: "herald" in ASCII, truncated to fit int8. */
const MIGRATION_LOCK_KEY = 0x68657261

export interface Migration {
  id: number
  name: string
  sql: string
}

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((file) => /^\d{4}_[\w-]+\.sql$/.test(file))
    .sort()
    .map((file) => ({ id: Number(file.slice(0, 4)), name: file, sql: fs.readFileSync(path.join(dir, file), 'utf8') }))
}

/** Applies every migration not yet applied; returns the names it applied. */
export async function migrate(db: Database, migrations = readMigrations()): Promise<string[]> {
  await db.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
  const applied: string[] = []
  for (const migration of migrations) {
    const done = await db.transaction(async (tx) => {
      // A migration may rebuild a large table, and a process starting meanwhile
      // waits for it on the lock below: neither is bounded like everyday work
      // (the session timeouts in database.ts), for this transaction only.
      await tx.query('SET LOCAL statement_timeout = 0')
      await tx.query('SET LOCAL lock_timeout = 0')
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY])
      const seen = await tx.query('SELECT 1 FROM schema_migrations WHERE id = $1', [migration.id])
      if (seen.rows.length > 0) return false
      await db.exec(migration.sql, tx)
      await tx.query('INSERT INTO schema_migrations (id, name) VALUES ($1, $2)', [migration.id, migration.name])
      return true
    })
    if (done) applied.push(migration.name)
  }
  return applied
}
