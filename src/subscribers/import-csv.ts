// The CSV form of an import (issue 23): a header line naming the columns, then
// one subscription a line, turned into the same object an NDJSON line is, so
// both are checked by the same rules. Each line is parsed by csv-parse (quoting
// and escaped quotes as RFC 4180 has them) after import-lines.ts has split and
// bounded it; a quoted field cannot span lines, which no subscription field
// needs. Cells holding a list or an object (group_ids, groups, tags) are JSON;
// an empty cell is an absent field. Columns Herald does not know (an export's
// source, last_seen_at) are ignored.
import { parse } from 'csv-parse/sync'
import { invalidField } from '../platform/errors.ts'
import { unneutraliseCell } from '../platform/csv.ts'

/** The columns read; p256dh and auth also as keys.p256dh and keys.auth, the names a flattening exporter gives. */
const KNOWN = new Set(['endpoint', 'p256dh', 'auth', 'keys.p256dh', 'keys.auth', 'external_id', 'group_ids', 'groups', 'tags', 'created_at', 'status', 'vapid_public'])
const JSON_COLUMNS = new Set(['group_ids', 'groups', 'tags'])

function cells(text: string): string[] {
  const records = parse(text, { relax_column_count: true, skip_empty_lines: true }) as string[][]
  if (records.length !== 1) throw new Error('is not one CSV record')
  return records[0]!
}

/** The header's column names; 400 naming `header` when it lacks endpoint or the keys. */
export function csvHeader(text: string): string[] {
  let names: string[]
  try {
    names = cells(text).map((name) => name.trim())
  } catch {
    throw invalidField('header', 'the first line must be a CSV header naming the columns')
  }
  const has = (a: string, b?: string) => names.includes(a) || (b !== undefined && names.includes(b))
  if (!has('endpoint') || !has('p256dh', 'keys.p256dh') || !has('auth', 'keys.auth')) {
    throw invalidField('header', 'the first line must name the columns endpoint, p256dh and auth (or keys.p256dh and keys.auth)')
  }
  return names
}

export function csvLine(columns: string[], text: string): { value: Record<string, unknown> } | { error: string; field: string } {
  let row: string[]
  try {
    row = cells(text)
  } catch (err) {
    return { field: '(line)', error: `is not a CSV record: ${(err as Error).message}` }
  }
  if (row.length > columns.length) return { field: '(line)', error: `has ${row.length} cells, the header ${columns.length}` }
  const value: Record<string, unknown> = {}
  const keys: Record<string, unknown> = {}
  for (let i = 0; i < row.length; i++) {
    const name = columns[i]!
    // An export neutralised cells a spreadsheet would run as formulas (platform/csv.ts): undone, so a file round-trips.
    const cell = unneutraliseCell(row[i]!)
    if (!KNOWN.has(name) || cell === '') continue
    if (name === 'p256dh' || name === 'keys.p256dh') keys.p256dh = cell
    else if (name === 'auth' || name === 'keys.auth') keys.auth = cell
    else if (JSON_COLUMNS.has(name)) {
      try {
        value[name] = JSON.parse(cell)
      } catch {
        return { field: name, error: 'must be JSON (a list like ["a","b"], or for tags an object like {"plan":"gold"})' }
      }
    } else if (name === 'created_at' && /^\d+$/.test(cell)) value[name] = Number(cell)
    else value[name] = cell
  }
  value.keys = keys
  return { value }
}
