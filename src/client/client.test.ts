// The typed server client ('herald/client') against a real Herald listening on
// a port: every route it calls is in the live /openapi.json, every method works,
// and errors arrive as HeraldApiError with Herald's code.
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
// Imported by the package name, through package.json "exports".
import { createHeraldClient, HeraldApiError, ROUTES, type BroadcastFunnel, type HeraldClient, type NotificationAction } from 'herald/client'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { subscribe, subscription } from '../subscribers/subscribers.fixtures.ts'
import { runningExperiment } from '../experiments/experiments.fixtures.ts'

let t: TestApp
let project: TestProject
let client: HeraldClient
/** `METHOD /path` of every request the client sent. */
const sent: string[] = []
const recording: typeof fetch = (input, init) => {
  sent.push(`${init?.method} ${new URL(String(input)).pathname}`)
  return fetch(input, init)
}

beforeAll(async () => {
  t = await createTestApp()
  project = await t.project({ plan: 'plus' })
  await t.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = t.app.server.address() as AddressInfo
  client = createHeraldClient({ baseUrl: `http://127.0.0.1:${port}/`, apiKey: project.apiKey, fetch: recording })
})
afterAll(() => t.close())

describe('herald/client', () => {
  it('calls only routes that the live /openapi.json documents, with that method', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> }
    for (const [name, [method, path]] of Object.entries(ROUTES)) {
      expect(doc.paths[path]?.[method.toLowerCase()], `${name}: ${method} ${path}`).toBeDefined()
    }
  })

  it('groups: create, list, update, add and remove members, delete', async () => {
    const sid = await subscribe(t, project)
    const id = await client.groups.create({ name: 'vip', description: 'Best customers' })
    expect(id).toMatch(/^grp_/)
    expect(await client.groups.list()).toEqual([expect.objectContaining({ id, name: 'vip', description: 'Best customers', member_count: 0 })])
    expect(await client.groups.update(id, { name: 'VIP' })).toEqual({ ok: true })
    expect(await client.groups.addSubscribers(id, [sid])).toBe(1)
    expect((await client.groups.list())[0]).toMatchObject({ name: 'VIP', member_count: 1 })
    expect(await client.groups.removeSubscriber(id, sid)).toEqual({ ok: true })
    expect(await client.groups.delete(id)).toEqual({ ok: true })
    expect(await client.groups.list()).toEqual([])
  })

  it('send and broadcasts: send now, schedule, list, get, cancel', async () => {
    const now = await client.send({ target: { type: 'all' }, notification: { title: 'Hi', body: 'There' } })
    expect(now.broadcast_id).toMatch(/^bdc_/)
    const at = Date.now() + 3_600_000
    const later = await client.send({ target: { type: 'user', external_id: 'u1' }, notification: { title: 'Later', body: 'Soon' }, scheduled_at: at })
    expect(later.scheduled_at).toBe(at)
    const one = await client.broadcasts.get(now.broadcast_id)
    expect(one).toMatchObject({ id: now.broadcast_id, notification: { title: 'Hi', body: 'There', url: '/' }, target: { type: 'all' } })
    // issue 25: the funnel comes typed with the broadcast.
    const funnel: BroadcastFunnel = one.funnel
    expect(funnel).toMatchObject({ shown: 0, clicked: 0, rates: { shown: null } })
    const page = await client.broadcasts.list({ limit: 1 })
    expect(page.broadcasts.map((b) => b.id)).toEqual([later.broadcast_id])
    expect(page.next_cursor).toBe(later.broadcast_id)
    expect((await client.broadcasts.list({ status: 'scheduled' })).broadcasts.map((b) => b.id)).toEqual([later.broadcast_id])
    expect(await client.broadcasts.cancel(later.broadcast_id)).toEqual({ ok: true })
    expect((await client.broadcasts.get(later.broadcast_id)).status).toBe('canceled')
  })

  it('send with action buttons: the broadcast carries them and counts clicks by action; dryRun says whether the push is declarative', async () => {
    const actions: NotificationAction[] = [{ action: 'buy', title: 'Buy', url: 'https://shop.example.com/buy' }, { action: 'later', title: 'Later' }]
    const sent = await client.send({ target: { type: 'all' }, notification: { title: 'Hi', body: 'There', url: 'https://shop.example.com/', actions } })
    const broadcast = await client.broadcasts.get(sent.broadcast_id)
    expect(broadcast.notification.actions).toEqual(actions)
    expect(broadcast.clicked_by_action).toEqual({ buy: 0, later: 0 })
    const dry = await client.dryRun({ target: { type: 'all' }, notification: { title: 'Hi', body: 'There', url: 'https://shop.example.com/', actions } })
    expect(dry.declarative).toBe(true)
    const doc = (await t.app.inject({ url: '/openapi.json' })).json()
    expect(doc.paths['/c/{token}'].get).toBeDefined()
    expect(JSON.stringify(doc.paths['/v1/broadcasts/{id}'].get.responses['200'])).toContain('clicked_by_action')
    expect(JSON.stringify(doc.paths['/v1/send'].post.requestBody)).toContain('"actions"')
  })

  it("dryRun: the send's audience and warnings, nothing created; its errors as HeraldApiError", async () => {
    const before = (await client.broadcasts.list()).broadcasts.length
    const dry = await client.dryRun({ target: { type: 'user', external_id: 'nobody' }, notification: { title: 'Hi', body: 'There', url: '/' } })
    expect(dry).toMatchObject({ dry_run: true, audience: 0, fetch: false, warnings: [expect.objectContaining({ code: 'audience_empty' })] })
    expect((await client.broadcasts.list()).broadcasts).toHaveLength(before)
    const refused = await client.dryRun({ target: { type: 'all' }, notification: { title: 'Hi', body: 'There' }, scheduled_at: 1 }).catch((e) => e)
    expect(refused).toBeInstanceOf(HeraldApiError)
    expect(refused).toMatchObject({ status: 400, code: 'invalid_scheduled_at' })
  })

  it('broadcasts.stop: stops a pending broadcast, then 409 broadcast_not_stoppable', async () => {
    const { broadcast_id: id } = await client.send({ target: { type: 'all' }, notification: { title: 'Hi', body: 'There' } })
    expect(await client.broadcasts.stop(id)).toEqual({ ok: true })
    const stopped = await client.broadcasts.get(id)
    expect(stopped).toMatchObject({ status: 'canceled', pending: stopped.audience, retrying: 0, last_error: null, next_attempt_at: null })
    await expect(client.broadcasts.stop(id)).rejects.toMatchObject({ status: 409, code: 'broadcast_not_stoppable' })
  })

  it('broadcasts.decideExperiment: a person ends an A/B test, its winner in the answer; then 409 experiment_not_decidable', async () => {
    const id = await runningExperiment(t, project)
    const decided = await client.broadcasts.decideExperiment(id, { winner: 'b' })
    expect(decided.experiment).toMatchObject({ phase: 'sending_winner', winner: 'b', decided_by: 'person' })
    await expect(client.broadcasts.decideExperiment(id)).rejects.toMatchObject({ status: 409, code: 'experiment_not_decidable' })
  })

  it('subscribers: list with filters, get, and the three erasures', async () => {
    const a = await subscribe(t, project, { external_id: 'erin' })
    const b = await subscribe(t, project, { external_id: 'erin' })
    const c = await subscribe(t, project)
    const erin = await client.subscribers.list({ external_id: 'erin' })
    expect(erin.subscribers.map((s) => s.id).sort()).toEqual([a, b].sort())
    const got = await client.subscribers.get(c)
    expect(got).toMatchObject({ id: c, status: 'active', external_id: null })
    expect(await client.subscribers.eraseByEndpoint(got.endpoint)).toBe(1)
    expect(await client.subscribers.eraseByExternalId('erin')).toBe(2)
    const d = await subscribe(t, project)
    expect(await client.subscribers.erase(d)).toBe(1)
    expect((await client.subscribers.list()).subscribers.filter((s) => [a, b, c, d].includes(s.id))).toEqual([])
  })

  it('project and health: get, update the expiry rules, health counts and filter', async () => {
    expect(await client.project.get()).toMatchObject({ id: project.id, expire_after_failures: null })
    expect(await client.project.update({ expire_after_failures: 5 })).toMatchObject({ expire_after_failures: 5, expire_after_days_without_delivery: null })
    await expect(client.project.update({ expire_after_failures: 0 })).rejects.toMatchObject({ status: 400, code: 'invalid_request' })
    const s = await subscribe(t, project)
    const health = await client.subscribers.health()
    expect(health.active).toBeGreaterThanOrEqual(1)
    expect(health.failing).toBe(0)
    expect((await client.subscribers.list({ health: 'active' })).subscribers.map((x) => x.id)).toContain(s)
    expect((await client.subscribers.list({ min_consecutive_failures: 1 })).subscribers).toEqual([])
  })

  it('tags and segments: setTags, setTagsByExternalId, list by tag, a segment send', async () => {
    const a = await subscribe(t, project, { external_id: 'fay', tags: { plan: 'free' } })
    const b = await subscribe(t, project, { external_id: 'fay' })
    expect((await client.subscribers.setTags(a, { tags: { age: 30 }, merge: true })).tags).toEqual({ plan: 'free', age: 30 })
    expect(await client.subscribers.setTagsByExternalId('fay', { tags: { plan: 'pro' }, merge: true })).toBe(2)
    expect((await client.subscribers.list({ tag: 'plan:pro', external_id_contains: 'FA' })).subscribers.map((s) => s.id).sort()).toEqual([a, b].sort())
    const filter = { and: [{ tag: 'plan', eq: 'pro' }, { tag: 'age', gte: 30 }] }
    expect(await client.dryRun({ target: { type: 'segment', filter }, notification: { title: 'Hi', body: 'There' } })).toMatchObject({ audience: 1 })
    const { broadcast_id: id } = await client.send({ target: { type: 'segment', filter }, notification: { title: 'Hi', body: 'There' } })
    expect((await client.broadcasts.get(id)).target).toEqual({ type: 'segment', filter })
    // @ts-expect-error gt compares numbers only: the type says so too
    await expect(client.send({ target: { type: 'segment', filter: { tag: 'age', gt: '30' } }, notification: { title: 'Hi', body: 'There' } }))
      .rejects.toMatchObject({ status: 400, code: 'invalid_request', details: { issues: [expect.objectContaining({ path: 'target.filter.gt' })] } })
  })

  it('operator.vapidKeys with the operator token: list, rotate, retire (409 with the count, then forced)', async () => {
    const operator = createHeraldClient({
      baseUrl: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`,
      apiKey: ADMIN_TOKEN,
      fetch: (input, init) => {
        sent.push(`${init?.method} ${new URL(String(input)).pathname}`)
        return fetch(input, init)
      },
    })
    const p = await t.project()
    await subscribe(t, p)
    const [original] = await operator.operator.vapidKeys.list(p.id)
    expect(original).toMatchObject({ current: true, active_subscribers: 1 })
    const rotated = await operator.operator.vapidKeys.rotate(p.id)
    expect(rotated.vapid_key.current).toBe(true)
    const refused = await operator.operator.vapidKeys.retire(p.id, original.id).catch((err: unknown) => err)
    expect(refused).toBeInstanceOf(HeraldApiError)
    expect((refused as HeraldApiError).details).toMatchObject({ code: 'vapid_key_has_subscribers', active_subscribers: 1 })
    expect(await operator.operator.vapidKeys.retire(p.id, original.id, { force: true })).toMatchObject({ expired_subscribers: 1 })
    // A project key is not the operator's.
    expect(((await client.operator.vapidKeys.list(p.id).catch((err: unknown) => err)) as HeraldApiError).status).toBe(401)
  })

  it('errors are HeraldApiError with status, code and the extra fields', async () => {
    const unknown = await client.groups.update('grp_00000000000000000000000000', { name: 'x' }).catch((e: unknown) => e)
    expect(unknown).toBeInstanceOf(HeraldApiError)
    expect(unknown).toMatchObject({ status: 404, code: 'group_not_found' })
    const invalid = await client.send({ target: { type: 'all' }, notification: { title: '', body: 'x' } }).catch((e: unknown) => e)
    expect(invalid).toMatchObject({ status: 400, code: 'invalid_request', details: { issues: [expect.objectContaining({ path: 'notification.title' })] } })
    const badKey = createHeraldClient({ baseUrl: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`, apiKey: 'hk_live_nope' })
    await expect(badKey.groups.list()).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' })
  })

  it('request types are the route schemas: tsc refuses what the API would refuse', () => {
    // Each @ts-expect-error fails `npm run lint` if the type stops catching the mistake.
    // @ts-expect-error 'everyone' is not a target type
    const badTarget: Parameters<HeraldClient['send']>[0] = { target: { type: 'everyone' }, notification: { title: 'a', body: 'b' } }
    // @ts-expect-error urgency is one of four levels
    const badUrgency: Parameters<HeraldClient['send']>[0] = { target: { type: 'all' }, notification: { title: 'a', body: 'b' }, urgency: 'urgent' }
    // @ts-expect-error a user target needs external_id
    const noExternalId: Parameters<HeraldClient['send']>[0] = { target: { type: 'user' }, notification: { title: 'a', body: 'b' } }
    expect([badTarget, badUrgency, noExternalId]).toHaveLength(3)
  })

  it('send with idempotencyKey: a retry gets the first answer, another body 422; the header is in /openapi.json', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string }>; responses: Record<string, unknown> }>>
    }
    const op = doc.paths['/v1/send'].post
    expect(op.parameters?.some((p) => p.in === 'header' && p.name === 'idempotency-key')).toBe(true)
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['409', '422']))

    const body = { target: { type: 'all' as const }, notification: { title: 'Once', body: 'Only once' } }
    const first = await client.send(body, { idempotencyKey: 'client-key-1' })
    expect(await client.send(body, { idempotencyKey: 'client-key-1' })).toEqual(first)
    const reused = await client.send({ ...body, ttl: 60 }, { idempotencyKey: 'client-key-1' }).catch((e: unknown) => e)
    expect(reused).toBeInstanceOf(HeraldApiError)
    expect(reused).toMatchObject({ status: 422, code: 'idempotency_key_reused' })
  })

  it('throttle_per_minute: in /openapi.json (send body, dry run, broadcast view) and through the client', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).body
    for (const field of ['throttle_per_minute', 'expected_finish_at', 'expected_duration_ms']) expect(doc).toContain(`"${field}"`)
    const dry = await client.dryRun({ target: { type: 'all' }, notification: { title: 'Slow', body: 'Down' }, throttle_per_minute: 60 })
    expect(dry).toMatchObject({ throttle_per_minute: 60, expected_duration_ms: expect.any(Number) })
    const at = Date.now() + 3_600_000
    const { broadcast_id } = await client.send({ target: { type: 'all' }, notification: { title: 'Slow', body: 'Down' }, throttle_per_minute: 60, scheduled_at: at })
    const view = await client.broadcasts.get(broadcast_id)
    expect(view.throttle_per_minute).toBe(60)
    expect(view.expected_finish_at).toBe(at + view.audience * 1000)
  })

  it('frequency caps: project.setFrequencyCaps and get, a send with class and on_capped, all in /openapi.json', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).body
    for (const field of ['frequency_caps', 'on_capped', 'capped']) expect(doc).toContain(`"${field}"`)
    expect(await client.project.setFrequencyCaps([{ max: 3, per: '1d' }])).toEqual([{ max: 3, per: '1d' }])
    expect((await client.project.get()).frequency_caps).toEqual([{ max: 3, per: '1d' }])
    const refused = await client.project.update({ frequency_caps: [{ max: 0, per: '1d' }] }).catch((err: unknown) => err)
    expect(refused).toBeInstanceOf(HeraldApiError)
    expect((refused as HeraldApiError).code).toBe('invalid_request')
    const { broadcast_id } = await client.send({ target: { type: 'all' }, notification: { title: 'Code', body: '123456' }, class: 'transactional', on_capped: 'defer' })
    expect(await client.broadcasts.get(broadcast_id)).toMatchObject({ class: 'transactional', on_capped: 'defer', capped: 0 })
    expect(await client.project.setFrequencyCaps(null)).toEqual([])
  })

  it('auditLog.list: the changes above, newest first, with filters and a cursor; the route is in /openapi.json', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { parameters?: Array<{ name: string }> }>> }
    expect(doc.paths['/v1/audit-log'].get.parameters?.map((p) => p.name).sort()).toEqual(['action', 'actor_id', 'cursor', 'limit', 'since', 'target_id', 'until'])
    const page = await client.auditLog.list({ action: 'group.', limit: 1 })
    expect(page.entries).toHaveLength(1)
    expect(page.entries[0]).toMatchObject({ action: expect.stringMatching(/^group\./), actor: { type: 'key', id: project.apiKeyId } })
    expect(page.next_cursor).toBe(page.entries[0].id)
    const next = await client.auditLog.list({ action: 'group.', limit: 1, cursor: page.next_cursor! })
    expect(next.entries[0].id < page.entries[0].id).toBe(true)
  })

  it('stats: hours of the last day with the subscribers made above; a bad range is HeraldApiError invalid_stats_range', async () => {
    const stats = await client.stats({ interval: 'hour' })
    expect(stats).toMatchObject({ interval: 'hour', time_zone: expect.any(String) })
    expect(stats.buckets).toHaveLength(24)
    expect(stats.totals.gained).toBeGreaterThan(0)
    await expect(client.stats({ from: 2, to: 1 })).rejects.toMatchObject({ code: 'invalid_stats_range', status: 400 })
  })

  it('apiKeys: create a scoped key (shown once), list without secrets, revoke; a foreign id is 404', async () => {
    const made = await client.apiKeys.create({ name: 'webhooks bot', scope: 'webhooks' })
    expect(made).toMatchObject({ name: 'webhooks bot', scope: 'webhooks', api_key: expect.stringMatching(/^hk_live_/) })
    const listed = await client.apiKeys.list()
    expect(listed.map((k) => [k.name, k.scope])).toEqual([['default', 'full'], ['webhooks bot', 'webhooks']])
    expect(JSON.stringify(listed)).not.toContain(made.api_key)
    expect(await client.apiKeys.revoke(made.id)).toEqual({ ok: true })
    expect((await client.apiKeys.list()).map((k) => k.id)).not.toContain(made.id)
    const other = await t.project()
    const foreign = await client.apiKeys.revoke(other.apiKeyId).catch((e: unknown) => e)
    expect(foreign).toMatchObject({ status: 404, code: 'api_key_not_found' })
  })

  it('subscribers.import from a string, a stream and a file; export as a stream and as text; errors as HeraldApiError', async () => {
    const own = await t.project()
    const ownClient = createHeraldClient({ baseUrl: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`, apiKey: own.apiKey, fetch: recording })
    const lines = [0, 1, 2].map(() => JSON.stringify({ ...subscription(), external_id: 'user_1', tags: { from: 'old' } }))
    expect(await ownClient.subscribers.import(`${lines[0]}\nnot json\n`)).toEqual({ imported: 1, updated: 0, skipped: 1, errors: [{ line: 2, field: '(line)', reason: expect.any(String) }] })
    // A Node stream, in small chunks that cut lines in two: sent as read.
    const text = `${lines[1]}\n${lines[2]}\n`
    const chunks = Readable.from(Array.from({ length: Math.ceil(text.length / 50) }, (_, i) => Buffer.from(text.slice(i * 50, i * 50 + 50))))
    expect(await ownClient.subscribers.import(chunks)).toMatchObject({ imported: 2, skipped: 0 })
    // A CSV file, its format from its name.
    const dir = await mkdtemp(join(tmpdir(), 'herald-client-'))
    const csv = subscription() as { endpoint: string; keys: { p256dh: string; auth: string } }
    await writeFile(join(dir, 'old.csv'), `endpoint,p256dh,auth,external_id\n${csv.endpoint},${csv.keys.p256dh},${csv.keys.auth},user_2\n`)
    expect(await ownClient.subscribers.importFile(join(dir, 'old.csv'))).toMatchObject({ imported: 1, skipped: 0 })
    await rm(dir, { recursive: true })

    const ndjson = await ownClient.subscribers.exportText()
    const rows = ndjson.trim().split('\n').map((line) => JSON.parse(line))
    expect(rows.map((r) => r.external_id).sort()).toEqual(['user_1', 'user_1', 'user_1', 'user_2'])
    expect(rows.every((r) => r.source === 'import' && !('keys' in r))).toBe(true)
    const stream = await ownClient.subscribers.export({ format: 'csv' })
    let csvText = ''
    for await (const chunk of stream) csvText += Buffer.from(chunk).toString()
    expect(csvText.split('\n')[0]).toContain('endpoint')
    expect(csvText).toContain(csv.endpoint)
    // The list's filters apply to the export (issue 25); broadcasts export as CSV.
    expect((await ownClient.subscribers.exportText({ format: 'csv', external_id: 'user_2' })).trim().split('\n')).toHaveLength(2)
    expect((await ownClient.broadcasts.exportText({ status: 'sent' })).split('\n')[0]).toMatch(/^id,created_at,/)

    const scoped = await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: own.auth, payload: { scope: 'subscribers' } })
    const narrow = createHeraldClient({ baseUrl: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`, apiKey: scoped.json().api_key })
    expect(await narrow.subscribers.import(lines[0]).catch((e: unknown) => e)).toMatchObject({ name: 'HeraldApiError', status: 403, code: 'insufficient_scope' })
    expect(await ownClient.subscribers.import('endpoint\n', { format: 'csv' }).catch((e: unknown) => e)).toMatchObject({ status: 400, code: 'invalid_request' })
  })

  it('templates: create, list, get, update, send with template_id and data (dry run), delete; a bad field is template_invalid', async () => {
    const made = await client.templates.create({
      name: 'Order shipped',
      notification: { title: 'Hi {{ tags.first_name | default: "there" }}', body: 'Order {{ data.order_id }} is on its way', url: '/orders/{{data.order_id}}' },
      defaults: { 'tags.first_name': 'friend' },
      localized: { 'pt-br': { title: 'Olá {{ tags.first_name }}', body: 'Pedido {{ data.order_id }} a caminho' } },
    })
    expect(made).toMatchObject({ id: expect.stringMatching(/^tpl_/), localized: { 'pt-BR': expect.any(Object) }, variables: ['data.order_id', 'tags.first_name'] })
    expect((await client.templates.list()).map((x) => x.id)).toEqual([made.id])
    expect(await client.templates.get(made.id)).toEqual(made)
    const renamed = await client.templates.update(made.id, { name: 'Shipped' })
    expect(renamed).toMatchObject({ name: 'Shipped', notification: made.notification })
    const dry = await client.dryRun({ target: { type: 'all' }, template_id: made.id, data: { order_id: 'A1' } })
    expect(dry.personalization?.variables.map((v) => v.variable)).toEqual(['data.order_id', 'tags.first_name'])
    const bad = await client.templates.create({ name: 'x', notification: { title: '{% include "secrets" %}', body: 'b' } }).catch((e: unknown) => e)
    expect(bad).toMatchObject({ status: 400, code: 'template_invalid' })
    expect(await client.templates.delete(made.id)).toEqual({ ok: true })
    expect(await client.templates.list()).toEqual([])
  })

  it('time zones: project settings, a subscriber zone, a local-time send whose waves show in the view (issue 24)', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json() as { components?: unknown; paths: Record<string, Record<string, unknown>> }
    const sendBody = JSON.stringify(doc.paths['/v1/send'].post)
    for (const field of ['deliver_at_local', 'deliver_on', 'past', 'ignore_quiet_hours']) expect(sendBody).toContain(`"${field}"`)
    const view = JSON.stringify(doc.paths['/v1/broadcasts/{id}'].get)
    for (const field of ['waiting', 'held', 'skipped']) expect(view).toContain(`"${field}"`)
    expect(JSON.stringify(doc.paths['/v1/me'])).toContain('"quiet_hours"')
    expect(JSON.stringify(doc.paths['/v1/subscribers/{sid}'])).toContain('"timezone"')
    const before = await client.project.get()
    expect([before.default_timezone, before.quiet_hours]).toEqual(['UTC', null])
    const after = await client.project.update({ default_timezone: 'Europe/Paris', quiet_hours: { start: '22:00', end: '07:30' } })
    expect([after.default_timezone, after.quiet_hours]).toEqual(['Europe/Paris', { start: '22:00', end: '07:30' }])
    await client.project.update({ quiet_hours: null, default_timezone: 'UTC' })
    const sid = await subscribe(t, project)
    expect((await client.subscribers.setTimezone(sid, 'America/New_York')).timezone).toBe('America/New_York')
    await expect(client.subscribers.setTimezone(sid, 'Nowhere/Land')).rejects.toMatchObject({ status: 400, code: 'invalid_request' })
    const sent = await client.send({ target: { type: 'all' }, notification: { title: 'Morning', body: 'There' }, deliver_at_local: '09:00', deliver_on: new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10) })
    expect((await client.broadcasts.get(sent.broadcast_id)).deliver_at_local).toBe('09:00')
    await client.broadcasts.stop(sent.broadcast_id)
  })

  it('every route of ROUTES was called by the tests above', () => {
    for (const [name, [method, template]] of Object.entries(ROUTES)) {
      const pattern = new RegExp(`^${method} ${template.replace(/\{\w+\}/g, '[^/]+')}$`)
      expect(sent.some((request) => pattern.test(request)), `${name}: ${method} ${template}`).toBe(true)
    }
  })
})
