// What an owner sees and steers of a webhook endpoint (issue 11), end to end
// against a receiver on localhost: the delivery log, the status and why,
// PATCH, test events and secret rotation.
import { createHmac, timingSafeEqual } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { send, sleep, waitForBroadcast } from '../../test/support/delivery.ts'
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../../test/support/webhook-receiver.ts'
import { newId } from '../platform/ids.ts'
import { describeNetworkError } from './attempt-error.ts'
import { describeDuration } from './webhook-failures.ts'
import { insertAttempt, pruneAttempts } from './webhook-attempts.store.ts'
import { enqueueDeliveriesForEvents } from './webhook-deliveries.store.ts'
import { TEST_EVENTS_PER_MINUTE } from './test-event.ts'
import { newWebhookSecret } from './webhooks.service.ts'

let t: TestApp
/** HERALD_ALLOW_PRIVATE_ENDPOINTS=false: the production address rules. */
let strict: TestApp
let receiver: WebhookReceiver
let project: TestProject
let broadcastId: string
let paths = 0

/** A port nothing listens on (the first privileged port): connection refused. */
const REFUSED_URL = 'http://127.0.0.1:1/hook'

beforeAll(async () => {
  receiver = await startWebhookReceiver()
  t = await createTestApp(
    { HERALD_ENCRYPT_THREADS: '0', HERALD_WEBHOOK_RETRY_BASE_MS: '5', HERALD_SCHEDULER_INTERVAL_MS: '50' },
    { worker: true },
  )
  strict = await createTestApp({ HERALD_ALLOW_PRIVATE_ENDPOINTS: 'false' })
})
afterAll(async () => {
  await t?.close()
  await strict?.close()
  await receiver?.close()
})
beforeEach(async () => {
  project = await t.project({ plan: 'plus' })
  // A broadcast to nobody: beacons against it make events without fan-out.
  broadcastId = await send(t, project, { target: { type: 'user', external_id: 'nobody' }, notification: { title: 'Hi', body: 'There' } })
  await waitForBroadcast(t, project, broadcastId)
})

interface Hook {
  path: string
  id: string
  secret: string
}

async function register(url?: string, p: TestProject = project): Promise<Hook> {
  const path = `/hook-${++paths}`
  const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: p.auth, payload: { url: url ?? receiver.url + path } })
  expect(res.statusCode).toBe(201)
  return { path, id: res.json().id, secret: res.json().secret }
}

async function click(): Promise<void> {
  const res = await t.app.inject({ method: 'POST', url: `/v1/events?project=${project.id}`, payload: { type: 'clicked', broadcast_id: broadcastId } })
  expect(res.statusCode).toBe(202)
}

function api(method: 'GET' | 'PATCH' | 'POST', url: string, payload?: object, app: TestApp = t, p: TestProject = project) {
  return app.app.inject({ method, url, headers: p.auth, payload })
}

interface Attempt {
  id: string
  event_id: string
  event_type: string
  attempt: number
  outcome: string
  response_status: number | null
  error: string | null
  duration_ms: number
  attempted_at: number
  next_attempt_at: number | null
}

async function log(id: string, query = ''): Promise<{ deliveries: Attempt[]; next_cursor: string | null }> {
  const res = await api('GET', `/v1/webhooks/${id}/deliveries${query}`)
  expect(res.statusCode).toBe(200)
  return res.json()
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const start = Date.now()
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() - start > timeoutMs) throw new Error(`condition not reached: ${JSON.stringify(value)}`)
    await sleep(20)
  }
}

/** The customer's check, as docs/webhooks.md shows it: true when any signature of the header verifies with `secret`. */
function verifies(secret: string, hook: ReceivedWebhook): boolean {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
  const expected = createHmac('sha256', key).update(`${hook.headers['webhook-id']}.${hook.headers['webhook-timestamp']}.${hook.body}`).digest()
  return hook.headers['webhook-signature'].split(' ').some((candidate) => {
    const given = Buffer.from(candidate.replace(/^v1,/, ''), 'base64')
    return given.length === expected.length && timingSafeEqual(given, expected)
  })
}

describe('GET /v1/webhooks/:id/deliveries', () => {
  it("lists a failing endpoint's attempts newest first: status, retry time, then the success", async () => {
    const hook = await register()
    receiver.fail(hook.path, { status: 500 }, 2)
    await click()
    const got = await receiver.waitFor(hook.path, 3)
    const { deliveries, next_cursor } = await until(() => log(hook.id), (l) => l.deliveries.length === 3)
    expect(next_cursor).toBeNull()
    const eventId = got[0].headers['webhook-id']
    expect(deliveries.map((d) => [d.attempt, d.outcome, d.response_status, d.error])).toEqual([
      [3, 'delivered', 200, null],
      [2, 'retrying', 500, null],
      [1, 'retrying', 500, null],
    ])
    for (const d of deliveries) {
      expect(d).toMatchObject({ event_id: eventId, event_type: 'clicked', id: expect.stringMatching(/^\d+$/) })
      expect(d.duration_ms).toBeGreaterThanOrEqual(0)
      expect(Math.abs(d.attempted_at - Date.now())).toBeLessThan(60_000)
    }
    expect(deliveries[0].next_attempt_at).toBeNull()
    // Each retry was scheduled after its failure, and happened no earlier.
    for (const [failure, retry] of [[deliveries[2], deliveries[1]], [deliveries[1], deliveries[0]]]) {
      expect(failure.next_attempt_at).toBeGreaterThan(failure.attempted_at)
      expect(retry.attempted_at).toBeGreaterThanOrEqual(failure.next_attempt_at! - 5)
    }
  })

  it('says what went wrong without an answer, in a short safe phrase, and when the delivery is given up', async () => {
    const refused = await register(REFUSED_URL)
    const rejected = await register()
    receiver.fail(rejected.path, { status: 400 })
    await click()
    const [first] = (await until(() => log(refused.id), (l) => l.deliveries.length >= 1)).deliveries.slice(-1)
    expect(first).toMatchObject({ attempt: 1, outcome: 'retrying', response_status: null, error: 'connection refused (ECONNREFUSED)' })
    expect(first.next_attempt_at).toBeGreaterThan(first.attempted_at)
    // A 4xx is tried 3 times, then given up: the last attempt says failed, with no next one.
    const { deliveries } = await until(() => log(rejected.id), (l) => l.deliveries.length === 3)
    expect(deliveries.map((d) => [d.attempt, d.outcome, d.response_status])).toEqual([
      [3, 'failed', 400],
      [2, 'retrying', 400],
      [1, 'retrying', 400],
    ])
    expect(deliveries[0].next_attempt_at).toBeNull()
    await t.app.inject({ method: 'DELETE', url: `/v1/webhooks/${refused.id}`, headers: project.auth })
  })

  it('pages with limit and cursor, newest first, and refuses a malformed cursor', async () => {
    const hook = await register('https://hooks.example.com/paged')
    // Ids that cross a digit (9-13, or 99-103 after earlier tests' attempts), so an order by their text would show.
    const { rows } = await t.ctx.db.query<{ max: string | null }>(`SELECT max(id)::text AS max FROM webhook_attempts`)
    let power = 10
    while (power - 1 <= Number(rows[0].max ?? 0)) power *= 10
    await t.ctx.db.query(`SELECT setval(pg_get_serial_sequence('webhook_attempts', 'id'), $1)`, [power - 2])
    for (let i = 1; i <= 5; i++) {
      await insertAttempt(t.ctx.db, {
        webhook_id: hook.id,
        event_id: `evt_${i}`,
        event_type: 'delivered',
        attempt: 1,
        outcome: 'delivered',
        response_status: 200,
        error: null,
        duration_ms: i,
      })
    }
    const pages: string[][] = []
    let cursor: string | null = null
    do {
      const page = await log(hook.id, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      pages.push(page.deliveries.map((d) => d.event_id))
      cursor = page.next_cursor
    } while (cursor)
    expect(pages).toEqual([['evt_5', 'evt_4'], ['evt_3', 'evt_2'], ['evt_1']])
    for (const bad of ['?cursor=abc', '?cursor=-1', '?limit=0', '?limit=101']) {
      const res = await api('GET', `/v1/webhooks/${hook.id}/deliveries${bad}`)
      expect(res.statusCode, bad).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
    }
    expect((await api('GET', `/v1/webhooks/${newId('whk')}/deliveries`)).statusCode).toBe(404)
  })

  it('is pruned by age, and to a cap per endpoint', async () => {
    const hook = await register('https://hooks.example.com/pruned')
    const other = await register('https://hooks.example.com/other')
    const record = (webhookId: string, eventId: string) =>
      insertAttempt(t.ctx.db, { webhook_id: webhookId, event_id: eventId, event_type: 'delivered', attempt: 1, outcome: 'delivered', response_status: 200, error: null, duration_ms: 1 })
    await record(hook.id, 'evt_old')
    await t.ctx.db.query(`UPDATE webhook_attempts SET attempted_at = now() - interval '8 days' WHERE event_id = 'evt_old'`)
    for (let i = 1; i <= 5; i++) await record(hook.id, `evt_${i}`)
    await record(other.id, 'evt_other')
    await pruneAttempts(t.ctx.db, { webhookIds: [hook.id], retentionMs: 7 * 86_400_000, perWebhook: 3 })
    expect((await log(hook.id)).deliveries.map((d) => d.event_id)).toEqual(['evt_5', 'evt_4', 'evt_3'])
    expect((await log(other.id)).deliveries.map((d) => d.event_id)).toEqual(['evt_other'])
  })
})

describe('status and PATCH /v1/webhooks/:id', () => {
  it('disables and enables; the view and GET /v1/webhooks/:id say so; nothing is sent while disabled', async () => {
    const hook = await register()
    const off = await api('PATCH', `/v1/webhooks/${hook.id}`, { enabled: false })
    expect(off.statusCode).toBe(200)
    expect(off.json()).toEqual({
      id: hook.id,
      url: receiver.url + hook.path,
      events: ['delivered', 'failed', 'clicked', 'dismissed'],
      status: 'disabled',
      created_at: expect.any(Number),
      disabled_at: expect.any(Number),
      disabled_reason: 'disabled by the owner',
    })
    expect(Math.abs(off.json().disabled_at - Date.now())).toBeLessThan(60_000)
    expect((await api('GET', `/v1/webhooks/${hook.id}`)).json()).toEqual(off.json())
    const listed = (await api('GET', '/v1/webhooks')).json().webhooks.find((w: { id: string }) => w.id === hook.id)
    expect(listed).toEqual(off.json())

    await click()
    await sleep(300)
    expect(receiver.on(hook.path)).toEqual([])

    const on = await api('PATCH', `/v1/webhooks/${hook.id}`, { enabled: true })
    expect(on.json()).toMatchObject({ status: 'active', disabled_at: null, disabled_reason: null })
    await click()
    await receiver.waitFor(hook.path, 1)
  })

  it('re-enabling resumes deliveries still within their retry window and those never attempted; older ones stay failed', async () => {
    const hook = await register()
    await api('PATCH', `/v1/webhooks/${hook.id}`, { enabled: false })
    // Deliveries written before the endpoint was disabled (the test app's retry window is ~2 minutes: base 5 ms).
    const events = { fresh: newId('evt'), unattempted: newId('evt'), stale: newId('evt') }
    await t.ctx.db.transaction(async (tx) => {
      for (const id of Object.values(events)) {
        await tx.query(`INSERT INTO events (id, project_id, broadcast_id, type) VALUES ($1, $2, $3, 'clicked')`, [id, project.id, broadcastId])
      }
      await tx.query(
        `INSERT INTO webhook_deliveries (webhook_id, event_id, attempts, created_at) VALUES
           ($1, $2, 2, now() - interval '10 seconds'), ($1, $3, 0, now() - interval '1 hour'), ($1, $4, 2, now() - interval '1 hour')`,
        [hook.id, events.fresh, events.unattempted, events.stale],
      )
    })
    await sleep(300)
    expect(receiver.on(hook.path)).toEqual([])
    await api('PATCH', `/v1/webhooks/${hook.id}`, { enabled: true })
    const got = await receiver.waitFor(hook.path, 2)
    expect(new Set(got.map((r) => r.headers['webhook-id']))).toEqual(new Set([events.fresh, events.unattempted]))
    const read = () =>
      t.ctx.db.query<{ event_id: string; status: string; last_error: string }>(
        'SELECT event_id, status, last_error FROM webhook_deliveries WHERE webhook_id = $1',
        [hook.id],
      )
    // The two sent are deleted once recorded (in a batch, moments after their answers).
    const rows = await until(read, (r) => r.rows.length === 1)
    expect(rows.rows).toEqual([{ event_id: events.stale, status: 'failed', last_error: 'retry window passed while the endpoint was disabled' }])
    await sleep(200)
    expect(receiver.on(hook.path)).toHaveLength(2)
  })

  it('an endpoint the dispatcher disabled for failing days shows why, and re-enabling resumes its delivery with a fresh failing run', async () => {
    const hook = await register()
    receiver.fail(hook.path, { status: 503 }, 1)
    await t.ctx.db.query(`UPDATE webhooks SET failing_since = now() - interval '5 days 1 minute' WHERE id = $1`, [hook.id])
    await click()
    const disabled = await until(async () => (await api('GET', `/v1/webhooks/${hook.id}`)).json(), (w) => w.status === 'disabled')
    expect(disabled.disabled_reason).toMatch(/^every attempt failed for 5 days/)
    expect(disabled.disabled_at).toBeGreaterThan(Date.now() - 60_000)
    const [failed] = (await log(hook.id)).deliveries
    expect(failed).toMatchObject({ attempt: 1, outcome: 'retrying', response_status: 503, next_attempt_at: null })

    await api('PATCH', `/v1/webhooks/${hook.id}`, { enabled: true })
    const got = await receiver.waitFor(hook.path, 2)
    expect(got[1].headers['webhook-id']).toBe(got[0].headers['webhook-id'])
    const [delivered] = (await until(() => log(hook.id), (l) => l.deliveries.length === 2)).deliveries
    expect(delivered).toMatchObject({ attempt: 2, outcome: 'delivered', response_status: 200 })
    expect((await api('GET', `/v1/webhooks/${hook.id}`)).json().status).toBe('active')
  })

  it('changes url and events (deliveries follow), and keeps what is not named', async () => {
    const hook = await register()
    const path = `/moved-${++paths}`
    const res = await api('PATCH', `/v1/webhooks/${hook.id}`, { url: receiver.url + path, events: ['clicked'] })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ url: receiver.url + path, events: ['clicked'], status: 'active' })
    await click()
    await receiver.waitFor(path, 1)
    expect(receiver.on(hook.path)).toEqual([])
    const again = await api('PATCH', `/v1/webhooks/${hook.id}`, { events: ['dismissed', 'clicked'] })
    expect(again.json()).toMatchObject({ url: receiver.url + path, events: ['dismissed', 'clicked'] })
  })

  it('refuses bad bodies with invalid_request and changes nothing', async () => {
    const hook = await register()
    const before = (await t.ctx.db.query('SELECT * FROM webhooks WHERE id = $1', [hook.id])).rows
    for (const [payload, path] of [
      [{}, '(request)'],
      [{ enabled: 'yes' }, 'enabled'],
      [{ enabled: null }, 'enabled'],
      [{ events: [] }, 'events'],
      [{ events: ['sent'] }, 'events'],
      [{ events: ['clicked', 'clicked'] }, 'events'],
      [{ url: '' }, 'url'],
      [{ url: 'ftp://hooks.example.com/x' }, 'url'],
      [{ url: 'https://user:pw@hooks.example.com/x' }, 'url'],
      [{ url: `https://hooks.example.com/${'a'.repeat(2048)}` }, 'url'],
      [{ secret: 'whsec_mine' }, 'secret'],
      [{ enabled: false, status: 'active' }, 'status'],
    ] as const) {
      const res = await api('PATCH', `/v1/webhooks/${hook.id}`, payload)
      expect(res.statusCode, JSON.stringify(payload)).toBe(400)
      const body = res.json()
      expect(body.error.code).toBe('invalid_request')
      expect(body.error.issues.length, JSON.stringify(body)).toBeGreaterThan(0)
      if (path !== '(request)') expect(JSON.stringify(body.error.issues), JSON.stringify(payload)).toContain(path)
    }
    expect((await t.ctx.db.query('SELECT * FROM webhooks WHERE id = $1', [hook.id])).rows).toEqual(before)
    const unknown = await api('PATCH', `/v1/webhooks/${newId('whk')}`, { enabled: false })
    expect(unknown.statusCode).toBe(404)
    expect(unknown.json().error.code).toBe('webhook_not_found')
  })

  it('refuses a URL on a private address under the production rules (SSRF), as on create', async () => {
    const p = await strict.project({ plan: 'plus' })
    // Registered earlier (written here directly: registration would resolve the name, and this machine may have no DNS).
    const id = newId('whk')
    await strict.ctx.db.query('INSERT INTO webhooks (id, project_id, url, events, secret) VALUES ($1, $2, $3, $4, $5)', [
      id,
      p.id,
      'https://hooks.example.com/strict',
      ['clicked'],
      newWebhookSecret(),
    ])
    for (const url of ['https://127.0.0.1/x', 'https://localhost/x', 'https://10.0.0.1/x', 'https://169.254.169.254/latest', 'http://hooks.example.com/x', 'https://[::1]/x']) {
      const res = await api('PATCH', `/v1/webhooks/${id}`, { url }, strict, p)
      expect(res.statusCode, url).toBe(400)
      expect(res.json().error.code, url).toBe('invalid_request')
      expect(res.json().error.issues[0].path, url).toBe('url')
    }
    const row = await strict.ctx.db.query('SELECT url FROM webhooks WHERE id = $1', [id])
    expect(row.rows[0].url).toBe('https://hooks.example.com/strict')
  })
})

describe('POST /v1/webhooks/:id/test', () => {
  it('sends a signed test event at once, answers with the result, and logs it', async () => {
    const hook = await register()
    const res = await api('POST', `/v1/webhooks/${hook.id}/test`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ delivered: true, response_status: 200, error: null, duration_ms: expect.any(Number) })
    const [request] = receiver.on(hook.path)
    expect(verifies(hook.secret, request)).toBe(true)
    expect(request.headers['webhook-signature'].split(' ')).toHaveLength(1)
    expect(request.json).toEqual({
      id: request.headers['webhook-id'],
      type: 'test',
      project_id: project.id,
      broadcast_id: null,
      subscriber_id: null,
      external_id: null,
      meta: null,
      created_at: expect.any(Number),
    })
    const [logged] = (await log(hook.id)).deliveries
    expect(logged).toMatchObject({ event_id: request.headers['webhook-id'], event_type: 'test', attempt: 1, outcome: 'delivered', response_status: 200, next_attempt_at: null })
  })

  it('answers 200 with the failure when the endpoint fails, and retries nothing', async () => {
    const hook = await register()
    receiver.fail(hook.path, { status: 503 }, 1)
    const res = await api('POST', `/v1/webhooks/${hook.id}/test`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ delivered: false, response_status: 503, error: null })
    const refused = await register(REFUSED_URL)
    const down = await api('POST', `/v1/webhooks/${refused.id}/test`)
    expect(down.json()).toMatchObject({ delivered: false, response_status: null, error: 'connection refused (ECONNREFUSED)' })
    expect((await log(refused.id)).deliveries).toMatchObject([{ event_type: 'test', outcome: 'failed', error: 'connection refused (ECONNREFUSED)' }])
    await sleep(200)
    expect(receiver.on(hook.path)).toHaveLength(1)
    // A test changes neither the status nor the failing run.
    const row = await t.ctx.db.query('SELECT status, failing_since FROM webhooks WHERE id = $1', [refused.id])
    expect(row.rows[0]).toEqual({ status: 'active', failing_since: null })
  })

  it('never connects to a private address under the production rules', async () => {
    const p = await strict.project({ plan: 'plus' })
    // A URL that passed registration and whose name now resolves privately: a literal address stands in for it.
    const id = newId('whk')
    await strict.ctx.db.query('INSERT INTO webhooks (id, project_id, url, events, secret) VALUES ($1, $2, $3, $4, $5)', [
      id,
      p.id,
      receiver.url + '/private',
      ['clicked'],
      newWebhookSecret(),
    ])
    const res = await api('POST', `/v1/webhooks/${id}/test`, undefined, strict, p)
    expect(res.json()).toMatchObject({ delivered: false, response_status: null, error: 'refused: the host resolves to a non-public address (EADDRNOTPUBLIC)' })
    expect(receiver.on('/private')).toEqual([])
  })

  it(`is limited to ${TEST_EVENTS_PER_MINUTE} a minute per webhook`, async () => {
    const hook = await register()
    // A fixed one-minute window: if it turns during the calls, the refusal comes within a second round.
    const codes: number[] = []
    let last
    for (let i = 0; i < 2 * TEST_EVENTS_PER_MINUTE + 1; i++) {
      last = await api('POST', `/v1/webhooks/${hook.id}/test`)
      codes.push(last.statusCode)
      if (last.statusCode === 429) break
    }
    expect(codes.slice(0, TEST_EVENTS_PER_MINUTE)).toEqual(Array(TEST_EVENTS_PER_MINUTE).fill(200))
    expect(codes.at(-1)).toBe(429)
    last = last!
    expect(last.json().error.code).toBe('rate_limited')
    expect(Number(last.headers['retry-after'])).toBeGreaterThan(0)
    // Another webhook has its own budget.
    const other = await register()
    expect((await api('POST', `/v1/webhooks/${other.id}/test`)).statusCode).toBe(200)
  })
})

describe('POST /v1/webhooks/:id/rotate-secret', () => {
  it('signs with both secrets for 24 hours (tests and real deliveries), then with the new one only', async () => {
    const hook = await register()
    const res = await api('POST', `/v1/webhooks/${hook.id}/rotate-secret`)
    expect(res.statusCode).toBe(200)
    const { secret, previous_secret_expires_at } = res.json()
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(secret).not.toBe(hook.secret)
    expect(Math.abs(previous_secret_expires_at - (Date.now() + 86_400_000))).toBeLessThan(60_000)
    const stored = await t.ctx.db.query('SELECT secret, previous_secret FROM webhooks WHERE id = $1', [hook.id])
    expect(stored.rows[0]).toEqual({ secret, previous_secret: hook.secret })
    expect(JSON.stringify((await api('GET', `/v1/webhooks/${hook.id}`)).json())).not.toContain('whsec_')

    await api('POST', `/v1/webhooks/${hook.id}/test`)
    await click()
    const both = await receiver.waitFor(hook.path, 2)
    for (const request of both) {
      expect(request.headers['webhook-signature'].split(' ')).toHaveLength(2)
      expect(verifies(secret, request)).toBe(true)
      expect(verifies(hook.secret, request)).toBe(true)
      expect(verifies(newWebhookSecret(), request)).toBe(false)
    }

    // 24 hours later.
    await t.ctx.db.query(`UPDATE webhooks SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`, [hook.id])
    await api('POST', `/v1/webhooks/${hook.id}/test`)
    await click()
    const after = (await receiver.waitFor(hook.path, 4)).slice(2)
    for (const request of after) {
      expect(request.headers['webhook-signature'].split(' ')).toHaveLength(1)
      expect(verifies(secret, request)).toBe(true)
      expect(verifies(hook.secret, request)).toBe(false)
    }
  })

  it('a second rotation keeps only the secret it replaced', async () => {
    const hook = await register()
    const first = (await api('POST', `/v1/webhooks/${hook.id}/rotate-secret`)).json().secret
    const second = (await api('POST', `/v1/webhooks/${hook.id}/rotate-secret`)).json().secret
    await api('POST', `/v1/webhooks/${hook.id}/test`)
    const [request] = receiver.on(hook.path)
    expect([verifies(second, request), verifies(first, request), verifies(hook.secret, request)]).toEqual([true, true, false])
  })
})

describe('the OpenAPI document', () => {
  it('shows every new route and field', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    expect(Object.keys(doc.paths['/v1/webhooks/{id}']).sort()).toEqual(['delete', 'get', 'patch'])
    expect(Object.keys(doc.paths['/v1/webhooks/{id}/deliveries'])).toEqual(['get'])
    expect(Object.keys(doc.paths['/v1/webhooks/{id}/test'])).toEqual(['post'])
    expect(Object.keys(doc.paths['/v1/webhooks/{id}/rotate-secret'])).toEqual(['post'])
    const view = doc.paths['/v1/webhooks/{id}'].get.responses['200'].content['application/json'].schema
    expect(Object.keys(view.properties)).toEqual(expect.arrayContaining(['status', 'disabled_at', 'disabled_reason']))
    const patch = doc.paths['/v1/webhooks/{id}'].patch.requestBody.content['application/json'].schema
    expect(Object.keys(patch.properties).sort()).toEqual(['enabled', 'events', 'url'])
    const item = doc.paths['/v1/webhooks/{id}/deliveries'].get.responses['200'].content['application/json'].schema.properties.deliveries.items
    expect(Object.keys(item.properties).sort()).toEqual(
      ['attempt', 'attempted_at', 'duration_ms', 'error', 'event_id', 'event_type', 'id', 'next_attempt_at', 'outcome', 'response_status'],
    )
    const test = doc.paths['/v1/webhooks/{id}/test'].post.responses['200'].content['application/json'].schema
    expect(Object.keys(test.properties).sort()).toEqual(['delivered', 'duration_ms', 'error', 'response_status'])
    const rotated = doc.paths['/v1/webhooks/{id}/rotate-secret'].post.responses['200'].content['application/json'].schema
    expect(Object.keys(rotated.properties).sort()).toEqual(['previous_secret_expires_at', 'secret'])
  })
})

describe('small rules', () => {
  it('network errors become short phrases that name no address', () => {
    expect(describeNetworkError('ECONNREFUSED: connect ECONNREFUSED 10.1.2.3:443')).toBe('connection refused (ECONNREFUSED)')
    expect(describeNetworkError('EADDRNOTPUBLIC: hooks.example.com resolves to non-public address 10.0.0.7')).toBe(
      'refused: the host resolves to a non-public address (EADDRNOTPUBLIC)',
    )
    expect(describeNetworkError('TimeoutError: no complete answer before the deadline')).toBe('timeout: no complete answer in time (TimeoutError)')
    expect(describeNetworkError('ENOTFOUND: getaddrinfo ENOTFOUND hooks.example.com')).toBe('DNS lookup failed (ENOTFOUND)')
    expect(describeNetworkError('something odd at /srv/app/x.js:12')).toBe('network error')
  })

  it('durations read as the owner would say them', () => {
    expect(describeDuration(5 * 86_400_000)).toBe('5 days')
    expect(describeDuration(86_400_000)).toBe('1 day')
    expect(describeDuration(36 * 3_600_000)).toBe('36 hours')
    expect(describeDuration(90_000)).toBe('90 seconds')
  })

  it('a delivery enqueued for a disabled endpoint is not: disabled endpoints get no new deliveries', async () => {
    const hook = await register('https://hooks.example.com/off')
    await api('PATCH', `/v1/webhooks/${hook.id}`, { enabled: false })
    const eventId = newId('evt')
    const written = await t.ctx.db.transaction(async (tx) => {
      await tx.query(`INSERT INTO events (id, project_id, broadcast_id, type) VALUES ($1, $2, $3, 'clicked')`, [eventId, project.id, broadcastId])
      return enqueueDeliveriesForEvents(tx, project.id, [{ id: eventId, type: 'clicked' }])
    })
    expect(written).toBe(0)
  })
})
