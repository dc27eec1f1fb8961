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
  const sql = tables.map(tableSum).join(' UNION ALL ')
  return async () => Object.fromEntries((await db.query<{ name: string; sum: string }>(sql)).rows.map((row) => [row.name, row.sum]))
}

/** One table's row count and checksum, as a query. */
function tableSum(table: string): string {
  const row = IGNORED[table] ? `(to_jsonb(t) - '${IGNORED[table]}')::text` : 't::text'
  return `SELECT '${table}' AS name, count(*) || ':' || md5(coalesce(string_agg(${row}, '|' ORDER BY ${row}), '')) AS sum FROM "${table}" t`
}

/** The tables whose fingerprint differs, for a readable failure. */
export function changedTables(before: Fingerprint, after: Fingerprint): string[] {
  return Object.keys({ ...before, ...after }).filter((table) => before[table] !== after[table])
}

/**
 * The same fingerprint, for a test that takes one after every request (the
 * fuzz test, thousands of times): a table's checksum is computed again only
 * when a statement wrote to it since the last call, and kept otherwise. A
 * statement-level trigger on every table (INSERT, UPDATE, DELETE, TRUNCATE)
 * notes the table's name in a side table of its own schema, which each call
 * empties; a table no statement wrote to cannot have changed, so each call
 * still answers every table's checksum as `fingerprinter` would. The triggers
 * stay in that test's database (its own copy): they only add a row to the
 * side table per writing statement.
 */
export async function incrementalFingerprinter(db: Database): Promise<() => Promise<Fingerprint>> {
  const tables = (await db.query<{ name: string }>(
    "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename",
  )).rows.map((row) => row.name)
  await db.query('CREATE SCHEMA herald_test_watch')
  await db.query('CREATE TABLE herald_test_watch.written (name text NOT NULL)')
  await db.query(`CREATE FUNCTION herald_test_watch.note() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN INSERT INTO herald_test_watch.written VALUES (TG_TABLE_NAME); RETURN NULL; END $$`)
  for (const table of tables) {
    await db.query(`CREATE TRIGGER herald_test_watch AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "${table}" FOR EACH STATEMENT EXECUTE FUNCTION herald_test_watch.note()`)
  }
  let current: Fingerprint | null = null
  return async () => {
    const written = new Set((await db.query<{ name: string }>('DELETE FROM herald_test_watch.written RETURNING name')).rows.map((row) => row.name))
    const stale = current ? tables.filter((table) => written.has(table)) : tables
    const next: Fingerprint = { ...current }
    if (stale.length > 0) {
      for (const row of (await db.query<{ name: string; sum: string }>(stale.map(tableSum).join(' UNION ALL '))).rows) next[row.name] = row.sum
    }
    current = next
    return { ...next }
  }
}
