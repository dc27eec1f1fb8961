// Once per postgres test run: a template database with every migration
// applied, which each test file clones (CREATE DATABASE … TEMPLATE is fast),
// and the compiled CLI the files that start `herald` processes run (built-cli.ts).
import pg from 'pg'
import { openDatabase } from '../../src/platform/db/database.ts'
import { migrate } from '../../src/platform/db/migrate.ts'
import { ensureBuild, sweepBuilds } from './built-cli.ts'
import { TEMPLATE_DB, withDatabase } from './database.ts'

/** Set once the template is made: the two postgres projects (vitest.config.ts) each run this setup, and the second has nothing to do. */
const MADE = 'HERALD_TEST_TEMPLATE_MADE'

export default async function setup(): Promise<() => Promise<void>> {
  if (process.env[MADE] === TEMPLATE_DB) return async () => undefined
  sweepBuilds()
  ensureBuild()
  const serverUrl = process.env.DATABASE_URL
  if (!serverUrl) return async () => undefined
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB} WITH (FORCE)`)
  await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`)
  const db = await openDatabase({ databaseUrl: withDatabase(serverUrl, TEMPLATE_DB), dataDir: null })
  await migrate(db)
  await db.close()
  await admin.end()
  process.env[MADE] = TEMPLATE_DB
  return async () => undefined
}
