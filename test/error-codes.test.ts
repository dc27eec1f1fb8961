// docs/errors.md is the one table of Herald's error codes: it must hold
// exactly the codes of src/platform/errors.ts with their statuses, and every
// route it names must list that status among its OpenAPI responses.
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ERRORS } from '../src/platform/errors.ts'
import { createTestApp, type TestApp } from './support/app.ts'

const TABLE = new URL('../docs/errors.md', import.meta.url)

interface Row {
  code: string
  status: number
  /** `METHOD /path` routes named in the last column, in OpenAPI's {param} form. */
  routes: string[]
}

/** The table's rows: lines that start with a code in backticks. */
function readTable(markdown: string): Row[] {
  return markdown.split('\n').filter((line) => /^\| `[a-z_]+` \|/.test(line)).map((line) => {
    const cells = line.split('|').slice(1, -1).map((cell) => cell.trim())
    const routes = [...(cells[3] ?? '').matchAll(/`(GET|POST|PUT|PATCH|DELETE) (\/[^`\s]*)`/g)]
      .map((m) => `${m[1]} ${m[2]!.replace(/:([a-z_]+)/g, '{$1}')}`)
    return { code: cells[0]!.replace(/`/g, ''), status: Number(cells[1]), routes }
  })
}

const rows = readTable(readFileSync(TABLE, 'utf8'))

describe('docs/errors.md and src/platform/errors.ts', () => {
  it('list the same codes, each once', () => {
    const documented = rows.map((row) => row.code)
    expect(documented.filter((code, i) => documented.indexOf(code) !== i), 'codes listed twice in docs/errors.md').toEqual([])
    expect(Object.keys(ERRORS).filter((code) => !documented.includes(code)),
      'codes in src/platform/errors.ts that docs/errors.md lacks: add a row for each').toEqual([])
    expect(documented.filter((code) => !(code in ERRORS)),
      'codes in docs/errors.md that src/platform/errors.ts does not have').toEqual([])
  })

  it('give each code the same status', () => {
    const differing = rows.filter((row) => row.code in ERRORS && ERRORS[row.code as keyof typeof ERRORS].status !== row.status)
      .map((row) => `${row.code}: docs ${row.status}, errors.ts ${ERRORS[row.code as keyof typeof ERRORS].status}`)
    expect(differing).toEqual([])
  })

  it('name at least one route or class of routes for every code', () => {
    const text = readFileSync(TABLE, 'utf8').split('\n').filter((line) => /^\| `[a-z_]+` \|/.test(line))
    expect(text.filter((line) => !(line.split('|')[4] ?? '').trim()).map((line) => line.slice(0, 40))).toEqual([])
  })
})

describe('docs/errors.md and /openapi.json', () => {
  let t: TestApp
  let paths: Record<string, Record<string, { responses?: Record<string, unknown>; requestBody?: unknown }>>
  beforeAll(async () => {
    t = await createTestApp()
    paths = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json().paths
  })
  afterAll(async () => {
    await t.close()
  })

  it('every route the table names exists and documents the status of the code', () => {
    expect(rows.flatMap((row) => row.routes).length).toBeGreaterThan(60)
    const problems = rows.flatMap((row) => row.routes.map((route) => {
      const [method, path] = route.split(' ') as [string, string]
      const op = paths[path]?.[method.toLowerCase()]
      if (!op) return `${row.code}: ${route} is not in /openapi.json`
      return String(row.status) in (op.responses ?? {}) ? null : `${row.code}: ${route} does not document ${row.status}`
    })).filter(Boolean)
    expect(problems).toEqual([])
  })

  it('every route that reads a body documents 400 invalid_request/invalid_json and 413 payload_too_large (but POST /v1/events, always 202)', () => {
    const lacking = Object.entries(paths).flatMap(([path, item]) => Object.entries(item)
      .filter(([method, op]) => op.requestBody && !(method === 'post' && path === '/v1/events'))
      .flatMap(([method, op]) => ['400', '413'].filter((status) => !(status in (op.responses ?? {})))
        .map((status) => `${method.toUpperCase()} ${path} lacks ${status}`)))
    expect(lacking).toEqual([])
  })
})
