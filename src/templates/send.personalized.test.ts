// Variables and languages end to end (issue 24): sends with variables and
// localized versions, fanned out through the local push service, which
// decrypts each push: every subscriber's payload is asserted, with the
// missing and too-long policies, the URL rules, and the dry run's preview.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { send, subscribeBrowser, waitForBroadcast, type Browser } from '../../test/support/delivery.ts'

let t: TestApp
let push: PushService
let project: TestProject

beforeAll(async () => {
  push = await startPushService()
  t = await createTestApp({ HERALD_ENCRYPT_THREADS: '0' }, { worker: true })
})
afterAll(async () => {
  await t.close()
  await push.close()
})
beforeEach(async () => {
  push.reset()
  project = await t.project({ plan: 'plus' })
})

async function browser(extra: { external_id?: string; tags?: Record<string, string | number | boolean>; locale?: string }): Promise<Browser> {
  const subscription = push.createSubscription()
  const res = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: { ...subscription, ...extra } })
  expect(res.statusCode, res.body).toBe(201)
  return { ...subscription, id: res.json().id }
}

/** What each browser received, by browser, as the push service decrypted it. */
function payloadOf(b: Browser): Record<string, unknown> | undefined {
  const got = push.receivedFor(b.endpoint)
  expect(got.length).toBeLessThanOrEqual(1)
  return got[0]?.payload as Record<string, unknown> | undefined
}

async function sendAndWait(body: Record<string, unknown>) {
  const id = await send(t, project, body)
  const state = await waitForBroadcast(t, project, id)
  const view = (await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: project.auth })).json()
  return { id, state, view }
}

async function failedEvents(broadcastId: string) {
  const rows = await t.ctx.db.query<{ subscriber_id: string; meta: { reason: string; cause?: string } }>(
    "SELECT subscriber_id, meta FROM events WHERE broadcast_id = $1 AND type = 'failed' ORDER BY subscriber_id",
    [broadcastId],
  )
  return rows.rows
}

describe('variables', () => {
  it('renders tags, external_id, locale and data per subscriber, with filter and template defaults, in every field', async () => {
    const ana = await browser({ external_id: 'ana', tags: { first_name: 'Ana', plan: 'gold' }, locale: 'pt-br' })
    const bob = await browser({ tags: { plan: 7 } })
    const { id, state } = await sendAndWait({
      target: { type: 'all' },
      notification: {
        title: 'Hi {{ tags.first_name | default: "there" }}',
        body: 'Order {{ data.order_id }} for {{ external_id }} ({{ tags.plan }}, {{ locale }})',
        url: 'https://shop.example.com/o/{{data.order_id}}?u={{external_id|url_encode}}',
        icon: 'https://cdn.example.com/{{tags.plan}}.png',
        actions: [{ action: 'track', title: 'Track {{ data.order_id }}', url: '/track/{{data.order_id}}' }],
      },
      data: { order_id: 'A-17' },
      defaults: { external_id: 'guest', locale: 'unknown' },
    })
    expect(state).toMatchObject({ status: 'sent', delivered: 2, failed: 0 })
    expect(payloadOf(ana)).toMatchObject({
      title: 'Hi Ana',
      body: 'Order A-17 for ana (gold, pt-BR)',
      url: 'https://shop.example.com/o/A-17?u=ana',
      icon: 'https://cdn.example.com/gold.png',
      actions: [{ action: 'track', title: 'Track A-17', url: '/track/A-17' }],
    })
    expect(payloadOf(bob)).toMatchObject({ title: 'Hi there', body: 'Order A-17 for guest (7, unknown)', url: 'https://shop.example.com/o/A-17?u=guest', icon: 'https://cdn.example.com/7.png' })
    // A personalized push never carries the declarative form, whose click links redirect to URLs the broadcast stores.
    expect(payloadOf(ana)).not.toHaveProperty('web_push')
    expect(id).toMatch(/^bdc_/)
  })

  it('missing "default" prints empty; "skip_subscriber" skips, counted as skipped with the cause in the failed event', async () => {
    const named = await browser({ tags: { first_name: 'Zoé' } })
    const nameless = await browser({})
    const notification = { title: 'Hello {{ tags.first_name }}!', body: 'News' }
    await sendAndWait({ target: { type: 'all' }, notification })
    expect(payloadOf(nameless)).toMatchObject({ title: 'Hello !' })
    push.reset()
    const { id, view } = await sendAndWait({ target: { type: 'all' }, notification, missing: 'skip_subscriber' })
    expect(view).toMatchObject({ delivered: 1, failed: 1, failures: { skipped: 1, gone: 0, rejected: 0, unreachable: 0 }, pending: 0 })
    expect(view.personalization).toMatchObject({ missing: 'skip_subscriber', template_id: null })
    expect(payloadOf(named)).toMatchObject({ title: 'Hello Zoé!' })
    expect(payloadOf(nameless)).toBeUndefined()
    expect(await failedEvents(id)).toEqual([{ subscriber_id: nameless.id, meta: { reason: 'skipped', status: null, cause: 'missing_variable: tags.first_name' } }])
  })

  it('missing "fail" refuses a send whose data variable is missing (400, nothing created), and skips subscribers without a tag', async () => {
    const before = await t.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM broadcasts')
    const refused = await t.app.inject({
      method: 'POST', url: '/v1/send', headers: project.auth,
      payload: { target: { type: 'all' }, notification: { title: 'Order {{ data.order_id }}', body: '{{ data.eta }}' }, data: { eta: 'soon' }, missing: 'fail' },
    })
    expect(refused.statusCode).toBe(400)
    expect(refused.json().error).toMatchObject({ code: 'missing_variable', variables: ['data.order_id'] })
    expect((await t.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM broadcasts')).rows[0].n).toBe(before.rows[0].n)
    // A default counts as a value.
    const ok = await t.app.inject({
      method: 'POST', url: '/v1/send', headers: project.auth,
      payload: { target: { type: 'all' }, notification: { title: 'Order {{ data.order_id }}', body: 'b' }, defaults: { 'data.order_id': '?' }, missing: 'fail', dry_run: true },
    })
    expect(ok.statusCode, ok.body).toBe(200)
  })

  it('a rendered title over 256 characters is cut with "…" (truncate) or the subscriber skipped (skip); never sent over', async () => {
    const long = await browser({ tags: { name: 'x'.repeat(256) } })
    const short = await browser({ tags: { name: 'Al' } })
    const notification = { title: 'Hello {{ tags.name }}', body: 'b' }
    await sendAndWait({ target: { type: 'all' }, notification })
    const title = payloadOf(long)!.title as string
    expect(Array.from(title)).toHaveLength(256)
    expect(title.endsWith('…')).toBe(true)
    push.reset()
    const { view } = await sendAndWait({ target: { type: 'all' }, notification, on_too_long: 'skip' })
    expect(view.failures.skipped).toBe(1)
    expect(payloadOf(long)).toBeUndefined()
    expect(payloadOf(short)).toMatchObject({ title: 'Hello Al' })
  })

  it('a rendered push over 4096 bytes gets its body cut to fit (truncate), or is not sent (skip): never the fetch stub', async () => {
    // 8 × 256 emoji: 2,048 characters (the body's limit) of 4 bytes each, twice what one push record holds.
    const wide = await browser({ tags: { e: '😀'.repeat(256) } })
    const notification = { title: 't', body: '{{tags.e}}'.repeat(8) }
    await sendAndWait({ target: { type: 'all' }, notification })
    const got = payloadOf(wide)!
    expect(got).not.toHaveProperty('fetch')
    expect(Buffer.byteLength(JSON.stringify(got))).toBeLessThanOrEqual(4096)
    expect((got.body as string).endsWith('…')).toBe(true)
    expect((got.body as string).length).toBeGreaterThan(1000)
    push.reset()
    const { id } = await sendAndWait({ target: { type: 'all' }, notification, on_too_long: 'skip' })
    expect(payloadOf(wide)).toBeUndefined()
    expect((await failedEvents(id))[0].meta.cause).toBe('too_long: the push is over 4096 bytes')
  })

  it('a variable cannot turn a URL into another scheme or host: refused at send, or the subscriber skipped when rendered', async () => {
    for (const [field, value] of [
      ['url', 'https://{{tags.host}}/x'],
      ['icon', 'https://{{tags.host}}/a.png'],
      ['icon', 'http://cdn.example.com/{{tags.a}}.png'],
      ['image', 'data:image/png;base64,{{tags.a}}'],
    ]) {
      const res = await t.app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: { target: { type: 'all' }, notification: { title: 't', body: 'b', [field]: value } } })
      expect(res.statusCode, `${field} ${value}`).toBe(400)
      expect(res.json().error.code).toBe('template_invalid')
      expect(res.json().error.message).toContain(`notification.${field}`)
    }
    const evil = await browser({ tags: { next: '/evil.example/steal', path: 'a b' } })
    const fine = await browser({ tags: { next: 'orders', path: 'ok' } })
    const { id, view } = await sendAndWait({ target: { type: 'all' }, notification: { title: 't', body: 'b', url: '/{{tags.next}}', actions: [{ action: 'a', title: 'A', url: '/p/{{tags.path}}' }] } })
    expect(view).toMatchObject({ delivered: 1, failures: { skipped: 1 } })
    expect(payloadOf(fine)).toMatchObject({ url: '/orders', actions: [{ url: '/p/ok' }] })
    expect(payloadOf(evil)).toBeUndefined()
    expect((await failedEvents(id))[0].meta.cause).toBe('invalid_url: notification.url')
  })

  it('a template that loops or prints a megabyte is cut off with a clear error', async () => {
    const loop = await t.app.inject({
      method: 'POST', url: '/v1/send', headers: project.auth,
      payload: { target: { type: 'all' }, notification: { title: '{% for i in (1..1000000000) %}x{% endfor %}', body: 'b' } },
    })
    expect(loop.statusCode).toBe(400)
    expect(loop.json().error).toMatchObject({ code: 'template_invalid' })
    expect(loop.json().error.message).toContain('notification.title: tag "for" not found')
    // 1,000 characters of data replaced into each of 3,000: 3 MB, refused at send by the memory limit.
    const big = await t.app.inject({
      method: 'POST', url: '/v1/send', headers: project.auth,
      payload: { target: { type: 'all' }, notification: { title: 't', body: '{{ data.a | append: data.a | append: data.a | replace: "x", data.a }}' }, data: { a: 'x'.repeat(1000) } },
    })
    expect(big.statusCode).toBe(400)
    expect(big.json().error).toMatchObject({ code: 'template_render_failed' })
    expect(big.json().error.message).toContain('notification.body: memory alloc limit exceeded')
    // The same through a subscriber's tag (256 characters of 'x' in a 256-character tag): skipped at fan-out, not sent.
    const tagged = await browser({ tags: { a: 'x'.repeat(256) } })
    const { id, view } = await sendAndWait({ target: { type: 'all' }, notification: { title: 't', body: '{{ tags.a | append: tags.a | append: tags.a | append: tags.a | replace: "x", tags.a | replace: "x", tags.a }}' } })
    expect(view.failures.skipped).toBe(1)
    expect(payloadOf(tagged)).toBeUndefined()
    expect((await failedEvents(id))[0].meta.cause).toContain('render_failed: notification.body: memory alloc limit exceeded')
  })
})

describe('languages', () => {
  it('gives each subscriber the closest version by BCP 47 fallback, case-insensitively, else the default fields', async () => {
    const who = {
      ptBR: await browser({ locale: 'pt-BR' }),
      ptPT: await browser({ locale: 'pt-PT' }),
      pt: await browser({ locale: 'PT' }),
      fr: await browser({ locale: 'fr-CA' }),
      zhTW: await browser({ locale: 'zh-Hant-TW' }),
      zhCN: await browser({ locale: 'zh-Hans-CN' }),
      de: await browser({ locale: 'de-DE' }),
      none: await browser({}),
    }
    const { state } = await sendAndWait({
      target: { type: 'all' },
      notification: { title: 'Sale', body: 'Half off', url: '/sale' },
      localized: {
        'pt-br': { title: 'Promoção BR', body: 'Metade' },
        pt: { title: 'Promoção', body: 'Metade', url: '/pt/sale' },
        fr: { title: 'Soldes', body: 'Moitié {{ locale }}' },
        'zh-Hant': { title: '特價', body: '半價' },
        zh: { title: '特价', body: '半价' },
      },
    })
    expect(state).toMatchObject({ delivered: 8 })
    const titles = Object.fromEntries(Object.entries(who).map(([k, b]) => [k, payloadOf(b)!.title]))
    expect(titles).toEqual({ ptBR: 'Promoção BR', ptPT: 'Promoção', pt: 'Promoção', fr: 'Soldes', zhTW: '特價', zhCN: '特价', de: 'Sale', none: 'Sale' })
    // A version without its own url takes the default fields' one.
    expect(payloadOf(who.ptBR)!.url).toBe('/sale')
    expect(payloadOf(who.ptPT)!.url).toBe('/pt/sale')
    expect(payloadOf(who.fr)!.body).toBe('Moitié fr-CA')
  })

  it('refuses a localized key that is not a BCP 47 tag, or two keys for one language', async () => {
    const v = { title: 't', body: 'b' }
    for (const localized of [{ 'not a tag': v }, { 'x-': v }, { 'pt-BR': v, 'pt-br': v }]) {
      const res = await t.app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: { target: { type: 'all' }, notification: v, localized } })
      expect(res.statusCode, JSON.stringify(localized)).toBe(400)
      expect(res.json().error.issues[0].path).toMatch(/^localized/)
    }
  })
})

describe('dry run', () => {
  it('previews real subscribers rendered, and the share of the audience with a value for each variable', async () => {
    await browser({ tags: { first_name: 'Ana' }, locale: 'fr' })
    await browser({ tags: { first_name: 'Bo' }, external_id: 'bo' })
    await browser({})
    await browser({ tags: { first_name: '' } })
    const dryBody = {
      target: { type: 'all' }, dry_run: true, missing: 'skip_subscriber',
      notification: { title: 'Hi {{ tags.first_name }}', body: '{{ data.code }} {{ external_id }}' },
      data: { code: 'X1' }, defaults: { external_id: 'guest' },
      localized: { fr: { title: 'Salut {{ tags.first_name }}', body: '{{ data.code }}' } },
    }
    const res = await t.app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: dryBody })
    expect(res.statusCode, res.body).toBe(200)
    const p = res.json().personalization
    expect(p.variables).toEqual([
      { variable: 'data.code', with_value: 4, coverage: 1, default: null },
      { variable: 'external_id', with_value: 1, coverage: 0.25, default: 'guest' },
      { variable: 'tags.first_name', with_value: 2, coverage: 0.5, default: null },
    ])
    expect(p.samples).toHaveLength(4)
    const byTitle = p.samples.map((s: { notification: { title: string } | null; skipped: string | null; language: string | null }) => s.notification?.title ?? s.skipped)
    expect(byTitle.sort()).toEqual(['Hi Bo', 'Salut Ana', 'missing_variable: tags.first_name', 'missing_variable: tags.first_name'])
    const bo = p.samples.find((s: { notification: { title: string } | null }) => s.notification?.title === 'Hi Bo')
    expect(bo.notification.body).toBe('X1 bo')
    // A send-only key may not read subscribers: the same dry run renders nobody and counts no coverage for it.
    const sendKey = await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: project.auth, payload: { scope: 'send' } })
    expect(sendKey.statusCode, sendKey.body).toBe(201)
    const narrow = await t.app.inject({ method: 'POST', url: '/v1/send', headers: { authorization: `Bearer ${sendKey.json().api_key}` }, payload: dryBody })
    expect(narrow.statusCode, narrow.body).toBe(200)
    expect(narrow.json().personalization).toEqual({ variables: [], samples: [] })
    expect(narrow.json().audience).toBe(4)
    // Nothing was created.
    expect((await t.ctx.db.query('SELECT 1 FROM broadcasts WHERE project_id = $1', [project.id])).rows).toEqual([])
  })

  it('a send without variables or languages is not personalized: no preview, and fan-out sends one payload for all', async () => {
    const a = await browser({ tags: { first_name: 'Ana' } })
    const dry = await t.app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: { target: { type: 'all' }, dry_run: true, notification: { title: 'Plain', body: 'text' } } })
    expect(dry.json()).not.toHaveProperty('personalization')
    const { id, view } = await sendAndWait({ target: { type: 'all' }, notification: { title: 'Plain', body: 'text' }, data: { unused: 1 } })
    expect(view).not.toHaveProperty('personalization')
    expect(payloadOf(a)).toMatchObject({ title: 'Plain' })
    expect(id).toMatch(/^bdc_/)
  })

  it("a broadcast's jobs are version 2 (a worker of the release before leaves them), personalized or plain", async () => {
    const ana = await browser({ tags: { first_name: 'Ana' } })
    const later = Date.now() + 3_600_000
    const scheduled = async (notification: Record<string, unknown>) => {
      const id = await send(t, project, { target: { type: 'all' }, notification, scheduled_at: later })
      const jobs = await t.ctx.db.query<{ kind: string; v: number }>("SELECT kind, payload_version AS v FROM jobs WHERE payload ->> 'broadcast_id' = $1", [id])
      return { id, jobs: jobs.rows }
    }
    const personal = await scheduled({ title: 'Hi {{ tags.first_name }}', body: 'b' })
    expect(personal.jobs).toEqual([{ kind: 'fire_broadcast', v: 2 }])
    // Plain too: the project may have quiet hours or caps, which a worker of 0.2.0 would not apply (broadcasts/payload-version.ts).
    expect((await scheduled({ title: 'Hi', body: 'b' })).jobs).toEqual([{ kind: 'fire_broadcast', v: 2 }])
    // Fired now: the fan-out it starts keeps version 2 and renders.
    await t.ctx.db.query("UPDATE jobs SET run_at = now() WHERE payload ->> 'broadcast_id' = $1", [personal.id])
    await waitForBroadcast(t, project, personal.id)
    expect(payloadOf(ana)).toMatchObject({ title: 'Hi Ana', broadcast_id: personal.id })
  })
})
