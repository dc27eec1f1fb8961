// The rolling-upgrade rule (docs/upgrades.md), held for every file in
// migrations/: a migration only adds (tables, columns that are nullable or
// have a default, indexes, functions, triggers, job kinds), so processes of
// the previous release keep working on the new schema while a fleet is
// upgraded one machine at a time. Removing what a release stopped using is
// done a release later. A landed migration that did otherwise is listed below
// with why it was safe; the list cannot go stale (each must still break the rule).
import { describe, expect, it } from 'vitest'
import { readMigrations } from './migrate.ts'

/** Landed migrations that break the rule, each with the reason old code ran fine on the result. */
const ALLOWED: Record<string, string> = {
  '0016_events_fewer_checks.sql':
    'drops two foreign keys of events (project_id, broadcast_id). Dropping a constraint rejects nothing an older release writes; ' +
    'the one effect older code relied on, a deleted broadcast taking its events with it, is kept by the trigger the same migration adds.',
  '0031_shown.sql':
    "widens events' type check to allow 'shown' (issue 25): the old check is dropped and a looser one added (NOT VALID, so no scan), " +
    'which accepts every type an older release writes (delivered, failed, clicked, dismissed) and every row already there.',
  '0034_member_test_devices.sql':
    "replaces the CHECK on subscribers.status with a wider one (adds 'test', for members' test devices, issue 25). Every value an older " +
    'release writes (active, unsubscribed, expired) passes both, and the two statements run in the migration\'s one transaction.',
}

/** The SQL a rule reads: no comments, no string contents, no function bodies ($$…$$), upper case, one line. */
function normalise(sql: string): string {
  return sql
    .replace(/\$(\w*)\$[\s\S]*?\$\1\$/g, '$$$$')
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/--[^\n]*/g, '')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\s+/g, ' ')
    .toUpperCase()
}

/** Splits at commas outside parentheses (an ALTER TABLE's actions). */
function topLevelParts(statement: string): string[] {
  const parts: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < statement.length; i++) {
    const c = statement[i]
    if (c === '(') depth++
    else if (c === ')') depth--
    else if (c === ',' && depth === 0) {
      parts.push(statement.slice(start, i))
      start = i + 1
    }
  }
  parts.push(statement.slice(start))
  return parts.map((p) => p.trim())
}

const RULES: Array<[RegExp, string]> = [
  [/^DROP (TABLE|INDEX|VIEW|MATERIALIZED VIEW|TYPE|FUNCTION|TRIGGER|SEQUENCE|SCHEMA)\b/, 'drops an object'],
  [/^ALTER TABLE\b.*\bDROP\b/, 'drops a column, constraint, default or NOT NULL'],
  [/\bRENAME\b/, 'renames'],
  [/\bALTER (COLUMN )?\S+ (SET DATA )?TYPE\b/, "changes a column's type"],
  [/\bSET NOT NULL\b/, 'makes a column NOT NULL'],
  [/\bADD (CONSTRAINT|CHECK|UNIQUE|PRIMARY KEY|FOREIGN KEY|EXCLUDE)\b/, 'adds a constraint to existing columns'],
  [/^(TRUNCATE|DELETE)\b/, 'deletes rows'],
  [/^CREATE UNIQUE INDEX\b/, 'adds a unique index (to existing rows, unless its table is new in this migration)'],
]

/** Every way the migration's SQL breaks the rule. */
function ruleBreaks(sql: string): string[] {
  const statements = normalise(sql).split(';').map((s) => s.trim()).filter(Boolean)
  const created = new Set(statements.flatMap((s) => /^CREATE TABLE (IF NOT EXISTS )?(\S+)/.exec(s)?.[2] ?? []))
  const breaks: string[] = []
  for (const statement of statements) {
    for (const [pattern, what] of RULES) {
      if (!pattern.test(statement)) continue
      // A unique index or constraint on a table this migration creates constrains no older writer.
      const onNewTable = /^CREATE UNIQUE INDEX .* ON (ONLY )?(\S+)/.exec(statement)?.[2]
      if (onNewTable && created.has(onNewTable.replace(/\(.*/, ''))) continue
      breaks.push(`${what}: ${statement.slice(0, 120)}`)
    }
    // A NOT NULL column without a default: an older release's INSERTs, which do not name it, fail.
    if (/^ALTER TABLE\b/.test(statement)) {
      for (const part of topLevelParts(statement)) {
        const column = /\bADD (COLUMN )?(IF NOT EXISTS )?(.*)$/.exec(part)?.[3]
        if (column && /\bNOT NULL\b/.test(column) && !/\b(DEFAULT|GENERATED)\b/.test(column)) breaks.push(`adds a NOT NULL column without a default: ${part.slice(0, 120)}`)
      }
    }
  }
  return breaks
}

describe('migrations only add (docs/upgrades.md)', () => {
  it('catches each way of breaking the rule', () => {
    const broken = [
      'DROP TABLE groups;',
      'ALTER TABLE subscribers DROP COLUMN tags;',
      'ALTER TABLE subscribers DROP tags;',
      'ALTER TABLE jobs ALTER COLUMN payload DROP DEFAULT;',
      'ALTER TABLE groups RENAME TO segments;',
      'ALTER TABLE groups RENAME COLUMN name TO title;',
      'ALTER TABLE broadcasts ALTER COLUMN ttl TYPE bigint;',
      'ALTER TABLE broadcasts ALTER ttl SET DATA TYPE bigint;',
      'ALTER TABLE broadcasts ALTER COLUMN icon SET NOT NULL;',
      'ALTER TABLE broadcasts ADD COLUMN owner text NOT NULL;',
      'ALTER TABLE broadcasts ADD COLUMN a integer NOT NULL DEFAULT 0, ADD COLUMN b text NOT NULL;',
      'ALTER TABLE groups ADD CONSTRAINT groups_name_key UNIQUE (name);',
      'ALTER TABLE groups ADD CHECK (length(name) < 10);',
      'CREATE UNIQUE INDEX groups_name ON groups (name);',
      'DELETE FROM jobs;',
      'TRUNCATE events;',
      'DROP INDEX jobs_ready_idx;',
    ]
    for (const sql of broken) expect(ruleBreaks(sql), sql).toHaveLength(1)
    const fine = [
      "ALTER TABLE broadcasts ADD COLUMN owner text NOT NULL DEFAULT 'x';",
      'ALTER TABLE broadcasts ADD COLUMN note text, ADD COLUMN n integer CHECK (n > 0);',
      'CREATE TABLE things (id text PRIMARY KEY, name text NOT NULL); CREATE UNIQUE INDEX things_name ON things (name);',
      "CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN DELETE FROM events; RETURN NULL; END $$;",
      'CREATE TRIGGER t AFTER TRUNCATE ON subscribers FOR EACH STATEMENT EXECUTE FUNCTION f();',
      "-- DROP TABLE groups;\nUPDATE webhooks SET disabled_reason = 'we DROP it; RENAME' WHERE status = 'disabled';",
      "INSERT INTO jobs (kind, payload) VALUES ('prune', '{}');",
    ]
    for (const sql of fine) expect(ruleBreaks(sql), sql).toEqual([])
  })

  it('every file in migrations/ keeps it, or is listed with why it was safe', () => {
    const migrations = readMigrations()
    expect(migrations.length).toBeGreaterThan(0)
    for (const migration of migrations) {
      const breaks = ruleBreaks(migration.sql)
      if (migration.name in ALLOWED) expect(breaks.length, `${migration.name} is allowed but keeps the rule: take it off the list`).toBeGreaterThan(0)
      else expect(breaks, `${migration.name} breaks the rule of docs/upgrades.md`).toEqual([])
    }
    for (const name of Object.keys(ALLOWED)) expect(migrations.map((m) => m.name)).toContain(name)
  })
})
