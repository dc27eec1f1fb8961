// fast-check arbitraries for the fuzz test (test/fuzz.test.ts): values shaped
// by an operation's JSON schema from /openapi.json, mixed with boundary and
// hostile ones (NUL, lone UTF-16 surrogates, huge and negative numbers, wrong
// types, null, empty and very long strings, deep nesting, unknown fields).
import fc from 'fast-check'

export type JsonSchema = {
  type?: string | string[]
  enum?: unknown[]
  const?: unknown
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  items?: JsonSchema
  minLength?: number
  maxLength?: number
  minItems?: number
  maxItems?: number
  minimum?: number
  maximum?: number
  pattern?: string
  format?: string
}

/** Strings PostgreSQL cannot store (NUL) or that are not Unicode (lone surrogates), and other edge cases. */
export const HOSTILE_STRINGS: string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u00e9\udc00',
  '\ud800',
  'x\udbff',
  '\udfff\ud800',
  'x'.repeat(10_000),
  '🙂'.repeat(300),
  '\u202e\u200b\ufeff',
  '%ff',
  '../../etc/passwd',
  "' OR 1=1 --",
  '1e400',
  '-1',
  'null',
  'prj_00000000000000000000000000',
  'https://fcm.googleapis.com:22/fcm/send/x',
  'https://127.0.0.1/x',
  'data:image/png;base64,AAAA',
]

/** Arrays nested far past any schema (the fuzz test's raw bodies go deeper still, as text). */
const DEEP = JSON.parse('['.repeat(500) + ']'.repeat(500)) as unknown

export const HOSTILE_VALUES: unknown[] = [
  null,
  true,
  0,
  -1,
  1.5,
  -(2 ** 63),
  2 ** 63,
  Number.MAX_SAFE_INTEGER + 2,
  1e308,
  -1e308,
  [],
  [null],
  {},
  { '\u0000': 1 },
  { 'k\udc00': 'v' },
  { __proto__x: 1, constructor: { prototype: {} } },
  DEEP,
  ...HOSTILE_STRINGS,
]

export const hostileValue = (): fc.Arbitrary<unknown> => fc.constantFrom(...HOSTILE_VALUES)

/** Strings as they go into a URL (path segment or query value): already percent-encoded, some of them badly. */
export const RAW_URL_TOKENS: string[] = [
  '',
  '%00',
  'x%00',
  'prj_%00',
  '%ff',
  '%ED%A0%80',
  '%ED%B0%80',
  '%C0%80',
  '%',
  '%zz',
  '%2F',
  '..',
  '%2e%2e',
  '-1',
  '0',
  '1.5',
  '1e400',
  '99999999999999999999',
  'NaN',
  'null',
  'true',
  '%F0%9F%99%82',
  'a'.repeat(2_000),
]

export const rawUrlToken = (): fc.Arbitrary<string> =>
  fc.oneof(fc.constantFrom(...RAW_URL_TOKENS), fc.string({ maxLength: 20 }).map(encodeURIComponent))

export interface SchemaOptions {
  /** Values for a string field by property name, e.g. real ids of the project under test. */
  known?: (name: string | null) => string[] | null
  /**
   * true: any field may get a hostile value and objects an unknown field.
   * false: every value fits the schema, so whole requests get past validation
   * to the service and the database.
   */
  hostile: boolean
}

/** A value for the schema: one that fits, or (when hostile) sometimes a hostile one. */
export function valueFor(schema: JsonSchema, options: SchemaOptions, name: string | null = null, depth = 0): fc.Arbitrary<unknown> {
  if (!options.hostile) return fitting(schema, options, name, depth)
  return fc.oneof(
    { weight: 4, arbitrary: fitting(schema, options, name, depth) },
    { weight: 1, arbitrary: hostileValue() },
  )
}

function fitting(schema: JsonSchema, options: SchemaOptions, name: string | null, depth: number): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...schema.enum)
  if ('const' in schema) return fc.constant(schema.const)
  const branches = schema.anyOf ?? schema.oneOf
  if (branches && !schema.properties) return fc.oneof(...branches.map((branch) => fitting(branch, options, name, depth)))
  if (branches && schema.properties) return fc.oneof(...branches.map((branch) => fitting(mergeBranch(schema, branch), options, name, depth)))
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type) {
    case 'object':
      return objectFor(schema, options, depth)
    case 'array': {
      const items = schema.items ?? {}
      const maxLength = Math.min(schema.maxItems ?? 4, 4)
      return fc.array(valueFor(items, options, name, depth + 1), {
        minLength: Math.min(schema.minItems ?? 0, maxLength),
        maxLength,
      })
    }
    case 'string':
      return stringFor(schema, options, name)
    case 'integer':
      return fc.integer({ min: Math.max(schema.minimum ?? -1_000, -(2 ** 31)), max: Math.min(schema.maximum ?? 1_000_000, 2 ** 31) })
    case 'number': {
      const integers = fc.integer({ min: Math.max(schema.minimum ?? -1_000, -(2 ** 31)), max: Math.min(schema.maximum ?? 1_000_000, 2 ** 31) })
      // A time an hour ahead, where the schema allows it (scheduled_at).
      const soon = Date.now() + 3_600_000
      return soon <= (schema.maximum ?? Infinity) ? fc.oneof(integers, fc.constant(soon)) : integers
    }
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    default:
      return hostileValue()
  }
}

/** A oneOf branch read together with the properties its parent declares (send's discriminated target). */
function mergeBranch(parent: JsonSchema, branch: JsonSchema): JsonSchema {
  return { ...branch, properties: { ...parent.properties, ...branch.properties }, required: branch.required ?? parent.required }
}

function objectFor(schema: JsonSchema, options: SchemaOptions, depth: number): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {}
  const fields: Record<string, fc.Arbitrary<unknown>> = {}
  for (const [key, property] of Object.entries(properties)) fields[key] = valueFor(property, options, key, depth + 1)
  const record = fc.record(fields, { requiredKeys: schema.required ?? [] })
  if (!options.hostile) return record
  // Sometimes a field the schema does not know.
  return fc.tuple(record, fc.option(fc.tuple(fc.constantFrom('unknown', 'a\u0000', '__proto__', ''), hostileValue()), { freq: 5 }))
    .map(([value, extra]) => (extra ? { ...(value as object), [extra[0]]: extra[1] } : value))
}

function stringFor(schema: JsonSchema, options: SchemaOptions, name: string | null): fc.Arbitrary<string> {
  const known = options.known?.(name)
  const shaped = (schema.pattern ? matching(schema) : null) ??
    (schema.format === 'uri' || /url/i.test(name ?? '')
      ? fc.constantFrom('https://fcm.googleapis.com/fcm/send/fuzz', 'https://hooks.example.com/fuzz', '/welcome')
      : fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 40, 40) }))
  return known && known.length > 0 ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...known) }, { weight: 1, arbitrary: shaped }) : shaped
}

/** Strings the schema's pattern accepts; null when fast-check cannot read the pattern (lookahead). */
function matching(schema: JsonSchema): fc.Arbitrary<string> | null {
  try {
    return fc.stringMatching(new RegExp(schema.pattern!)).filter((s) => s.length <= (schema.maxLength ?? 256) && s.length >= (schema.minLength ?? 0))
  } catch {
    return null
  }
}
