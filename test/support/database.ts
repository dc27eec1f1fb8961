// A fresh, migrated database per test file, in the storage mode the vitest
// project names (HERALD_TEST_DB): a PGlite data directory copied from the
// template embedded-template.ts made once, or a PostgreSQL database cloned
// from the template that global-setup.ts migrated once.
import { createHash, randomBytes } from 'node:crypto'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { openDatabase, type Database } from '../../src/platform/db/database.ts'
import { openTemplateCopy } from './embedded-template.ts'

export type TestDbMode = 'embedded' | 'postgres'
/**
 * The migrated template each test file clones. Named after the checkout, so
 * two checkouts (a second work tree, a CI clone) testing against one server at
 * once never drop each other's template.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
export const TEMPLATE_DB = `herald_test_template_${createHash('sha256').update(ROOT).digest('hex').slice(0, 10)}`

export function testDbMode(): TestDbMode {
  return process.env.HERALD_TEST_DB === 'postgres' ? 'postgres' : 'embedded'
}

/** The server URL with its database name replaced. */
export function withDatabase(url: string, name: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${name}`
  return parsed.toString()
}

export interface TestDatabase {
  db: Database
  mode: TestDbMode
  /** Set in postgres mode: a URL other processes (workers, the CLI) can open. */
  url: string | null
  drop(): Promise<void>
}

/**
 * A database of the test's own: with every migration applied (cloned from the
 * template on PostgreSQL), or with none (`migrated: false`) for the tests of
 * one migration on data written before it.
 */
export async function createTestDatabase({ migrated = true } = {}): Promise<TestDatabase> {
  if (testDbMode() === 'embedded') {
    const { db, drop } = await openTemplateCopy(migrated)
    return { db, mode: 'embedded', url: null, drop }
  }
  const serverUrl = process.env.DATABASE_URL
  if (!serverUrl) throw new Error('HERALD_TEST_DB=postgres needs DATABASE_URL')
  const name = `herald_test_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  try {
    await admin.query(migrated ? `CREATE DATABASE ${name} TEMPLATE ${TEMPLATE_DB}` : `CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const url = withDatabase(serverUrl, name)
  const db = await openDatabase({ databaseUrl: url, dataDir: null, poolSize: migrated ? 5 : 2 })
  return {
    db,
    mode: 'postgres',
    url,
    async drop() {
      await db.close()
      const client = new pg.Client({ connectionString: serverUrl })
      await client.connect()
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await client.end()
      }
    },
  }
}
