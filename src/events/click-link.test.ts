// Declarative Web Push end to end (issue 12): the form in what the local push
// service decrypts, GET /c/:token recording the click (with its action) and
// redirecting only to the URL the broadcast carries, forged and foreign
// tokens refused with a 404, and the dry run's size exactly what is sent.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { send, subscribeBrowser, waitForBroadcast } from '../../test/support/delivery.ts'
import { clickLinkKey, clickToken } from '../broadcasts/click-link.ts'
import { MAX_PLAINTEXT_BYTES } from '../platform/webpush/record-size.mjs'

const PUBLIC_URL = 'http://localhost:3000'
let t: TestApp
let push: PushService
let project: TestProject

beforeAll(async () => {
  push = await startPushService()
  t = await createTestApp({ HERALD_ENCRYPT_THREADS: '0', HERALD_PUBLIC_URL: PUBLIC_URL }, { worker: true })
})
afterAll(async () => {
  await t.close()
  await push.close()
})
beforeEach(async () => {
  push.reset()
  project = await t.project({ plan: 'plus' })
})

interface Declarative {
  web_push: number
  notification: { title: string; body: string; navigate: string; tag: string; icon?: string; image?: string; actions?: Array<{ action: string; title: string; navigate: string }>; data: unknown }
}

/** Sends to one subscriber and returns the broadcast id and the payload the push service decrypted. */
async function sendOne(notification: Record<string, unknown>, p = project) {
  await subscribeBrowser(t, p, push)
  const id = await send(t, p, { target: { type: 'all' }, notification })
  await waitForBroadcast(t, p, id)
  const received = push.received.find((r) => (r.payload as { broadcast_id: string }).broadcast_id === id)!
  return { id, payload: received.payload as Record<string, unknown> & Partial<Declarative>, bodyBytes: received.bodyBytes }
}

async function open(url: string) {
  return t.app.inject({ method: 'GET', url: url.startsWith(PUBLIC_URL) ? url.slice(PUBLIC_URL.length) : url })
}

async function view(id: string, p = project) {
  return (await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: p.auth })).json()
}

async function vapidPrivate(projectId: string): Promise<string> {
  return (await t.database.db.query<{ vapid_private: string }>('SELECT vapid_private FROM projects WHERE id = $1', [projectId])).rows[0].vapid_private
}

const notification = {
  title: 'Sale', body: 'Half off today', url: 'https://shop.example.com/sale',
  icon: 'https://cdn.example.com/i.png', image: 'https://cdn.example.com/b.png',
  actions: [{ action: 'buy', title: 'Buy', url: 'https://shop.example.com/buy' }, { action: 'later', title: 'Later' }],
}

describe('Declarative Web Push', () => {
  it("carries web_push 8030 beside Herald's own fields, with click links through Herald", async () => {
    const { id, payload } = await sendOne(notification)
    expect(payload).toMatchObject({ v: 1, project_id: project.id, broadcast_id: id, title: 'Sale', body: 'Half off today', url: notification.url, actions: notification.actions })
    expect(payload.web_push).toBe(8030)
    const n = payload.notification!
    expect(n).toEqual({
      title: 'Sale', body: 'Half off today', tag: id, icon: notification.icon, image: notification.image,
      navigate: expect.stringMatching(new RegExp(`^${PUBLIC_URL}/c/${id}\\.[A-Za-z0-9_-]{22}$`)),
      actions: [
        { action: 'buy', title: 'Buy', navigate: expect.stringMatching(new RegExp(`^${PUBLIC_URL}/c/${id}\\.buy\\.[A-Za-z0-9_-]{22}$`)) },
        { action: 'later', title: 'Later', navigate: expect.stringMatching(new RegExp(`^${PUBLIC_URL}/c/${id}\\.later\\.`)) },
      ],
      data: { herald: 1, project_id: project.id, broadcast_id: id, url: notification.url },
    })
  })

  it('GET /c/:token records the click (with its action) and redirects to the URL the broadcast carries', async () => {
    const { id, payload } = await sendOne(notification)
    const n = payload.notification!
    const plain = await open(n.navigate)
    expect(plain.statusCode).toBe(302)
    expect(plain.headers.location).toBe('https://shop.example.com/sale')
    expect(plain.headers['cache-control']).toBe('no-store')
    expect(plain.headers['referrer-policy']).toBe('no-referrer')
    expect((await open(n.actions![0].navigate)).headers.location).toBe('https://shop.example.com/buy')
    expect((await open(n.actions![1].navigate)).headers.location).toBe('https://shop.example.com/sale') // no url of its own
    expect(await view(id)).toMatchObject({ clicked: 3, clicked_by_action: { buy: 1, later: 1 } })
    const events = await t.database.db.query(`SELECT meta FROM events WHERE broadcast_id = $1 AND type = 'clicked' ORDER BY id`, [id])
    expect(events.rows.map((r) => r.meta)).toEqual([null, { action: 'buy' }, { action: 'later' }])
  })

  it('refuses forged, altered and foreign tokens with 404 click_link_not_found, counting nothing', async () => {
    const { id, payload } = await sendOne(notification)
    const token = payload.notification!.navigate.split('/c/')[1]
    const mac = token.split('.').pop()!
    const key = clickLinkKey(await vapidPrivate(project.id))
    const other = await t.project({ plan: 'plus' })
    const { id: theirs } = await sendOne(notification, other)
    const flip = (s: string) => s.slice(0, -1) + (s.endsWith('A') ? 'B' : 'A')
    const bad = [
      flip(token), // MAC's last character changed (only its spare bits, for some: still refused)
      token.slice(0, -2) + (token.at(-2) === 'A' ? 'B' : 'A') + token.at(-1), // MAC altered
      `${id}.buy.${mac}`, // the plain link's MAC on a button
      `${id}.nope.${mac}`, // an action the broadcast does not have
      `${theirs}.${mac}`, // another project's broadcast under this one's MAC
      // Open redirect: a link to a URL the broadcast does not carry, even signed with the right key.
      clickToken(key, { project_id: project.id, broadcast_id: id, action: null, url: 'https://evil.example/' }),
      // Another project's broadcast signed with this project's key.
      clickToken(key, { project_id: other.id, broadcast_id: theirs, action: null, url: notification.url }),
      clickToken(key, { project_id: project.id, broadcast_id: 'bdc_0000000000zzzzzzzzzzzzzzzz', action: null, url: notification.url }),
      'x', `${id}`, `${id}..${mac}`, `${id}.${mac}.extra`, encodeURIComponent('<script>'), `${id}.${'a'.repeat(33)}.${mac}`,
    ]
    for (const tokenValue of bad) {
      const res = await open(`/c/${tokenValue}`)
      expect(res.statusCode, tokenValue).toBe(404)
      expect(res.json().error.code, tokenValue).toBe('click_link_not_found')
    }
    // Refused before any look-up, as on every route: too long, or a NUL.
    for (const refused of ['a'.repeat(500), '%00']) {
      const res = await open(`/c/${refused}`)
      expect(res.statusCode).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
    }
    expect(await view(id)).toMatchObject({ clicked: 0 })
    expect(await view(theirs, other)).toMatchObject({ clicked: 0 })
  })

  it("resolves paths against the project's domain; without one, sends no declarative form", async () => {
    const relative = { title: 'Home', body: 'Come back', url: '/sale?x=1', actions: [{ action: 'cart', title: 'Cart', url: '/cart' }] }
    const without = await sendOne(relative)
    expect(without.payload).not.toHaveProperty('web_push')
    expect(without.payload).toEqual({ v: 1, project_id: project.id, broadcast_id: without.id, ...relative })

    await t.database.db.query(`UPDATE projects SET domain = 'shop.example.com' WHERE id = $1`, [project.id])
    push.reset()
    const { id, payload } = await sendOne(relative)
    expect(payload.url).toBe('/sale?x=1') // Herald's own field as sent: the service worker resolves it on the site
    expect(payload.notification!.data).toEqual({ herald: 1, project_id: project.id, broadcast_id: id, url: 'https://shop.example.com/sale?x=1' })
    expect((await open(payload.notification!.navigate)).headers.location).toBe('https://shop.example.com/sale?x=1')
    expect((await open(payload.notification!.actions![0].navigate)).headers.location).toBe('https://shop.example.com/cart')
  })

  it('a dry run reports the exact size of what is sent, and whether it is declarative', async () => {
    for (const n of [notification, { title: 'Rel', body: 'b', url: '/x' }, { title: 'Long', body: '€'.repeat(1100), url: 'https://shop.example.com/l' }]) {
      const dry = (await t.app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: { target: { type: 'all' }, notification: n, dry_run: true } })).json()
      push.reset()
      const { payload, bodyBytes } = await sendOne(n)
      expect(dry.payload_bytes, n.title).toBe(bodyBytes)
      expect(dry.declarative, n.title).toBe(payload.web_push === 8030)
      expect(dry.fetch, n.title).toBe(payload.fetch === true)
    }
  })

  it('when the two forms do not fit together: first a lean declarative form, then the fetch stub with it, the body cut to fit', async () => {
    // Twice the body fits, but not with the icon, image and buttons twice too:
    // Herald's fields in full, the declarative form without icon, image and buttons.
    const { payload: lean } = await sendOne({ ...notification, body: 'x'.repeat(1560) })
    expect(lean).toMatchObject({ title: 'Sale', body: 'x'.repeat(1560), actions: notification.actions, web_push: 8030 })
    expect(lean.notification).not.toHaveProperty('icon')
    expect(lean.notification).not.toHaveProperty('actions')
    expect(lean.notification!.body).toBe('x'.repeat(1560))

    // Too long even alone: the fetch stub, and a declarative form whose body is cut, ending in "…".
    push.reset()
    const { id, payload: stub } = await sendOne({ ...notification, body: '€'.repeat(2048) })
    expect(stub).toMatchObject({ v: 1, project_id: project.id, broadcast_id: id, fetch: true, web_push: 8030 })
    expect(stub).not.toHaveProperty('title')
    const body = stub.notification!.body
    expect(body.endsWith('…')).toBe(true)
    expect(body.length).toBeGreaterThan(1000)
    expect(Buffer.byteLength(JSON.stringify(stub))).toBeLessThanOrEqual(MAX_PLAINTEXT_BYTES)
    expect(Buffer.byteLength(JSON.stringify({ ...stub, notification: { ...stub.notification, body: body.slice(0, -1) + '€€' } }))).toBeGreaterThan(MAX_PLAINTEXT_BYTES)
  })
})
