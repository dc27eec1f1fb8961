// A fingerprint of everything in the database: each table's row count and a
// checksum of its rows, in one query. Two equal fingerprints mean a request
// wrote nothing (the fuzz test's "a rejected request changes nothing").
import type { Database } from '../../src/platform/db/database.ts'

export type Fingerprint = Record<string, string>

/**
 * Columns that are bookkeeping of authentication rather than a change a
 * request makes: a key's last_used_at is written by whatever request the key
 * authenticates (at most once a minute), refused or not.
 */
const IGNORED: Record<string, string> = { api_keys: 'last_used_at' }

export async function fingerprinter(db: Database): Promise<() => Promise<Fingerprint>> {
  const tables = (await db.query<{ name: string }>(
    "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename",
  )).rows.map((row) => row.name)
  const sql = tables
    .map((table) => {
      const row = IGNORED[table] ? `(to_jsonb(t) - '${IGNORED[table]}')::text` : 't::text'
      return `SELECT '${table}' AS name, count(*) || ':' || md5(coalesce(string_agg(${row}, '|' ORDER BY ${row}), '')) AS sum FROM "${table}" t`
    })
    .join(' UNION ALL ')
  return async () => Object.fromEntries((await db.query<{ name: string; sum: string }>(sql)).rows.map((row) => [row.name, row.sum]))
}

/** The tables whose fingerprint differs, for a readable failure. */
export function changedTables(before: Fingerprint, after: Fingerprint): string[] {
  return Object.keys({ ...before, ...after }).filter((table) => before[table] !== after[table])
}
