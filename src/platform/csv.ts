// Writing CSV (issue 25): the one place that turns values into CSV text, for
// the subscriber export (issue 23) and the broadcast export. Reading stays
// with csv-parse (subscribers/import-csv.ts).
//
// Formula injection: a spreadsheet runs a cell that starts with =, +, -, @,
// a tab or a carriage return as a formula (OWASP "CSV Injection"). External
// ids, tags and notification titles come from outside (anonymous browsers,
// API callers), so every such text cell is neutralised by a leading
// apostrophe, which makes spreadsheets read it as text (OWASP's advice). A cell that
// already starts with apostrophes before such a character gets one more, so
// the rule can be undone exactly (unneutraliseCell, used by the import):
// exporting and importing again gives back the same value. Numbers written as
// numbers (counts, Unix ms) are never touched: -3 stays a number.

/** What a spreadsheet would read as the start of a formula, after any apostrophes the neutralising added. */
const FORMULA_START = /^'*[=+\-@\t\r]/

/** The text as a cell a spreadsheet shows as text: a leading ' when it could run as a formula. */
export function neutraliseCell(text: string): string {
  return FORMULA_START.test(text) ? `'${text}` : text
}

/** The reverse of neutraliseCell, for a cell read back from an export. */
export function unneutraliseCell(text: string): string {
  return text.startsWith("'") && FORMULA_START.test(text) ? text.slice(1) : text
}

/**
 * A machine value written as it is, never neutralised: keys and ids whose
 * alphabet cannot make a harmful formula (base64url, [A-Za-z0-9_-], https
 * URLs) but may start with "-". Prefixing them would corrupt them for any
 * other importer, and change what 0.2.0's subscriber export wrote.
 */
export class Verbatim {
  constructor(readonly text: string) {}
}
export const verbatim = (text: string): Verbatim => new Verbatim(text)

type Cell = string | number | boolean | null | Verbatim

/** One CSV cell: strings neutralised (not Verbatim ones), then quoted when they hold a comma, a quote or a line break (RFC 4180); null is empty. */
export function csvCell(value: Cell): string {
  if (value === null) return ''
  if (typeof value !== 'string' && !(value instanceof Verbatim)) return String(value)
  const text = value instanceof Verbatim ? value.text : neutraliseCell(value)
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

/** One CSV record and its line break (\n; RFC 4180's CRLF is not needed by any spreadsheet or csv-parse). */
export function csvRecord(cells: ReadonlyArray<Cell>): string {
  return `${cells.map(csvCell).join(',')}\n`
}
