// POST /v1/send with "dry_run": true: the answer (audience by push service,
// payload size, fetch), nothing written, plan gates, the monthly cap and rate
// limits as for a real send, each warning when it applies and only then, and
// the OpenAPI document. send.dry-run.twins.test.ts runs every case of the
// other send tests through a dry run too; send.dry-run.delivery.test.ts
// compares a dry run with the pushes a real send delivers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { awayFromWindowEdge } from '../../test/support/rate-window.ts'
import { changedTables, fingerprinter, type Fingerprint } from '../../test/support/db-fingerprint.ts'
import { HEADER_LENGTH, MAX_PLAINTEXT_BYTES } from '../platform/webpush/record-size.mjs'
import { newId } from '../platform/ids.ts'
import { monthKey } from '../projects/push-usage.ts'
import { updateProject } from '../projects/projects.store.ts'
import { dataUrl, insertGroup, insertSubscribers, makeImage, send, sendBody } from './broadcasts.fixtures.ts'
import { BODY_SHOWN_CHARS, TITLE_SHOWN_CHARS } from './dry-run-warnings.ts'

const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE
/** HTTPS, so a URL under it passes the send's media URL rule (the tests' default is http://localhost:3000). */
const CDN = 'https://cdn.herald.test'

let t: TestApp
let fingerprint: () => Promise<Fingerprint>
beforeAll(async () => {
  t = await createTestApp({ HERALD_CDN_URL: CDN })
  fingerprint = await fingerprinter(t.ctx.db)
})
afterAll(async () => {
  await t.close()
})

function dryRun(project: TestProject, body: Record<string, unknown>) {
  return send(t, project, { ...body, dry_run: true })
}

async function dryRunOk(project: TestProject, body: Record<string, unknown>) {
  const res = await dryRun(project, body)
  expect(res.statusCode, res.body).toBe(200)
  return res.json()
}

/** A subscriber on any endpoint (the fixtures' are all FCM). */
async function insertAt(projectId: string, endpoint: string, status = 'active'): Promise<string> {
  const id = newId('sub')
  await t.ctx.db.query(
    `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, status) VALUES ($1, $2, $3, 'p256dh', 'auth', $4)`,
    [id, projectId, `${endpoint}/${id}`, status],
  )
  return id
}

const ENDPOINTS = {
  fcm: 'https://fcm.googleapis.com/fcm/send',
  mozilla: 'https://updates.push.services.mozilla.com/wpush/v2',
  apple: 'https://web.push.apple.com',
  wns: 'https://wns2-par02p.notify.windows.com/w',
  other: 'https://push.example.org/push',
}

describe('POST /v1/send dry run: the answer', () => {
  it('answers 200 with the audience by push service, the push size and fetch; writes nothing', async () => {
    const p = await t.project()
    const other = await t.project()
    for (const [service, endpoint] of Object.entries(ENDPOINTS)) {
      for (let i = 0; i < (service === 'fcm' ? 3 : 1); i++) await insertAt(p.id, endpoint)
    }
    await insertAt(p.id, ENDPOINTS.fcm, 'unsubscribed')
    await insertAt(p.id, ENDPOINTS.apple, 'expired')
    await insertAt(other.id, ENDPOINTS.mozilla)
    const before = await fingerprint()
    const body = sendBody({ notification: { url: '/sale' } })
    const res = await dryRunOk(p, body)
    expect(changedTables(before, await fingerprint())).toEqual([])
    const json = JSON.stringify({ v: 1, project_id: p.id, broadcast_id: newId('bdc'), title: 'Hello', body: 'World', url: '/sale' })
    expect(res).toEqual({
      dry_run: true,
      audience: 7,
      by_push_service: { fcm: 3, mozilla: 1, apple: 1, wns: 1, other: 1 },
      // RFC 8291 aes128gcm, one record: header, the JSON, the 0x02 delimiter, the 16-byte tag.
      payload_bytes: HEADER_LENGTH + Buffer.byteLength(json) + 1 + 16,
      fetch: false,
      // A path and no project domain: no absolute URL to navigate to (docs/decisions.md "Declarative Web Push").
      declarative: false,
      warnings: [expect.objectContaining({ code: 'other_push_service' })],
    })
    expect((await t.app.inject({ method: 'GET', url: '/v1/broadcasts', headers: p.auth })).json().broadcasts).toEqual([])
  })

  it('user and group targets: the same audience as a real send, broken down by push service', async () => {
    const p = await t.project()
    const a = await insertAt(p.id, ENDPOINTS.fcm)
    const b = await insertAt(p.id, ENDPOINTS.mozilla)
    const gone = await insertAt(p.id, ENDPOINTS.wns, 'expired')
    await insertAt(p.id, ENDPOINTS.apple)
    const group = await insertGroup(t.ctx.db, p.id, [a, b, gone])
    await t.ctx.db.query(`UPDATE subscribers SET external_id = 'u1' WHERE id = ANY($1)`, [[a, gone]])
    const byGroup = await dryRunOk(p, sendBody({ target: { type: 'group', group_id: group } }))
    expect(byGroup).toMatchObject({ audience: 2, by_push_service: { fcm: 1, mozilla: 1, apple: 0, wns: 0, other: 0 } })
    const byUser = await dryRunOk(p, sendBody({ target: { type: 'user', external_id: 'u1' } }))
    expect(byUser).toMatchObject({ audience: 1, by_push_service: { fcm: 1, mozilla: 0, apple: 0, wns: 0, other: 0 } })
    for (const [target, audience] of [[{ type: 'group', group_id: group }, 2], [{ type: 'user', external_id: 'u1' }, 1]] as const) {
      const real = await send(t, p, sendBody({ target }))
      const row = await t.ctx.db.query('SELECT audience FROM broadcasts WHERE id = $1', [real.json().broadcast_id])
      expect(row.rows[0].audience).toBe(audience)
    }
  })

  it('"dry_run": false is a real send; a dry_run that is not a boolean is 400 invalid_request', async () => {
    const p = await t.project()
    const real = await send(t, p, sendBody({ dry_run: false }))
    expect(real.statusCode).toBe(202)
    expect(real.json()).toEqual({ broadcast_id: expect.stringMatching(/^bdc_/) })
    for (const bad of ['true', 1, null, {}]) {
      const res = await send(t, p, sendBody({ dry_run: bad }))
      expect(res.statusCode).toBe(400)
      expect(res.json().error.issues.map((issue: { path: string }) => issue.path)).toContain('dry_run')
    }
  })

  it('a scheduled send with data-URL icon and image: checked, counted as of now, nothing stored, reserved or enqueued', async () => {
    const p = await t.project({ plan: 'plus' })
    await insertSubscribers(t.ctx.db, p.id, 2)
    const icon = dataUrl('image/png', await makeImage('png', 64, 64))
    const image = dataUrl('image/jpeg', await makeImage('jpeg', 320, 160))
    const body = sendBody({ notification: { icon, image, url: '/' }, scheduled_at: Date.now() + DAY })
    const before = await fingerprint()
    const res = await dryRunOk(p, body)
    expect(changedTables(before, await fingerprint())).toEqual([])
    expect(res).toMatchObject({ audience: 2, by_push_service: { fcm: 2 }, fetch: false })
    // The hosted URLs are in the payload the size counts, and a data URL is not an unchecked URL.
    expect(res.warnings.map((w: { code: string }) => w.code)).toEqual(['image_not_shown_everywhere', 'audience_counted_now'])
    // The real send then stores both files and reports the same audience.
    const real = await send(t, p, body)
    expect(real.statusCode).toBe(202)
    expect(changedTables(before, await fingerprint()).sort()).toEqual(['audit_log', 'broadcasts', 'jobs', 'media'])
  })
})

describe('POST /v1/send dry run: plan gates, the monthly cap and rate limits as a real send', () => {
  it('image on Free → 403 image_requires_upgrade; scheduling on Hobby → 403 scheduling_requires_upgrade', async () => {
    const free = await t.project({ plan: 'free' })
    const image = await dryRun(free, sendBody({ notification: { image: 'https://cdn.shop.example/b.png' } }))
    expect([image.statusCode, image.json().error.code]).toEqual([403, 'image_requires_upgrade'])
    const hobby = await t.project({ plan: 'hobby' })
    const scheduled = await dryRun(hobby, sendBody({ scheduled_at: Date.now() + DAY }))
    expect([scheduled.statusCode, scheduled.json().error.code]).toEqual([403, 'scheduling_requires_upgrade'])
  })

  it('the monthly cap: an exact fit passes as often as asked and reserves nothing; over the cap → 403 with limit and audience', async () => {
    const p = await t.project({ limits: { monthly_pushes: 3 } })
    await insertSubscribers(t.ctx.db, p.id, 3)
    for (let i = 0; i < 3; i++) expect((await dryRunOk(p, sendBody())).audience).toBe(3)
    const usage = () => t.ctx.db.query('SELECT pushes FROM push_usage WHERE project_id = $1 AND month = $2', [p.id, monthKey(new Date())])
    expect((await usage()).rows.filter((row) => Number(row.pushes) > 0)).toEqual([])
    expect((await send(t, p, sendBody())).statusCode).toBe(202)
    const over = await dryRun(p, sendBody())
    expect(over.statusCode).toBe(403)
    expect(over.json().error).toMatchObject({ code: 'monthly_push_limit_reached', limit: 3, audience: 3 })
    // An empty audience is never refused, dry or not.
    expect((await dryRunOk(p, sendBody({ target: { type: 'user', external_id: 'nobody' } }))).audience).toBe(0)
  })

  it('a dry run is a request like any other for the rate limit', async () => {
    const p = await t.project({ limits: { requests_per_minute: 2 } })
    await awayFromWindowEdge()
    for (const remaining of ['1', '0']) {
      const res = await dryRun(p, sendBody())
      expect([res.statusCode, res.headers['ratelimit-remaining']]).toEqual([200, remaining])
    }
    const limited = await dryRun(p, sendBody())
    expect([limited.statusCode, limited.json().error.code]).toEqual([429, 'rate_limited'])
  })

  it("another project's group → 404 group_not_found, as for a real send", async () => {
    const p = await t.project()
    const other = await t.project()
    const group = await insertGroup(t.ctx.db, other.id, await insertSubscribers(t.ctx.db, other.id, 1))
    const res = await dryRun(p, sendBody({ target: { type: 'group', group_id: group } }))
    expect([res.statusCode, res.json().error.code]).toEqual([404, 'group_not_found'])
  })
})

describe('POST /v1/send dry run: warnings', () => {
  let p: TestProject
  /** A body that draws no warning (one subscriber, a click URL, short text, nothing optional). */
  const quiet = (extra: Record<string, unknown> = {}) => {
    const { notification, ...rest } = extra as { notification?: Record<string, unknown> }
    return sendBody({ notification: { url: '/sale', ...notification }, ...rest })
  }
  async function warnings(body: Record<string, unknown>, project = p): Promise<{ code: string; message: string; path?: string }[]> {
    return (await dryRunOk(project, body)).warnings
  }
  async function codes(body: Record<string, unknown>, project = p): Promise<string[]> {
    return (await warnings(body, project)).map((w) => w.code)
  }

  beforeAll(async () => {
    p = await t.project({ plan: 'plus' })
    await insertSubscribers(t.ctx.db, p.id, 1)
  })

  it('none for a plain send to a non-empty audience', async () => {
    expect(await warnings(quiet())).toEqual([])
  })

  it('audience_empty, on target', async () => {
    expect(await warnings(quiet({ target: { type: 'user', external_id: 'nobody' } }))).toEqual([
      { code: 'audience_empty', message: expect.stringMatching(/no active subscribers/), path: 'target' },
    ])
  })

  it('other_push_service when some of the audience is on another push service, with the count', async () => {
    const q = await t.project()
    await insertAt(q.id, ENDPOINTS.fcm)
    expect(await codes(quiet(), q)).toEqual([])
    await insertAt(q.id, ENDPOINTS.other)
    expect(await warnings(quiet(), q)).toEqual([
      { code: 'other_push_service', message: expect.stringContaining('1 of the 2 subscribers'), path: 'target' },
    ])
  })

  it(`title_may_be_cut over ${TITLE_SHOWN_CHARS} characters (code points, so emoji count once)`, async () => {
    expect(await codes(quiet({ notification: { title: 'x'.repeat(TITLE_SHOWN_CHARS) } }))).toEqual([])
    expect(await codes(quiet({ notification: { title: '🎉'.repeat(TITLE_SHOWN_CHARS) } }))).toEqual([])
    expect(await warnings(quiet({ notification: { title: 'x'.repeat(TITLE_SHOWN_CHARS + 1) } }))).toEqual([
      { code: 'title_may_be_cut', message: expect.stringContaining(`${TITLE_SHOWN_CHARS + 1} characters`), path: 'notification.title' },
    ])
  })

  it(`body_may_be_cut over ${BODY_SHOWN_CHARS} characters`, async () => {
    expect(await codes(quiet({ notification: { body: 'x'.repeat(BODY_SHOWN_CHARS) } }))).toEqual([])
    expect(await warnings(quiet({ notification: { body: 'x'.repeat(BODY_SHOWN_CHARS + 1) } }))).toEqual([
      { code: 'body_may_be_cut', message: expect.stringContaining(`${BODY_SHOWN_CHARS + 1} characters`), path: 'notification.body' },
    ])
  })

  it('icon_not_checked for an icon URL, not for a data URL or a file Herald hosts', async () => {
    expect(await warnings(quiet({ notification: { icon: 'https://cdn.shop.example/i.png' } }))).toEqual([
      { code: 'icon_not_checked', message: expect.stringMatching(/never fetches/), path: 'notification.icon' },
    ])
    const icon = dataUrl('image/png', await makeImage('png', 48, 48))
    expect(await codes(quiet({ notification: { icon } }))).toEqual([])
    const sent = await send(t, p, quiet({ notification: { icon } }))
    const hosted = (await t.ctx.db.query<{ icon: string }>('SELECT icon FROM broadcasts WHERE id = $1', [sent.json().broadcast_id])).rows[0].icon
    expect(hosted).toMatch(new RegExp(`^${CDN}/icons/[0-9a-f]{64}\\.png$`))
    expect(await codes(quiet({ notification: { icon: hosted } }))).toEqual([])
    // Looks hosted, but no such file (another extension, another hash).
    expect(await codes(quiet({ notification: { icon: hosted.replace(/\.png$/, '.webp') } }))).toEqual(['icon_not_checked'])
    expect(await codes(quiet({ notification: { icon: `${CDN}/icons/${'0'.repeat(64)}.png` } }))).toEqual(['icon_not_checked'])
  })

  it('image_not_shown_everywhere for any image; image_not_checked only for an image URL', async () => {
    expect(await warnings(quiet({ notification: { image: 'https://cdn.shop.example/b.png' } }))).toEqual([
      { code: 'image_not_checked', message: expect.stringMatching(/never fetches/), path: 'notification.image' },
      { code: 'image_not_shown_everywhere', message: expect.stringMatching(/Firefox, Safari/), path: 'notification.image' },
    ])
    const image = dataUrl('image/webp', await makeImage('webp', 200, 100))
    expect(await codes(quiet({ notification: { image } }))).toEqual(['image_not_shown_everywhere'])
  })

  it('click_opens_site_root when notification.url is left out, not when it is given (even as /)', async () => {
    expect(await warnings(sendBody())).toEqual([
      { code: 'click_opens_site_root', message: expect.stringContaining('root (/)'), path: 'notification.url' },
    ])
    expect(await codes(quiet({ notification: { url: '/' } }))).toEqual([])
  })

  it('payload_fetched and fetch: true when the JSON does not fit one push', async () => {
    // 1,100 four-byte emoji: 4,400 bytes of body alone, over the 3,993 a push holds.
    const big = await dryRunOk(p, quiet({ notification: { body: '😀'.repeat(1100) } }))
    expect(big.fetch).toBe(true)
    expect(big.warnings).toEqual([
      expect.objectContaining({ code: 'body_may_be_cut' }),
      { code: 'payload_fetched', message: expect.stringContaining(`(${MAX_PLAINTEXT_BYTES})`) },
    ])
    // The stub is what is pushed: its JSON, encrypted.
    const stub = JSON.stringify({ v: 1, project_id: p.id, broadcast_id: newId('bdc'), fetch: true })
    expect(big.payload_bytes).toBe(HEADER_LENGTH + stub.length + 1 + 16)
    const fits = await dryRunOk(p, quiet({ notification: { body: 'x'.repeat(2048) } }))
    expect(fits.fetch).toBe(false)
    expect(fits.warnings.map((w: { code: string }) => w.code)).toEqual(['body_may_be_cut'])
  })

  it('ttl_zero for a ttl that rounds down to 0', async () => {
    expect(await warnings(quiet({ ttl: 0 }))).toEqual([{ code: 'ttl_zero', message: expect.stringMatching(/does not retry/), path: 'ttl' }])
    expect(await codes(quiet({ ttl: 0.5 }))).toEqual(['ttl_zero'])
    expect(await codes(quiet({ ttl: 1 }))).toEqual([])
  })

  it('scheduled_at: audience_counted_now always; scheduled_soon within the next minute; the past is refused as for a real send', async () => {
    expect(await warnings(quiet({ scheduled_at: Date.now() + 2 * MINUTE }))).toEqual([
      { code: 'audience_counted_now', message: expect.stringMatching(/counted as of now/), path: 'scheduled_at' },
    ])
    expect(await warnings(quiet({ scheduled_at: Date.now() + 30_000 }))).toEqual([
      { code: 'scheduled_soon', message: expect.stringMatching(/^scheduled_at is \d+ s away/), path: 'scheduled_at' },
      expect.objectContaining({ code: 'audience_counted_now' }),
    ])
    const past = await dryRun(p, quiet({ scheduled_at: Date.now() - 30_000 }))
    expect([past.statusCode, past.json().error.code]).toEqual([400, 'invalid_scheduled_at'])
  })

  it('the project default icon is in the payload the size counts, and draws no warning', async () => {
    const q = await t.project()
    await insertSubscribers(t.ctx.db, q.id, 1)
    const plain = await dryRunOk(q, quiet())
    const iconUrl = 'https://cdn.shop.example/default.png'
    await updateProject(t.ctx.db, q.id, { default_icon: iconUrl })
    const withIcon = await dryRunOk(q, quiet())
    expect(withIcon.payload_bytes - plain.payload_bytes).toBe(`,"icon":${JSON.stringify(iconUrl)}`.length)
    expect(withIcon.warnings).toEqual([])
  })
})

describe('OpenAPI', () => {
  it('documents dry_run in the send body and the 200 dry-run answer beside the 202', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json()
    const op = doc.paths['/v1/send'].post
    expect(op.requestBody.content['application/json'].schema.properties.dry_run).toMatchObject({ type: 'boolean', default: false })
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '202']))
    const answer = op.responses['200'].content['application/json'].schema
    expect(answer.required).toEqual(expect.arrayContaining(['dry_run', 'audience', 'by_push_service', 'payload_bytes', 'fetch', 'warnings']))
    expect(Object.keys(answer.properties.by_push_service.properties).sort()).toEqual(['apple', 'fcm', 'mozilla', 'other', 'wns'])
    expect(answer.properties.warnings.items.required).toEqual(['code', 'message'])
  })
})
