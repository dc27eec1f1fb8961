// Every change the API and the dashboard make records exactly one audit entry
// (issue 13): the right action, actor, target, IP and User-Agent; a request
// that fails (400, 404, 409) records nothing; a dry run and an idempotent
// replay record nothing; and the entry is written in the change's own
// transaction (an entry that cannot be written takes the change with it).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { addMember, signIn, type SignedIn } from '../../test/support/members.ts'
import { startWebhookReceiver, type WebhookReceiver } from '../../test/support/webhook-receiver.ts'
import { subscribe, subscription } from '../subscribers/subscribers.fixtures.ts'
import { MemoryRateLimiter } from '../platform/http/rate-limit.ts'
import type { AuditRow } from './audit.store.ts'

const IP = '203.0.113.7'
const UA = 'audit-test/1.0'
const DAY = 86_400_000
const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-forwarded-for': IP, 'user-agent': UA }

let t: TestApp
let p: TestProject
let receiver: WebhookReceiver
let key: Record<string, string>
let owner: SignedIn
let ownerId: string
/** The newest entry id seen so far: each check reads the entries after it. */
let seen = ''

/** A row of audit_log as the table holds it (the store's row, without the joined labels). */
type Row = Omit<AuditRow, 'actor_email' | 'actor_key_name' | 'actor_key_prefix' | 'created_at'>

beforeAll(async () => {
  // inject's requests come from 127.0.0.1: trusted as the proxy, its X-Forwarded-For stands for the client's address.
  t = await createTestApp({ HERALD_TRUST_PROXY: '127.0.0.1' })
  receiver = await startWebhookReceiver()
  p = await t.project({ plan: 'plus' })
  key = { ...p.auth, 'x-forwarded-for': IP, 'user-agent': UA }
  ownerId = await addMember(t, p.id, 'owner@example.com', 'owner')
  owner = await signIn(t, 'owner@example.com')
  await newEntries()
})
afterAll(async () => {
  await receiver.close()
  await t.close()
})
beforeEach(() => {
  t.ctx.rateLimiter = new MemoryRateLimiter()
})

/** Entries of the project written since the last call. */
async function newEntries(): Promise<Row[]> {
  const rows = (await t.ctx.db.query<Row>('SELECT * FROM audit_log WHERE project_id = $1 AND id > $2 ORDER BY id', [p.id, seen])).rows
  if (rows.length > 0) seen = rows[rows.length - 1].id
  return rows
}

async function call(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, headers: Record<string, string> = key) {
  return t.app.inject({ method, url, headers, payload: payload as object })
}

/** The request succeeds and records exactly one entry like `expected`, by the project's key from IP with UA. */
async function recordsOne(res: { statusCode: number; body: string }, expected: Partial<Row>, actor: Partial<Row> = { actor_type: 'key', actor_id: p.apiKeyId }): Promise<Row> {
  expect(res.statusCode, res.body).toBeLessThan(300)
  const rows = await newEntries()
  expect(rows).toHaveLength(1)
  expect(rows[0]).toMatchObject({ ip: IP, user_agent: UA, ...actor, ...expected })
  return rows[0]
}

async function recordsNone(res: { statusCode: number; body: string }, status: number): Promise<void> {
  expect(res.statusCode, res.body).toBe(status)
  expect(await newEntries()).toEqual([])
}

describe('broadcasts', () => {
  it('send, schedule, cancel and stop each record one entry; dry runs, replays and refusals none', async () => {
    const notification = { title: 'Sale', body: 'Half off' }
    const sent = await call('POST', '/v1/send', { target: { type: 'all' }, notification })
    const entry = await recordsOne(sent, { action: 'broadcast.send', target_type: 'broadcast', target_id: sent.json().broadcast_id })
    expect(entry.details).toEqual({ target: 'all', audience: 0, source: 'api' })
    // The notification's text stays on the broadcast, out of the log.
    expect(JSON.stringify(entry)).not.toContain('Half off')

    await recordsNone(await call('POST', '/v1/send', { target: { type: 'all' }, notification, dry_run: true }), 200)
    await recordsNone(await call('POST', '/v1/send', { target: { type: 'group', group_id: 'grp_nope' }, notification }), 404)

    const idem = { ...key, 'idempotency-key': 'order-1' }
    const first = await call('POST', '/v1/send', { target: { type: 'all' }, notification }, idem)
    await recordsOne(first, { action: 'broadcast.send', target_id: first.json().broadcast_id })
    const replay = await call('POST', '/v1/send', { target: { type: 'all' }, notification }, idem)
    expect(replay.headers['idempotent-replayed']).toBe('true')
    await recordsNone(replay, 202)

    const at = Date.now() + DAY
    const scheduled = await call('POST', '/v1/send', { target: { type: 'all' }, notification, scheduled_at: at })
    const id = scheduled.json().broadcast_id
    expect((await recordsOne(scheduled, { action: 'broadcast.schedule', target_id: id })).details).toMatchObject({ scheduled_at: at })
    await recordsOne(await call('DELETE', `/v1/broadcasts/${id}`), { action: 'broadcast.cancel', target_id: id })
    await recordsNone(await call('DELETE', `/v1/broadcasts/${id}`), 409)

    const pending = (await call('POST', '/v1/send', { target: { type: 'all' }, notification })).json().broadcast_id
    await newEntries()
    expect((await recordsOne(await call('POST', `/v1/broadcasts/${pending}/stop`), { action: 'broadcast.stop', target_id: pending })).details).toEqual({ was: 'pending' })
    await recordsNone(await call('POST', `/v1/broadcasts/${pending}/stop`), 409)
    await recordsNone(await call('POST', '/v1/broadcasts/bdc_00000000000000000000000000/stop'), 404)
  })
})

describe('groups and subscribers', () => {
  it('group create, update, members add and remove (one entry per request, with a count), delete; refusals none', async () => {
    const created = await call('POST', '/v1/groups', { name: 'Fans' })
    const group = created.json().id
    await recordsOne(created, { action: 'group.create', target_type: 'group', target_id: group, details: { name: 'Fans' } })
    await recordsNone(await call('POST', '/v1/groups', { name: 'Fans' }), 409)
    await recordsNone(await call('POST', '/v1/groups', { name: '' }), 400)

    await recordsOne(await call('PATCH', `/v1/groups/${group}`, { name: 'Friends', description: 'old and new' }), {
      action: 'group.update', target_id: group, details: { fields: ['name', 'description'], name: 'Friends' },
    })
    await recordsNone(await call('PATCH', `/v1/groups/${group}`, {}), 200)
    await recordsNone(await call('PATCH', '/v1/groups/grp_00000000000000000000000000', { name: 'x' }), 404)

    const subs = [await subscribe(t, p), await subscribe(t, p), await subscribe(t, p)]
    await newEntries()
    await recordsOne(await call('POST', `/v1/groups/${group}/subscribers`, { subscriber_ids: [...subs, 'sub_other'] }), {
      action: 'group.members.add', target_id: group, details: { requested: 4, count: 3 },
    })
    await recordsOne(await call('DELETE', `/v1/groups/${group}/subscribers/${subs[0]}`), {
      action: 'group.members.remove', target_id: group, details: { subscriber_id: subs[0], count: 1 },
    })
    // Not a member: still one entry, but the id given is not echoed into the log.
    await recordsOne(await call('DELETE', `/v1/groups/${group}/subscribers/sub_given`), { action: 'group.members.remove', details: { count: 0 } })
    await recordsOne(await call('DELETE', `/v1/groups/${group}`), { action: 'group.delete', target_id: group })
    await recordsNone(await call('DELETE', `/v1/groups/${group}`), 404)
  })

  it('tags and erasures by id, endpoint and external_id; the endpoint never enters the log', async () => {
    const one = await subscribe(t, p, { external_id: 'u-1' })
    const body = subscription({ external_id: 'u-2' })
    const two = (await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${p.id}`, payload: body })).json().id
    await subscribe(t, p, { external_id: 'u-3' })
    await subscribe(t, p, { external_id: 'u-3' })
    await newEntries()

    await recordsOne(await call('PATCH', `/v1/subscribers/${one}`, { tags: { plan: 'gold' } }), {
      action: 'subscriber.tags', target_type: 'subscriber', target_id: one, details: { keys: ['plan'], merge: false, count: 1 },
    })
    await recordsNone(await call('PATCH', '/v1/subscribers/by-external-id/nobody', { tags: { a: 1 } }), 404)
    await recordsOne(await call('DELETE', `/v1/subscribers/${one}`), { action: 'subscriber.erase', target_id: one, details: { by: 'id', count: 1 } })
    await recordsNone(await call('DELETE', `/v1/subscribers/${one}`), 404)

    const byEndpoint = await recordsOne(await call('DELETE', '/v1/subscribers/by-endpoint', { endpoint: body.endpoint }), {
      action: 'subscriber.erase', target_type: 'subscriber', target_id: two, details: { by: 'endpoint', count: 1 },
    })
    expect(JSON.stringify(byEndpoint)).not.toContain(String(body.endpoint))
    await recordsOne(await call('DELETE', '/v1/subscribers/by-external-id/u-3'), {
      action: 'subscriber.erase', target_type: 'external_id', target_id: 'u-3', details: { by: 'external_id', count: 2 },
    })
    await recordsOne(await call('DELETE', '/v1/subscribers/by-external-id/u-404'), { action: 'subscriber.erase', target_id: null, details: { by: 'external_id', count: 0 } })
  })
})

describe('webhooks', () => {
  it('create, update, test, rotate and delete; never a secret or a URL path', async () => {
    const url = `${receiver.url}/hook/secret-path-token`
    const created = await call('POST', '/v1/webhooks', { url, events: ['failed'] })
    const id = created.json().id
    const entry = await recordsOne(created, { action: 'webhook.create', target_type: 'webhook', target_id: id, details: { host: new URL(url).host, events: ['failed'] } })
    await recordsNone(await call('POST', '/v1/webhooks', { url: 'ftp://example.com' }), 400)

    await recordsOne(await call('PATCH', `/v1/webhooks/${id}`, { enabled: false }), { action: 'webhook.update', target_id: id, details: { fields: ['enabled'], enabled: false } })
    await recordsNone(await call('PATCH', '/v1/webhooks/whk_00000000000000000000000000', { enabled: false }), 404)
    const tested = await call('POST', `/v1/webhooks/${id}/test`)
    await recordsOne(tested, { action: 'webhook.test', target_id: id, details: { delivered: true, response_status: 200, event_id: expect.stringMatching(/^evt_/) } })
    const rotated = await call('POST', `/v1/webhooks/${id}/rotate-secret`)
    const rotation = await recordsOne(rotated, { action: 'webhook.rotate_secret', target_id: id, details: {} })
    await recordsOne(await call('DELETE', `/v1/webhooks/${id}`), { action: 'webhook.delete', target_id: id })
    await recordsNone(await call('DELETE', `/v1/webhooks/${id}`), 404)

    const logged = JSON.stringify([entry, rotation])
    expect(logged).not.toContain('secret-path-token')
    expect(logged).not.toContain(created.json().secret)
    expect(logged).not.toContain(rotated.json().secret)
  })
})

describe('people, keys and project settings', () => {
  it('an owner\'s session: invite, role change, invite revoke, removal; the last owner\'s removal records nothing', async () => {
    const session = { ...owner.headers, 'x-forwarded-for': IP, 'user-agent': UA }
    const asOwner = { actor_type: 'user' as const, actor_id: ownerId }
    const invited = await call('POST', '/v1/members/invites', { email: 'Ed@Example.com', role: 'editor' }, session)
    const invite = await recordsOne(invited, { action: 'member.invite', target_type: 'invite', target_id: invited.json().id, details: { email: 'ed@example.com', role: 'editor', invite_id: invited.json().id, replaced: 0 } }, asOwner)
    expect(JSON.stringify(invite)).not.toContain(invited.json().invite_url.split('/').pop())
    await recordsNone(await call('POST', '/v1/members/invites', { email: 'owner@example.com', role: 'viewer' }, session), 409)
    await recordsOne(await call('DELETE', `/v1/members/invites/${invited.json().id}`, undefined, session), { action: 'invite.revoke', target_type: 'invite', target_id: invited.json().id }, asOwner)

    const vera = await addMember(t, p.id, 'vera@example.com', 'viewer')
    await newEntries()
    await recordsOne(await call('PATCH', `/v1/members/${vera}`, { role: 'admin' }, session), {
      action: 'member.role_change', target_id: vera, details: { email: 'vera@example.com', from: 'viewer', to: 'admin', invites_revoked: 0 },
    }, asOwner)
    await recordsOne(await call('DELETE', `/v1/members/${vera}`, undefined, session), { action: 'member.remove', target_id: vera, details: { email: 'vera@example.com', role: 'admin', invites_revoked: 0 } }, asOwner)
    await recordsNone(await call('DELETE', `/v1/members/${ownerId}`, undefined, session), 409)
  })

  it('PATCH /v1/me by a member, and the operator\'s project update, key create and revoke and invite (actor operator)', async () => {
    const session = { ...owner.headers, 'x-forwarded-for': IP, 'user-agent': UA }
    await recordsOne(await call('PATCH', '/v1/me', { default_icon: 'https://cdn.example.com/i.png' }, session), {
      action: 'project.update', target_type: 'project', target_id: p.id, details: { fields: ['default_icon'], default_icon: 'https://cdn.example.com/i.png' },
    }, { actor_type: 'user', actor_id: ownerId })
    await recordsNone(await call('PATCH', '/v1/me', { default_icon: 'http://insecure.example.com/i.png' }, session), 400)

    const operator = { actor_type: 'operator' as const, actor_id: null }
    await recordsOne(await call('PATCH', `/admin/v1/projects/${p.id}`, { plan: 'pro', limits: { groups: 7 } }, admin), {
      action: 'project.update', target_id: p.id, details: { fields: ['plan', 'limits'], plan: 'pro', limits: { groups: 7 } },
    }, operator)
    const made = await call('POST', `/admin/v1/projects/${p.id}/api-keys`, { name: 'ci' }, admin)
    const keyEntry = await recordsOne(made, { action: 'api_key.create', target_type: 'api_key', target_id: made.json().id, details: { name: 'ci' } }, operator)
    expect(JSON.stringify(keyEntry)).not.toContain(made.json().api_key)
    await recordsOne(await call('DELETE', `/admin/v1/projects/${p.id}/api-keys/${made.json().id}`, undefined, admin), { action: 'api_key.revoke', target_id: made.json().id }, operator)
    await recordsNone(await call('DELETE', `/admin/v1/projects/${p.id}/api-keys/${made.json().id}`, undefined, admin), 200)
    await recordsNone(await call('DELETE', `/admin/v1/projects/${p.id}/api-keys/key_nope`, undefined, admin), 404)
    await recordsOne(await call('POST', `/admin/v1/projects/${p.id}/members`, { email: 'second@example.com', role: 'owner' }, admin), { action: 'member.invite', details: { email: 'second@example.com', role: 'owner', invite_id: expect.stringMatching(/^inv_/), replaced: 0 } }, operator)
  })
})

describe('the project\'s own keys', () => {
  it('/v1/api-keys create and revoke by an owner\'s session: name and scope, never the key; refusals and a second revoke none', async () => {
    const session = { ...owner.headers, 'x-forwarded-for': IP, 'user-agent': UA }
    const asOwner = { actor_type: 'user' as const, actor_id: ownerId }
    const made = await call('POST', '/v1/api-keys', { name: 'deploy bot', scope: 'send' }, session)
    const entry = await recordsOne(made, { action: 'api_key.create', target_type: 'api_key', target_id: made.json().id, details: { name: 'deploy bot', scope: 'send' } }, asOwner)
    expect(JSON.stringify(entry)).not.toContain(made.json().api_key)
    await recordsNone(await call('POST', '/v1/api-keys', { scope: 'everything' }, session), 400)
    await recordsOne(await call('DELETE', `/v1/api-keys/${made.json().id}`, undefined, session), { action: 'api_key.revoke', target_id: made.json().id }, asOwner)
    await recordsNone(await call('DELETE', `/v1/api-keys/${made.json().id}`, undefined, session), 200)
    await recordsNone(await call('DELETE', '/v1/api-keys/key_00000000000000000000000000', undefined, session), 404)
  })
})

describe('the same transaction', () => {
  it('an entry that cannot be written takes its change with it', async () => {
    // A trigger refuses one action's entries: the group it records must not exist afterwards.
    await t.ctx.db.exec(`
      CREATE FUNCTION refuse_group_create() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.action = 'group.create' THEN RAISE EXCEPTION 'audit refused'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER refuse_group_create BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION refuse_group_create();`)
    try {
      const res = await call('POST', '/v1/groups', { name: 'Never' })
      expect(res.statusCode).toBe(500)
      expect((await t.ctx.db.query('SELECT 1 FROM groups WHERE project_id = $1 AND name = $2', [p.id, 'Never'])).rows).toEqual([])
      expect(await newEntries()).toEqual([])
    } finally {
      await t.ctx.db.exec('DROP TRIGGER refuse_group_create ON audit_log; DROP FUNCTION refuse_group_create();')
    }
  })
})
