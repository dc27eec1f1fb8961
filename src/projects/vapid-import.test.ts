// Importing a VAPID key pair (issue 23): at project creation and by replacing a
// new project's pair, checked on P-256, and really used to sign pushes.
import { createECDH } from 'node:crypto'
import webpush from 'web-push'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_TOKEN, createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { send, waitForBroadcast } from '../../test/support/delivery.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { checkVapidKeyPair } from './vapid-keys.ts'

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
let t: TestApp
let push: PushService

beforeAll(async () => {
  push = await startPushService()
  t = await createTestApp({}, { worker: true })
})
afterAll(async () => {
  await t?.close()
  await push?.close()
})

function create(body: Record<string, unknown>) {
  return t.app.inject({ method: 'POST', url: '/admin/v1/projects', headers: admin, payload: body })
}
function replace(id: string, body: Record<string, unknown>) {
  return t.app.inject({ method: 'PUT', url: `/admin/v1/projects/${id}/vapid-keys`, headers: admin, payload: body })
}
function issuePaths(res: { json(): any }): string[] {
  return res.json().error.issues.map((issue: { path: string }) => issue.path)
}
async function storedKeys(id: string) {
  return (await t.ctx.db.query<{ vapid_public: string; vapid_private: string }>('SELECT vapid_public, vapid_private FROM projects WHERE id = $1', [id])).rows[0]
}

/** A point on no curve Herald knows: a valid pair's x with y changed by one bit. */
function offCurve(publicKey: string): string {
  const point = Buffer.from(publicKey, 'base64url')
  point[64] ^= 1
  return point.toString('base64url')
}

describe('checkVapidKeyPair', () => {
  it('accepts what web-push generate-vapid-keys prints, padded or not', () => {
    const keys = webpush.generateVAPIDKeys()
    expect(checkVapidKeyPair(keys.privateKey, keys.publicKey)).toEqual(keys)
    expect(checkVapidKeyPair(`${keys.privateKey}=`, `${keys.publicKey}=`)).toEqual(keys)
  })

  it('refuses a zero private key and one not below the curve order, naming vapid_private', () => {
    const { publicKey } = webpush.generateVAPIDKeys()
    for (const bytes of [Buffer.alloc(32), Buffer.alloc(32, 0xff)]) {
      expect(() => checkVapidKeyPair(bytes.toString('base64url'), publicKey)).toThrow(/vapid_private: is not a valid P-256 private key/)
    }
  })

  it('refuses a compressed point, naming vapid_public', () => {
    const ecdh = createECDH('prime256v1')
    ecdh.generateKeys()
    const compressed = Buffer.concat([ecdh.getPublicKey(null, 'compressed'), Buffer.alloc(32)]).toString('base64url')
    expect(() => checkVapidKeyPair(ecdh.getPrivateKey().toString('base64url').padStart(43, 'A'), compressed)).toThrow(/vapid_public: must be an uncompressed point/)
  })
})

describe('POST /admin/v1/projects with vapid_private and vapid_public', () => {
  it('creates the project with the imported pair, stored as given', async () => {
    const keys = webpush.generateVAPIDKeys()
    const res = await create({ name: 'Moved', vapid_private: keys.privateKey, vapid_public: keys.publicKey })
    expect(res.statusCode).toBe(201)
    expect(res.json().vapid_public).toBe(keys.publicKey)
    expect(await storedKeys(res.json().id)).toEqual({ vapid_public: keys.publicKey, vapid_private: keys.privateKey })
    const browser = await t.app.inject({ method: 'GET', url: `/v1/vapid-public-key?project=${res.json().id}` })
    expect(browser.body).toContain(keys.publicKey)
  })

  it('refuses a mismatched pair with 400 naming vapid_public, and creates nothing', async () => {
    const a = webpush.generateVAPIDKeys()
    const b = webpush.generateVAPIDKeys()
    const before = (await t.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM projects')).rows[0].n
    const res = await create({ name: 'Mixed', vapid_private: a.privateKey, vapid_public: b.publicKey })
    expect(res.statusCode).toBe(400)
    expect(res.json().error.code).toBe('invalid_request')
    expect(issuePaths(res)).toEqual(['vapid_public'])
    expect(res.json().error.message).toContain('not the public key of vapid_private')
    expect((await t.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM projects')).rows[0].n).toBe(before)
  })

  it('refuses malformed keys, naming the field', async () => {
    const keys = webpush.generateVAPIDKeys()
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ vapid_private: 'not base64!', vapid_public: keys.publicKey }, 'vapid_private', /base64url/],
      [{ vapid_private: keys.privateKey.slice(0, 20), vapid_public: keys.publicKey }, 'vapid_private', /32 bytes/],
      [{ vapid_private: keys.privateKey, vapid_public: keys.publicKey.slice(0, 60) }, 'vapid_public', /65 bytes/],
      [{ vapid_private: keys.privateKey, vapid_public: offCurve(keys.publicKey) }, 'vapid_public', /not a point on the P-256 curve/],
      [{ vapid_private: keys.privateKey }, 'vapid_public', /required with vapid_private/],
      [{ vapid_public: keys.publicKey }, 'vapid_private', /required with vapid_public/],
    ]
    for (const [body, field, reason] of cases) {
      const res = await create({ name: 'Bad', ...body })
      expect(res.statusCode, JSON.stringify(body)).toBe(400)
      expect(issuePaths(res)).toEqual([field])
      expect(res.json().error.message).toMatch(reason)
    }
  })

  it('signs pushes with the imported key: the local push service verifies them against it', async () => {
    const keys = webpush.generateVAPIDKeys()
    const created = (await create({ name: 'Signed', vapid_private: keys.privateKey, vapid_public: keys.publicKey })).json()
    const project: TestProject = { id: created.id, apiKey: created.api_key, apiKeyId: '', vapidPublic: created.vapid_public, auth: { authorization: `Bearer ${created.api_key}` } }
    // A subscription bound to the imported public key, as a browser would make it with the old provider's key.
    const subscription = push.createSubscription({ applicationServerKey: keys.publicKey })
    const sub = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: subscription })
    expect(sub.statusCode).toBe(201)
    push.reset()
    const id = await send(t, project, { target: { type: 'all' }, notification: { title: 'Hello', body: 'from the imported key' } })
    const state = await waitForBroadcast(t, project, id)
    expect(state).toMatchObject({ status: 'sent', delivered: 1, failed: 0 })
    expect(push.rejected).toEqual([])
    expect(push.receivedFor(subscription.endpoint)).toHaveLength(1)
  })
})

describe('PUT /admin/v1/projects/:id/vapid-keys', () => {
  it('replaces the pair of a project with no subscriber, and records it in the audit log without the private key', async () => {
    const project = await t.project()
    const keys = webpush.generateVAPIDKeys()
    const res = await replace(project.id, { vapid_private: keys.privateKey, vapid_public: keys.publicKey })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ id: project.id, vapid_public: keys.publicKey })
    expect(await storedKeys(project.id)).toEqual({ vapid_public: keys.publicKey, vapid_private: keys.privateKey })
    const audit = await t.ctx.db.query<{ action: string; details: unknown }>("SELECT action, details FROM audit_log WHERE project_id = $1", [project.id])
    expect(audit.rows).toEqual([{ action: 'project.update', details: { fields: ['vapid_keys'], vapid_public: keys.publicKey } }])
    expect(JSON.stringify(audit.rows)).not.toContain(keys.privateKey)
  })

  it('refuses once the project has an active subscriber, with 409 vapid_keys_in_use, and keeps the old pair', async () => {
    const project = await t.project()
    const before = await storedKeys(project.id)
    const sub = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: push.createSubscription() })
    expect(sub.statusCode).toBe(201)
    const keys = webpush.generateVAPIDKeys()
    const res = await replace(project.id, { vapid_private: keys.privateKey, vapid_public: keys.publicKey })
    expect(res.statusCode).toBe(409)
    expect(res.json().error).toMatchObject({ code: 'vapid_keys_in_use', active_subscribers: 1 })
    expect(await storedKeys(project.id)).toEqual(before)
  })

  it('refuses a mismatched pair with 400 and an unknown project with 404', async () => {
    const project = await t.project()
    const a = webpush.generateVAPIDKeys()
    const b = webpush.generateVAPIDKeys()
    const bad = await replace(project.id, { vapid_private: a.privateKey, vapid_public: b.publicKey })
    expect(bad.statusCode).toBe(400)
    expect(issuePaths(bad)).toEqual(['vapid_public'])
    expect((await replace('prj_unknown', { vapid_private: a.privateKey, vapid_public: a.publicKey })).statusCode).toBe(404)
  })
})
