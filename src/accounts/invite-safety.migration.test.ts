// Migration 0017 on a database an earlier version left with stale open
// invites (issue 22): it revokes, once, those made by someone no longer an
// owner, those for an email already a member, and those a newer open invite
// for the same email replaces; the rest stay open. Runs on a database of its
// own migrated up to 0016 first.
import { afterAll, beforeAll, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../test/support/database.ts'
import type { Database } from '../platform/db/database.ts'
import { migrate, readMigrations } from '../platform/db/migrate.ts'

let test: TestDatabase
let db: Database

beforeAll(async () => {
  // Not cloned from the test template, which has every migration applied.
  test = await createTestDatabase({ migrated: false })
  db = test.db
})
afterAll(async () => {
  await test?.drop()
})

it('revokes the open invites that were already stale, and only those', async () => {
  const all = readMigrations()
  expect(all.map((m) => m.name)).toContain('0017_invite_safety.sql')
  await migrate(db, all.filter((m) => m.id < 17))

  await db.query(`INSERT INTO projects (id, name, plan, vapid_public, vapid_private) VALUES ('prj_a', 'A', 'free', 'x', 'y')`)
  await db.query(`INSERT INTO users (id, email) VALUES ('usr_olga', 'olga@a.test'), ('usr_gone', 'gone@a.test'), ('usr_demoted', 'demoted@a.test'), ('usr_vic', 'vic@a.test')`)
  await db.query(`INSERT INTO memberships (project_id, user_id, role) VALUES ('prj_a', 'usr_olga', 'owner'), ('prj_a', 'usr_demoted', 'viewer'), ('prj_a', 'usr_vic', 'viewer')`)
  const invite = (id: string, email: string, invitedBy: string | null, expires = "now() + interval '1 day'") =>
    db.query(`INSERT INTO invites (id, project_id, email, role, token_hash, invited_by, expires_at) VALUES ($1, 'prj_a', $2, 'owner', $1, $3, ${expires})`, [id, email, invitedBy])
  await invite('inv_01_by_owner', 'new@a.test', 'usr_olga')
  await invite('inv_02_by_operator', 'other@a.test', null)
  await invite('inv_03_by_removed', 'gone2@a.test', 'usr_gone')
  await invite('inv_04_by_demoted', 'demoted2@a.test', 'usr_demoted')
  await invite('inv_05_for_member', 'vic@a.test', null)
  await invite('inv_06_older', 'twice@a.test', 'usr_olga')
  await invite('inv_07_newer', 'twice@a.test', 'usr_olga')
  await db.query(`UPDATE invites SET accepted_at = now() WHERE id = 'inv_01_by_owner'`)
  await invite('inv_08_open', 'new@a.test', 'usr_olga')

  expect(await migrate(db)).toEqual(all.filter((m) => m.id >= 17).map((m) => m.name))
  const rows = (await db.query<{ id: string; revoked: boolean }>('SELECT id, revoked_at IS NOT NULL AS revoked FROM invites ORDER BY id')).rows
  expect(Object.fromEntries(rows.map((r) => [r.id, r.revoked]))).toEqual({
    inv_01_by_owner: false,
    inv_02_by_operator: false,
    inv_03_by_removed: true,
    inv_04_by_demoted: true,
    inv_05_for_member: true,
    inv_06_older: true,
    inv_07_newer: false,
    inv_08_open: false,
  })
})
