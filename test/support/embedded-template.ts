// The embedded database's equivalent of PostgreSQL's template database.
// Opening an in-memory PGlite runs initdb every time (6-7 CPU seconds per
// database on this 2-core machine, and most test files open one or more);
// resuming a data directory that already holds a cluster takes 1-2 s
// (docs/testing.md). So a cluster is made
// once, migrated, and closed into a template directory, and each test database
// is a copy of it, on tmpfs where there is one.
//
// The template is kept between runs, keyed by what it was made from (the
// migrations, migrate.ts, the PGlite version): a changed or new migration
// makes a new one. Old templates and copies left by killed runs are removed
// by global-setup-embedded.ts.
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { openDatabase, type Database } from '../../src/platform/db/database.ts'
import { migrate, MIGRATIONS_DIR } from '../../src/platform/db/migrate.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

/** tmpfs when the machine has one: the copies are written to as the tests run. */
export const TEMPLATE_BASE = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir()
/** Named after the checkout too: other checkouts on this machine keep theirs. */
const TEMPLATE_PREFIX = `herald-test-template-${createHash('sha256').update(ROOT).digest('hex').slice(0, 10)}-`
const COPY_PREFIX = 'herald-test-db-'

/** What a template is made from: change any of it and a new one is made. */
export function templateKey(migrationsDir = MIGRATIONS_DIR): string {
  const hash = createHash('sha256')
  hash.update(fs.readFileSync(path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json')))
  hash.update(fs.readFileSync(path.join(ROOT, 'src/platform/db/migrate.ts')))
  for (const file of fs.readdirSync(migrationsDir).sort()) {
    hash.update(file)
    hash.update(fs.readFileSync(path.join(migrationsDir, file)))
  }
  return hash.digest('hex').slice(0, 16)
}

export function templateDir(): string {
  return path.join(TEMPLATE_BASE, `${TEMPLATE_PREFIX}${templateKey()}`)
}

/**
 * The template's directory, made first if missing: `empty/` (a fresh cluster)
 * and `migrated/` (every migration applied). Made under a temporary name and
 * renamed into place, so a process that finds the directory finds it whole,
 * and two processes making it at once both end up using one.
 */
export async function ensureTemplate(): Promise<string> {
  const dir = templateDir()
  if (fs.existsSync(dir)) return dir
  const building = `${dir}.${process.pid}-${randomBytes(4).toString('hex')}`
  try {
    for (const variant of ['empty', 'migrated']) {
      const db = await openDatabase({ databaseUrl: null, dataDir: path.join(building, variant) })
      if (variant === 'migrated') await migrate(db)
      await db.close()
    }
    try {
      fs.renameSync(building, dir)
    } catch (err) {
      // Another process made it first: theirs is as good as ours.
      if (!['ENOTEMPTY', 'EEXIST'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err
    }
  } finally {
    fs.rmSync(building, { recursive: true, force: true })
  }
  return dir
}

/** A copy of the template, opened; closing it deletes the copy. */
export async function openTemplateCopy(migrated: boolean): Promise<{ db: Database; dir: string; drop(): Promise<void> }> {
  const template = path.join(await ensureTemplate(), migrated ? 'migrated' : 'empty')
  const copy = path.join(TEMPLATE_BASE, `${COPY_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}`)
  fs.cpSync(template, copy, { recursive: true })
  try {
    const db = await openDatabase({ databaseUrl: null, dataDir: copy })
    return {
      db,
      dir: copy,
      async drop() {
        await db.close()
        fs.rmSync(copy, { recursive: true, force: true })
      },
    }
  } catch (err) {
    fs.rmSync(copy, { recursive: true, force: true })
    throw err
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Removes this checkout's templates made from other migrations (remade in a
 * few seconds when needed) and any copy whose process is gone (a run killed
 * before its files closed their databases).
 */
export function sweepTemplates(): void {
  const current = path.basename(templateDir())
  for (const name of fs.readdirSync(TEMPLATE_BASE)) {
    const full = path.join(TEMPLATE_BASE, name)
    if (name.startsWith(COPY_PREFIX)) {
      const pid = Number(name.slice(COPY_PREFIX.length).split('-')[0])
      if (!processAlive(pid)) fs.rmSync(full, { recursive: true, force: true })
    } else if (name.startsWith(TEMPLATE_PREFIX) && name !== current) {
      // A template being made by a process still running is left to it.
      const pid = Number(name.split('.')[1]?.split('-')[0])
      if (!Number.isInteger(pid) || !processAlive(pid)) fs.rmSync(full, { recursive: true, force: true })
    }
  }
}
