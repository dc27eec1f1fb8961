// Who sees push endpoints and webhook URLs whole (issue 22, finding 6): an
// endpoint is a capability (POST /v1/unsubscribe takes it), a webhook URL may
// hold a secret. Every route that answers one, for every role and key scope
// that may read it: whole for those who may erase subscribers / change
// webhooks, masked (field present, origin kept) for the others.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { addMember, signIn } from '../../test/support/members.ts'
import { subscription } from '../subscribers/subscribers.fixtures.ts'
import { maskEndpoint, maskWebhookUrl } from './masking.ts'
import type { KeyScope, Role } from './access.ts'

const WEBHOOK_URL = 'https://hooks.example.com/services/T000/B000/s3cr3tTokenInThePath?token=abc'
let t: TestApp
let p: TestProject
let endpoint: string
let subscriberId: string
let webhookId: string
const headersOf = new Map<string, Record<string, string>>()

beforeAll(async () => {
  t = await createTestApp()
  p = await t.project({ plan: 'plus' })
  const body = subscription({ external_id: 'alice-1' })
  endpoint = body.endpoint as string
  subscriberId = (await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: body })).json().id
  webhookId = (await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: p.auth, payload: { url: WEBHOOK_URL } })).json().id
  for (const scope of ['full', 'send', 'subscribers', 'groups', 'webhooks'] satisfies KeyScope[]) {
    const created = await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: p.auth, payload: { name: scope, scope } })
    headersOf.set(`key:${scope}`, { authorization: `Bearer ${created.json().api_key}` })
  }
  for (const role of ['owner', 'admin', 'editor', 'viewer'] satisfies Role[]) {
    await addMember(t, p.id, `${role}@example.com`, role)
    headersOf.set(`user:${role}`, (await signIn(t, `${role}@example.com`, undefined, { project: p.id })).headers)
  }
})
afterAll(async () => {
  await t.close()
})

const get = (url: string, who: string) => t.app.inject({ method: 'GET', url, headers: headersOf.get(who) })

describe('masked forms', () => {
  it('an endpoint keeps its push service origin and a 6-character tail; a short one no tail', () => {
    expect(maskEndpoint('https://fcm.googleapis.com/fcm/send/abcdefghijklmnopqrstuvwxyz')).toBe('https://fcm.googleapis.com/…uvwxyz')
    expect(maskEndpoint('http://127.0.0.1:8090/push/abc')).toBe('http://127.0.0.1:8090/…')
    expect(maskEndpoint('not a url')).toBe('…')
  })

  it('a webhook URL keeps its origin only', () => {
    expect(maskWebhookUrl(WEBHOOK_URL)).toBe('https://hooks.example.com/…')
    expect(maskWebhookUrl('https://hooks.example.com:8443/x')).toBe('https://hooks.example.com:8443/…')
    expect(maskWebhookUrl('https://hooks.example.com/')).toBe('https://hooks.example.com/')
  })
})

describe('push endpoints', () => {
  const whole = ['user:owner', 'user:admin', 'key:full', 'key:subscribers']
  const masked = ['user:editor', 'user:viewer']

  it.each(whole)('%s sees them whole in the list, a search, and one subscriber', async (who) => {
    expect((await get('/v1/subscribers', who)).json().subscribers[0].endpoint).toBe(endpoint)
    expect((await get('/v1/subscribers?external_id_contains=ALICE', who)).json().subscribers[0].endpoint).toBe(endpoint)
    expect((await get(`/v1/subscribers/${subscriberId}`, who)).json().endpoint).toBe(endpoint)
  })

  it.each(masked)('%s sees them masked in the list, a search, and one subscriber', async (who) => {
    const shown = maskEndpoint(endpoint)
    expect(shown).toMatch(/^https:\/\/fcm\.googleapis\.com\/….{6}$/)
    const list = await get('/v1/subscribers', who)
    expect(list.statusCode).toBe(200)
    expect(list.json().subscribers[0].endpoint).toBe(shown)
    expect((await get('/v1/subscribers?external_id_contains=ALICE', who)).json().subscribers[0].endpoint).toBe(shown)
    const one = await get(`/v1/subscribers/${subscriberId}`, who)
    expect(one.json().endpoint).toBe(shown)
    expect(one.body).not.toContain(endpoint)
  })

  it.each(whole)('%s gets them whole in the export, NDJSON and CSV', async (who) => {
    expect((await get('/v1/subscribers/export', who)).body).toContain(JSON.stringify(endpoint))
    expect((await get('/v1/subscribers/export?format=csv', who)).body).toContain(endpoint)
  })

  it.each(masked)('%s gets them masked in the export, NDJSON and CSV (an export is no way around the list)', async (who) => {
    const ndjson = await get('/v1/subscribers/export', who)
    expect(ndjson.statusCode).toBe(200)
    expect(ndjson.body).toContain(JSON.stringify(maskEndpoint(endpoint)))
    expect(ndjson.body).not.toContain(endpoint)
    const csv = await get('/v1/subscribers/export?format=csv', who)
    expect(csv.statusCode).toBe(200)
    expect(csv.body).toContain(maskEndpoint(endpoint))
    expect(csv.body).not.toContain(endpoint)
    // With the list's filters (issue 25): still masked.
    const filtered = await get('/v1/subscribers/export?format=csv&external_id_contains=ALICE&status=active', who)
    expect(filtered.body).toContain(maskEndpoint(endpoint))
    expect(filtered.body).not.toContain(endpoint)
  })

  it('the subscriber PATCH answers: masked to an editor (who may tag but not erase), whole to a subscribers key', async () => {
    const patch = (who: string) => t.app.inject({ method: 'PATCH', url: `/v1/subscribers/${subscriberId}`, headers: headersOf.get(who), payload: { tags: { plan: 'pro' } } })
    const byEditor = await patch('user:editor')
    expect(byEditor.statusCode).toBe(200)
    expect(byEditor.json().endpoint).toBe(maskEndpoint(endpoint))
    expect((await patch('key:subscribers')).json().endpoint).toBe(endpoint)
  })

  it('the masked form unsubscribes nobody', async () => {
    const res = await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${p.id}`, payload: { endpoint: maskEndpoint(endpoint) } })
    expect(res.statusCode).toBe(200)
    expect((await get(`/v1/subscribers/${subscriberId}`, 'key:full')).json().status).toBe('active')
  })
})

describe('webhook URLs', () => {
  const whole = ['user:owner', 'user:admin', 'key:full', 'key:webhooks']
  const masked = ['user:editor', 'user:viewer']

  it.each(whole)('%s sees them whole in the list and one webhook', async (who) => {
    expect((await get('/v1/webhooks', who)).json().webhooks[0].url).toBe(WEBHOOK_URL)
    expect((await get(`/v1/webhooks/${webhookId}`, who)).json().url).toBe(WEBHOOK_URL)
  })

  it.each(masked)('%s sees the origin only, in the list, one webhook and its delivery log', async (who) => {
    const list = await get('/v1/webhooks', who)
    expect(list.statusCode).toBe(200)
    expect(list.json().webhooks[0].url).toBe('https://hooks.example.com/…')
    const one = await get(`/v1/webhooks/${webhookId}`, who)
    expect(one.json().url).toBe('https://hooks.example.com/…')
    expect(one.body).not.toContain('s3cr3t')
    const log = await get(`/v1/webhooks/${webhookId}/deliveries`, who)
    expect(log.statusCode).toBe(200)
    expect(log.body).not.toContain('s3cr3t')
  })

  it('the audit log (owners, admins, full keys) holds the host of a webhook, never its path, nor any endpoint', async () => {
    const entries = await get('/v1/audit-log', 'user:owner')
    expect(entries.statusCode).toBe(200)
    expect(entries.body).toContain('hooks.example.com')
    expect(entries.body).not.toContain('s3cr3t')
    expect(entries.body).not.toContain(endpoint)
  })
})

describe('API key prefixes', () => {
  it('anyone is shown hk_live_ and 6 characters of a key, the same in the key list and the audit log', async () => {
    const made = (await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: p.auth, payload: { name: 'shown' } })).json()
    const shown = made.api_key.slice(0, 'hk_live_'.length + 6)
    expect(made.prefix).toBe(shown)
    const listed = (await get('/v1/api-keys', 'user:owner')).json().api_keys.find((k: { id: string }) => k.id === made.id)
    expect(listed.prefix).toBe(shown)
    // The key acts, so the audit log names it.
    await t.app.inject({ method: 'POST', url: '/v1/groups', headers: { authorization: `Bearer ${made.api_key}` }, payload: { name: 'By shown' } })
    const entries = (await get(`/v1/audit-log?actor_id=${made.id}`, 'user:owner')).json().entries
    expect(entries.map((e: { actor: { label: string } }) => e.actor.label)).toEqual([`shown (${shown}…)`])
    // The 12-character lookup prefix (the 7th character on) appears nowhere.
    const lookup = made.api_key.slice('hk_live_'.length, 'hk_live_'.length + 12)
    expect(JSON.stringify(entries)).not.toContain(lookup)
  })
})
