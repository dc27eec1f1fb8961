// The embedded test databases are copies of one template: each must hold
// every migration, be a database of its own, go when dropped, and the
// template must be remade when a migration changes.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { MIGRATIONS_DIR, readMigrations } from '../../src/platform/db/migrate.ts'
import { testDbMode } from './database.ts'
import { openTemplateCopy, templateKey } from './embedded-template.ts'

// Run where the embedded database is tested (CI's first run); the PostgreSQL
// run would only make the template for this file.
describe.skipIf(testDbMode() !== 'embedded')('embedded template copies', () => {
  it('hold every migration, are independent of each other, and are deleted when dropped', async () => {
    const a = await openTemplateCopy(true)
    const b = await openTemplateCopy(true)
    try {
      const applied = await a.db.query<{ id: number }>('SELECT id FROM schema_migrations ORDER BY id')
      expect(applied.rows.map((row) => row.id)).toEqual(readMigrations().map((m) => m.id))
      await a.db.query('CREATE TABLE only_in_a (x int)')
      const inB = await b.db.query("SELECT 1 FROM pg_tables WHERE tablename = 'only_in_a'")
      expect(inB.rowCount).toBe(0)
    } finally {
      await a.drop()
      await b.drop()
    }
    expect(fs.existsSync(a.dir)).toBe(false)
    // A later copy starts from the template again, not from what a copy wrote.
    const c = await openTemplateCopy(true)
    try {
      expect((await c.db.query("SELECT 1 FROM pg_tables WHERE tablename = 'only_in_a'")).rowCount).toBe(0)
    } finally {
      await c.drop()
    }
  })

  it('has no migration applied when asked for an unmigrated one', async () => {
    const empty = await openTemplateCopy(false)
    try {
      expect((await empty.db.query("SELECT 1 FROM pg_tables WHERE tablename = 'schema_migrations'")).rowCount).toBe(0)
    } finally {
      await empty.drop()
    }
  })

  it('is keyed by the migrations: a changed or added migration makes a new template', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-migrations-'))
    try {
      for (const file of fs.readdirSync(MIGRATIONS_DIR)) fs.copyFileSync(path.join(MIGRATIONS_DIR, file), path.join(dir, file))
      const same = templateKey(dir)
      expect(same).toBe(templateKey())
      fs.appendFileSync(path.join(dir, '0001_init.sql'), '\n-- edited\n')
      const edited = templateKey(dir)
      expect(edited).not.toBe(same)
      fs.writeFileSync(path.join(dir, '9999_new.sql'), 'SELECT 1;\n')
      expect(templateKey(dir)).not.toBe(edited)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
