// platform/csv.ts: cells a spreadsheet would run as formulas are neutralised,
// the neutralising can be undone exactly, and quoting follows RFC 4180 (read
// back by csv-parse, the reader the import uses).
import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { parse } from 'csv-parse/sync'
import { csvCell, csvRecord, neutraliseCell, unneutraliseCell } from './csv.ts'

const FORMULA = /^[=+\-@\t\r]/

describe('CSV cells', () => {
  it.each(['=HYPERLINK("http://evil.example","click")', '+1+1', '-2-3', '@SUM(A1)', '\t=1', '\r=1', "'=1"])('neutralises %j: the cell read back never starts a formula', (value) => {
    const [[read]] = parse(csvRecord([value]), {}) as string[][]
    expect(read).not.toMatch(FORMULA)
    expect(read.startsWith("'")).toBe(true)
    expect(unneutraliseCell(read!)).toBe(value)
  })

  it('leaves plain text and numbers alone: -3 as a number stays a number, "a=b" and "x-1" are not formulas', () => {
    expect(csvRecord([-3, 'a=b', 'x-1', null, true, 'plain'])).toBe('-3,a=b,x-1,,true,plain\n')
  })

  it('quotes commas, quotes and line breaks (RFC 4180) after neutralising', () => {
    expect(csvCell('=a,"b"\nc')).toBe(`"'=a,""b""\nc"`)
    expect(parse(csvRecord(['a,b', 'say "hi"', 'two\nlines']), {})).toEqual([['a,b', 'say "hi"', 'two\nlines']])
  })

  it('any text: the cell never starts a formula, and undoing the neutralising gives the text back', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (text) => {
      const cell = neutraliseCell(text)
      expect(cell).not.toMatch(FORMULA)
      expect(unneutraliseCell(cell)).toBe(text)
      const [[read]] = parse(csvRecord([text]), { relax_quotes: false }) as string[][]
      expect(read).toBe(cell === '' ? '' : cell)
    }))
  })
})
