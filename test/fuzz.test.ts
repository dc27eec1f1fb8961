// Property-based fuzzing of every operation in the live /openapi.json
// (issue 15 §3). Each request is built from the operation's own schemas, with
// boundary and hostile values mixed in (test/support/hostile-values.ts), with
// valid credentials or without, and must:
//   - never answer 5xx;
//   - answer every 4xx with the error body of decisions.md §1, and `issues`
//     on invalid_request;
//   - change nothing in the database when it is refused (every table's row
//     count and checksum, before and after);
//   - on POST /v1/events, answer 202 { ok: true } whatever it is sent.
// The seed is printed; HERALD_FUZZ_SEED=<seed> replays a run, and a failure
// prints the seed and the counterexample. HERALD_FUZZ_RUNS sets the runs per
// operation (default below, sized to stay well under a minute per storage mode).
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import fc from 'fast-check'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from './support/app.ts'
import { changedTables, fingerprinter, incrementalFingerprinter, type Fingerprint } from './support/db-fingerprint.ts'
import { rawUrlToken, valueFor, type JsonSchema } from './support/hostile-values.ts'
import type { RouteIds } from './support/routes.ts'
import { fcmEndpoint, pushKeys, subscription } from '../src/subscribers/subscribers.fixtures.ts'

const SEED = Number(process.env.HERALD_FUZZ_SEED ?? Date.now() % 2_147_483_647)
// 40 runs × 63 operations: ~30 s on the embedded database on a quiet 2-core machine,
// ~40 s inside the whole suite in CI (60 took 44 s and 57 s; 63 operations since issues 12 and 13).
// Three quarters of that was the database fingerprint after each request; with
// incrementalFingerprinter (only the tables written to are summed again) the file
// takes half the CPU: 27.3 s -> 13.6 s for 71 operations, seed 12345 (docs/testing.md).
const RUNS = Number(process.env.HERALD_FUZZ_RUNS ?? 40)

interface Parameter { in: 'path' | 'query' | 'header'; name: string; schema: JsonSchema }
interface Operation {
  method: string
  path: string
  parameters: Parameter[]
  body: JsonSchema | null
  security: string | null
}

/** The project's ids (as the security sweep has them), and the other project the operator routes act on. */
interface Ids extends Omit<RouteIds, 'apiKeyId'> {
  otherProject: string
  otherKeyId: string
}

/** The app under test; its own /openapi.json lists the operations, so a route added later is fuzzed without a change here. */
const t: TestApp = await createTestApp({ HERALD_ALLOW_PRIVATE_ENDPOINTS: 'false' })
const operations: Operation[] = readOperations((await t.app.inject({ method: 'GET', url: '/openapi.json' })).json())
let a: TestProject
let other: TestProject
/** Fresh for each operation: an earlier one may have deleted them. */
let ids: Ids
const keys = pushKeys()
let fingerprint: () => Promise<Fingerprint>
/** The database as the last request left it: the "before" of the next one. */
let current: Fingerprint

function readOperations(document: { paths: Record<string, Record<string, Record<string, unknown>>> }): Operation[] {
  const found: Operation[] = []
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const content = (op.requestBody as { content?: Record<string, { schema: JsonSchema }> } | undefined)?.content
      const security = (op.security as Array<Record<string, unknown>> | undefined)?.[0]
      found.push({
        method: method.toUpperCase(),
        path,
        parameters: (op.parameters as Parameter[] | undefined) ?? [],
        body: content?.['application/json']?.schema ?? null,
        security: security ? Object.keys(security)[0] : null,
      })
    }
  }
  return found
}

beforeAll(async () => {
  console.log(`fuzz: seed ${SEED} (HERALD_FUZZ_SEED=${SEED} replays it), ${RUNS} runs per operation, ${operations.length} operations`)
  // Far above what the fuzzer sends, so 429 does not hide the routes behind it.
  a = await t.project({ plan: 'max', limits: { requests_per_minute: 1_000_000 } })
  other = await t.project({ plan: 'free' })
  // The whole database after every request, recomputing only the tables a statement wrote to.
  fingerprint = await incrementalFingerprinter(t.ctx.db)
})
afterAll(async () => {
  if (process.env.HERALD_FUZZ_STATS) {
    for (const [key, seen] of statuses) console.log(key.padEnd(52), [...seen].sort().map(([outcome, n]) => `${outcome} ×${n}`).join(', '))
  }
  await t.close()
})

async function populate(project: TestProject, other: TestProject): Promise<Ids> {
  const ok = async (options: InjectOptions) => {
    const res = await t.app.inject(options)
    if (res.statusCode >= 300) throw new Error(`setup ${options.method} ${options.url}: ${res.statusCode} ${res.body}`)
    return res.json()
  }
  const group = (await ok({ method: 'POST', url: '/v1/groups', headers: project.auth, payload: { name: `Fans ${randomUUID()}` } })).id
  const body = subscription({ external_id: 'user-1', group_ids: [group] })
  const subscriber = (await ok({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: body })).id
  const broadcast = (await ok({
    method: 'POST',
    url: '/v1/send',
    headers: project.auth,
    payload: { target: { type: 'all' }, notification: { title: 'Later', body: 'Soon' }, scheduled_at: Date.now() + 86_400_000 },
  })).broadcast_id
  // A project may have 10 webhooks: make room for the fixture (and for the fuzzer's own).
  for (const existing of (await ok({ method: 'GET', url: '/v1/webhooks?limit=100', headers: project.auth })).webhooks) {
    await ok({ method: 'DELETE', url: `/v1/webhooks/${existing.id}`, headers: project.auth })
  }
  const webhook = (await ok({ method: 'POST', url: '/v1/webhooks', headers: project.auth, payload: { url: 'https://93.184.215.14/hook' } })).id
  // POST /v1/webhooks/:id/test really sends: point the fixture at a name that never resolves
  // (RFC 2606 .invalid), so the fuzzer's test events reach no one, on a machine with a network too.
  await t.database.db.query(`UPDATE webhooks SET url = 'https://fuzz.invalid/hook' WHERE id = $1`, [webhook])
  // A key the fuzzer may revoke (DELETE /v1/api-keys/:id), never the one it uses.
  const spareApiKeyId = (await ok({ method: 'POST', url: '/v1/api-keys', headers: project.auth, payload: { name: 'spare' } })).id
  return {
    project: project.id,
    spareApiKeyId,
    otherProject: other.id,
    otherKeyId: other.apiKeyId,
    group,
    subscriber,
    endpoint: body.endpoint as string,
    externalId: 'user-1',
    broadcast,
    webhook,
  }
}

/** Real values for a field or parameter, so requests get past the look-ups and the checks a schema cannot say. */
function known(op: Operation) {
  return (name: string | null): string[] | null => {
    switch (name) {
      case 'group_id': case 'group_ids': return [ids.group]
      case 'sid': case 'subscriber_id': case 'subscriber_ids': return [ids.subscriber]
      case 'broadcast_id': return [ids.broadcast]
      case 'external_id': return [ids.externalId]
      case 'endpoint': return op.path === '/v1/subscribe' ? [fcmEndpoint()] : [ids.endpoint]
      case 'p256dh': return [keys.p256dh]
      case 'auth': return [keys.auth]
      case 'url': return op.path === '/v1/webhooks' ? ['https://93.184.215.14/fuzz'] : ['/welcome', 'https://shop.example.com/sale']
      case 'icon': case 'image': case 'default_icon': return ['https://cdn.example.com/fuzz.png']
      case 'key_id': return [ids.otherKeyId]
      case 'project': return [ids.project]
      case 'id':
        // Operator routes act on the other project, so the fuzzer cannot lock out the one it uses.
        if (op.path.startsWith('/admin/')) return [ids.otherProject]
        if (op.path.startsWith('/v1/groups')) return [ids.group]
        if (op.path.startsWith('/v1/broadcasts')) return [ids.broadcast]
        if (op.path.startsWith('/v1/webhooks')) return [ids.webhook]
        if (op.path.startsWith('/v1/api-keys')) return [ids.spareApiKeyId]
        return null
      default: return null
    }
  }
}

function encode(value: unknown): string {
  try {
    return encodeURIComponent(typeof value === 'string' ? value : JSON.stringify(value) ?? '')
  } catch {
    return '%ED%B0%80' // a lone surrogate cannot be encoded as UTF-8: send the bytes it would have been
  }
}

/** A URL component: a real id or a value the schema accepts; when hostile, also a raw, possibly broken, encoding. */
function urlValue(op: Operation, name: string, schema: JsonSchema, hostile: boolean): fc.Arbitrary<string> {
  const real = known(op)(name)
  const fitting = valueFor(schema, { known: known(op), hostile }, name).map(encode)
  const choices = [...(real ? [fc.constantFrom(...real)] : []), fitting]
  return hostile ? fc.oneof(...choices, rawUrlToken()) : fc.oneof(...choices)
}

type Auth = 'valid' | 'none' | 'wrong'

interface RawBody { payload: string | Buffer; type: string | undefined }

const RAW_BODIES: RawBody[] = [
  ...['null', '[]', '"text"', '123', 'true', '{', '{"a":', '', ' ', '{"a":"\\u0000"}', '{"\\u0000":1}', '"\\ud800"',
    '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', '['.repeat(20_000) + ']'.repeat(20_000)]
    .map((payload) => ({ payload, type: 'application/json' })),
  { payload: Buffer.from([0xff, 0xfe, 0x00, 0x7b]), type: 'application/json' },
  { payload: '{"type":"clicked"}', type: 'text/plain' },
  { payload: 'a=b', type: 'application/x-www-form-urlencoded' },
  { payload: '{}', type: 'application/json; charset=latin1' },
  { payload: '--x--', type: 'multipart/form-data; boundary=x' },
  { payload: '{}', type: undefined },
]

interface FuzzRequest { options: InjectOptions; auth: Auth; body: unknown }

/**
 * Requests for one operation. A third are well-formed throughout (valid
 * credentials, every value fitting its schema), so the service and the
 * database are reached; the rest mix hostile values into every part.
 */
function requestFor(op: Operation): fc.Arbitrary<FuzzRequest> {
  return fc.oneof({ weight: 1, arbitrary: requestOfKind(op, false) }, { weight: 2, arbitrary: requestOfKind(op, true) })
}

function requestOfKind(op: Operation, hostile: boolean): fc.Arbitrary<FuzzRequest> {
  const pathParams = op.parameters.filter((p) => p.in === 'path')
  const queryParams = op.parameters.filter((p) => p.in === 'query')
  const headerParams = op.parameters.filter((p) => p.in === 'header')

  const path = fc.record(Object.fromEntries(pathParams.map((p) => [p.name, urlValue(op, p.name, p.schema, hostile)])))
  const query = fc.record(Object.fromEntries(queryParams.map((p) => {
    const value = urlValue(op, p.name, p.schema, hostile)
    // A repeated parameter arrives as an array.
    const values = hostile ? fc.array(value, { minLength: 1, maxLength: 2 }) : value.map((v) => [v])
    return [p.name, p.name === 'project' && !hostile ? values : fc.option(values, { freq: 3 })]
  })))
  const headers = fc.record(Object.fromEntries(headerParams.map((p) => {
    const fitting = fc.constantFrom(...(p.schema.enum as string[] | undefined) ?? [ids.project])
    return [p.name, fc.option(hostile ? fc.oneof(fitting, fc.constantFrom('', 'x'.repeat(300), 'évil', 'prj_x')) : fitting, { freq: 2 })]
  })))
  const json = op.body ? valueFor(op.body, { known: known(op), hostile }) : fc.constant(undefined)
  const chosenBody = json.map((value): { value: unknown; raw: RawBody | null } => ({ value, raw: null }))
  const body = hostile
    ? fc.oneof({ weight: 4, arbitrary: chosenBody }, { weight: 1, arbitrary: fc.constantFrom(...RAW_BODIES).map((raw) => ({ value: raw.payload, raw })) })
    : chosenBody
  const auth = hostile ? fc.constantFrom<Auth>('valid', 'valid', 'none', 'wrong') : fc.constant<Auth>('valid')

  return fc.tuple(path, query, headers, body, auth).map(([pathValues, queryValues, headerValues, chosen, authMode]) => {
    const url = op.path.replace(/\{(\w+)\}/g, (_, name: string) => pathValues[name] as string)
    const search = Object.entries(queryValues)
      .flatMap(([name, values]) => ((values as string[] | null) ?? []).map((value) => `${name}=${value}`))
      .join('&')
    const requestHeaders: Record<string, string> = {}
    for (const [name, value] of Object.entries(headerValues)) if (typeof value === 'string') requestHeaders[name] = value
    Object.assign(requestHeaders, authHeaders(op, authMode))
    let payload: string | Buffer | undefined
    if (chosen.raw) {
      payload = chosen.raw.payload
      if (chosen.raw.type) requestHeaders['content-type'] = chosen.raw.type
    } else if (chosen.value !== undefined) {
      payload = JSON.stringify(chosen.value)
      requestHeaders['content-type'] = 'application/json'
    }
    const options: InjectOptions = {
      method: op.method as InjectOptions['method'],
      url: search ? `${url}?${search}` : url,
      headers: requestHeaders,
      ...(payload !== undefined ? { payload } : {}),
    }
    return { options, auth: authMode, body: chosen.value }
  })
}

function authHeaders(op: Operation, mode: Auth): Record<string, string> {
  if (mode === 'none' || op.security === null) return {}
  const secret = op.security === 'adminToken' ? ADMIN_TOKEN : a.apiKey
  return { authorization: mode === 'valid' ? `Bearer ${secret}` : `Bearer ${secret.slice(0, -2)}xx` }
}

function describeRequest(request: FuzzRequest, res: LightMyRequestResponse): string {
  const payload = request.options.payload
  const shown = typeof payload === 'string' ? payload.slice(0, 300) : payload ? `<${(payload as Buffer).length} bytes>` : '(none)'
  return `${request.options.method} ${String(request.options.url).slice(0, 300)} auth=${request.auth} body=${shown} → ${res.statusCode} ${res.body.slice(0, 300)}`
}

function expectErrorBody(res: LightMyRequestResponse, what: string): void {
  let body: { error?: { code?: unknown; message?: unknown; issues?: unknown; stack?: unknown } }
  try {
    body = res.json()
  } catch {
    throw new Error(`not JSON: ${what}`)
  }
  const error = body.error
  expect(typeof error?.code, what).toBe('string')
  expect(typeof error?.message, what).toBe('string')
  expect(error?.stack, what).toBeUndefined()
  if (error?.code === 'invalid_request') {
    expect(Array.isArray(error.issues) && error.issues.length > 0, `invalid_request without issues: ${what}`).toBe(true)
    for (const issue of error.issues as Array<{ path?: unknown; message?: unknown }>) {
      expect(typeof issue.path === 'string' && typeof issue.message === 'string', what).toBe(true)
    }
  }
}

/** A beacon that may really be recorded: the only events request allowed to change the database. */
function isGenuineBeacon(request: FuzzRequest): boolean {
  const body = request.body as { type?: unknown; broadcast_id?: unknown } | null
  return String(request.options.url).includes(`project=${ids.project}`) &&
    typeof body === 'object' && body !== null && body.broadcast_id === ids.broadcast &&
    (body.type === 'clicked' || body.type === 'dismissed' || body.type === 'shown')
}

/** Statuses seen per operation, printed with HERALD_FUZZ_STATS=1 to see how deep the requests get. */
const statuses = new Map<string, Map<string, number>>()

function count(op: Operation, res: LightMyRequestResponse): void {
  const key = `${op.method} ${op.path}`
  let code: string | undefined
  try {
    code = res.statusCode >= 400 ? (res.json() as { error?: { code?: string } }).error?.code : undefined
  } catch {
    code = '(not JSON)'
  }
  const outcome = `${res.statusCode}${code ? ` ${code}` : ''}`
  const seen = statuses.get(key) ?? new Map<string, number>()
  seen.set(outcome, (seen.get(outcome) ?? 0) + 1)
  statuses.set(key, seen)
}

async function check(op: Operation, request: FuzzRequest): Promise<void> {
  const before = current
  const res = await t.app.inject(request.options)
  if (process.env.HERALD_FUZZ_STATS) count(op, res)
  const after = await fingerprint()
  current = after
  const what = describeRequest(request, res)
  expect(res.statusCode, what).toBeLessThan(500)
  if (op.path === '/v1/events') {
    expect(res.statusCode, what).toBe(202)
    expect(res.json(), what).toEqual({ ok: true })
    if (!isGenuineBeacon(request)) expect(changedTables(before, after), `a dropped beacon changed the database: ${what}`).toEqual([])
    return
  }
  if (res.statusCode >= 400) {
    expectErrorBody(res, what)
    expect(changedTables(before, after), `a refused request changed the database: ${what}`).toEqual([])
  }
}

describe('fuzzing every operation of /openapi.json', () => {
  it('finds the operations', () => {
    expect(operations.length).toBeGreaterThan(30)
  })

  for (const op of operations) {
    it(`${op.method} ${op.path}`, async () => {
      ids = await populate(a, other)
      current = await fingerprint()
      await fc.assert(fc.asyncProperty(requestFor(op), (request) => check(op, request)), { seed: SEED, numRuns: RUNS })
    })
  }

  it('the fingerprint taken after each request is the whole database\'s, and sees a write', async () => {
    const full = await fingerprinter(t.ctx.db)
    expect(await fingerprint()).toEqual(await full())
    ids = await populate(a, other)
    const before = await fingerprint()
    await t.ctx.db.query("UPDATE groups SET name = name || ' (fuzzed)' WHERE id = $1", [ids.group])
    const after = await fingerprint()
    expect(changedTables(before, after)).toEqual(['groups'])
    expect(after).toEqual(await full())
  })
})
