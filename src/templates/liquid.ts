// The template engine (issue 24): LiquidJS in a sandbox. A template sees only
// the subscriber's variables (tags, external_id, locale) and the send's data;
// it cannot read a file (no include, render or layout: those tags are removed
// and the file system refuses every read), loop (no for, tablerow, cycle) or
// assign, and only the filters listed below exist. Parsing, rendering time and
// output are bounded besides, so a template that slips past the parse checks
// is still cut off (docs/templates.md "Limits").
import { Drop, Liquid, type Template } from 'liquidjs'

/** The tags a template may use: conditions and literal text. Every other tag is a parse error. */
const ALLOWED_TAGS = new Set(['if', 'unless', 'case', 'raw', 'comment'])

/**
 * The filters a template may use: text only, nothing that makes arrays or
 * dates. `default` is Herald's own (below); LiquidJS's would not see a
 * template default.
 */
const ALLOWED_FILTERS = new Set([
  'upcase', 'downcase', 'capitalize', 'strip', 'lstrip', 'rstrip', 'truncate', 'truncatewords',
  'url_encode', 'escape', 'append', 'prepend', 'replace', 'remove', 'plus', 'minus', 'round', 'size',
])

/** Characters of template text parsed in one call: a field's source is at most 2048, a whole template a few times that. */
export const PARSE_LIMIT = 20_000
/** Milliseconds one field's render may take. A render takes microseconds; this only stops a runaway. */
export const RENDER_LIMIT_MS = 50
/** LiquidJS's count of created values (strings joined, arrays made) in one render: far above any field, far below a megabyte. */
export const MEMORY_LIMIT = 100_000

/**
 * A variable the subscriber has no value for. It prints as the template's
 * default for it ('' when none), and the default filter replaces it, so a
 * filter's default wins over the template's, which wins over empty. Printing
 * one without any default notes its path as unresolved (the missing policy).
 */
export class MissingValue extends Drop {
  constructor(
    readonly path: string,
    readonly fallback: string | undefined,
    private readonly unresolved: Set<string>,
  ) {
    super()
  }

  /** null without a default: prints as nothing, and is false in a condition ('' would be true in Liquid). */
  valueOf(): string | null {
    if (this.fallback === undefined) this.unresolved.add(this.path)
    return this.fallback ?? null
  }

  toString(): string {
    return this.valueOf() ?? ''
  }
}

function isEmpty(value: unknown): boolean {
  return value === undefined || value === null || value === '' || value === false
}

function createEngine(): Liquid {
  const engine = new Liquid({
    // No file system: a template has no include, render or layout tags, and every read is refused anyway.
    fs: {
      exists: async () => false,
      existsSync: () => false,
      readFile: async () => { throw new Error('templates cannot read files') },
      readFileSync: () => { throw new Error('templates cannot read files') },
      resolve: () => { throw new Error('templates cannot read files') },
    },
    relativeReference: false,
    strictFilters: true,
    strictVariables: false,
    ownPropertyOnly: true,
    parseLimit: PARSE_LIMIT,
    renderLimit: RENDER_LIMIT_MS,
    memoryLimit: MEMORY_LIMIT,
    cache: false,
  })
  for (const name of Object.keys(engine.tags)) if (!ALLOWED_TAGS.has(name)) delete engine.tags[name]
  for (const name of Object.keys(engine.filters)) if (!ALLOWED_FILTERS.has(name)) delete engine.filters[name]
  engine.registerFilter('default', (value: unknown, fallback: unknown = '') => {
    if (value instanceof MissingValue || isEmpty(value)) return fallback
    return value
  })
  return engine
}

const engine = createEngine()

/** Whether a text holds Liquid markup at all: text without it is sent as it is, with no engine involved. */
export function hasMarkup(text: string): boolean {
  return text.includes('{{') || text.includes('{%')
}

/** Parses a field's source; throws a LiquidError (its message names the tag or filter) when the sandbox refuses it. */
export function parseTemplate(source: string): Template[] {
  return engine.parse(source)
}

/** The variables a parsed template reads, as dotted paths ("tags.first_name"); null for a path Herald cannot name (an index like tags[data.key]). */
export function variablePaths(template: Template[]): Array<string | null> {
  return engine.globalVariableSegmentsSync(template).map((segments) =>
    segments.every((s) => typeof s === 'string') ? segments.join('.') : null,
  )
}

/** Renders a parsed template with a scope; throws when it runs over the time or memory limit. */
export function renderTemplate(template: Template[], scope: object): string {
  return String(engine.renderSync(template, scope))
}
