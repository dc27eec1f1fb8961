// /v1/templates (issue 24): saved templates checked by the sandbox at create
// and update, names unique per project, another project's template not
// found (also by POST /v1/send), and the subscriber's locale set by the API.
// Who may read and write them: test/roles.test.ts; isolation on every
// route: test/security.test.ts.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { subscription } from '../subscribers/subscribers.fixtures.ts'

let t: TestApp
let project: TestProject

beforeAll(async () => {
  t = await createTestApp()
})
afterAll(() => t.close())
beforeEach(async () => {
  project = await t.project({ plan: 'plus' })
})

function call(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, who: TestProject = project) {
  return t.app.inject({ method, url, headers: who.auth, payload: payload as object })
}

const welcome = { name: 'Welcome', notification: { title: 'Hi {{ tags.first_name | default: "there" }}', body: 'Welcome to {{ data.shop }}' } }

describe('templates', () => {
  it('refuses, naming the field and changing nothing, what the sandbox does not allow', async () => {
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ title: '{% for i in (1..9999999999) %}x{% endfor %}', body: 'b' }, 'notification.title', 'tag "for" not found'],
      [{ title: 't', body: '{% include "/etc/passwd" %}' }, 'notification.body', 'tag "include" not found'],
      [{ title: 't', body: '{% render "x" %}' }, 'notification.body', 'tag "render" not found'],
      [{ title: 't', body: '{% assign x = 1 %}' }, 'notification.body', 'tag "assign" not found'],
      [{ title: '{{ "now" | date: "%Y" }}', body: 'b' }, 'notification.title', 'undefined filter: date'],
      [{ title: '{{ project.id }}', body: 'b' }, 'notification.title', '"project.id" is not a variable'],
      [{ title: '{{ tags }}', body: 'b' }, 'notification.title', '"tags" is not a variable'],
      [{ title: '{{ tags[data.key] }}', body: 'b' }, 'notification.title', 'a variable named by another variable'],
      [{ title: '{{ unclosed', body: 'b' }, 'notification.title', 'not closed'],
      [{ title: 't', body: 'b', icon: 'data:image/png;base64,AAAA' }, 'notification.icon', "a template's icon is an https:// URL"],
      [{ title: 't', body: 'b', actions: [{ action: 'a', title: 'A', url: 'https://{{tags.h}}/x' }] }, 'notification.actions.0.url', 'cannot choose its scheme or host'],
    ]
    for (const [notification, field, says] of cases) {
      const res = await call('POST', '/v1/templates', { name: 'bad', notification })
      expect(res.statusCode, JSON.stringify(notification)).toBe(400)
      expect(res.json().error.code).toBe('template_invalid')
      expect(res.json().error.message).toContain(`${field}:`)
      expect(res.json().error.message).toContain(says)
    }
    const localized = await call('POST', '/v1/templates', { ...welcome, localized: { fr: { title: '{% cycle "a" %}', body: 'b' } } })
    expect(localized.json().error.message).toContain('localized.fr.title:')
    expect((await call('GET', '/v1/templates')).json()).toEqual({ templates: [] })
  })

  it('create, get, list by name, update (a field replaced whole, checked again), delete; names unique per project', async () => {
    const created = await call('POST', '/v1/templates', { ...welcome, defaults: { 'data.shop': 'our shop' }, localized: { 'FR-ca': { title: 'Salut', body: 'Bienvenue' } } })
    expect(created.statusCode, created.body).toBe(201)
    const tpl = created.json()
    expect(tpl).toMatchObject({ name: 'Welcome', localized: { 'fr-CA': { title: 'Salut' } }, variables: ['data.shop', 'tags.first_name'], defaults: { 'data.shop': 'our shop' } })
    expect((await call('POST', '/v1/templates', welcome)).json().error.code).toBe('template_name_taken')
    // The same name in another project is fine.
    const other = await t.project()
    expect((await call('POST', '/v1/templates', welcome, other)).statusCode).toBe(201)
    await call('POST', '/v1/templates', { ...welcome, name: 'Anniversary' })
    expect((await call('GET', '/v1/templates')).json().templates.map((x: { name: string }) => x.name)).toEqual(['Anniversary', 'Welcome'])

    const bad = await call('PATCH', `/v1/templates/${tpl.id}`, { notification: { title: '{% for x in y %}{% endfor %}', body: 'b' } })
    expect(bad.json().error.code).toBe('template_invalid')
    expect((await call('PATCH', `/v1/templates/${tpl.id}`, { name: 'Anniversary' })).json().error.code).toBe('template_name_taken')
    const updated = await call('PATCH', `/v1/templates/${tpl.id}`, { notification: { title: 'Hello {{ external_id }}', body: 'b' } })
    expect(updated.json()).toMatchObject({ name: 'Welcome', variables: ['external_id'], defaults: { 'data.shop': 'our shop' } })
    expect(updated.json().updated_at).toBeGreaterThanOrEqual(tpl.updated_at)

    expect((await call('DELETE', `/v1/templates/${tpl.id}`)).json()).toEqual({ ok: true })
    expect((await call('GET', `/v1/templates/${tpl.id}`)).json().error.code).toBe('template_not_found')
    expect((await call('DELETE', `/v1/templates/${tpl.id}`)).statusCode).toBe(404)
    expect((await call('GET', '/v1/templates/garbage')).statusCode).toBe(404)
    // Each change once in the audit log, without the template's text; refusals none.
    const log = (await call('GET', `/v1/audit-log?target_id=${tpl.id}`)).json().entries
    expect(log.map((e: { action: string; details: unknown }) => [e.action, e.details])).toEqual([
      ['template.delete', {}],
      ['template.update', { fields: ['notification'] }],
      ['template.create', { name: 'Welcome' }],
    ])
  })

  it('POST /v1/send with template_id: its fields and defaults; another project\'s template is 404; notification beside it is 400', async () => {
    const tpl = (await call('POST', '/v1/templates', { ...welcome, defaults: { 'data.shop': 'our shop' } })).json()
    await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: subscription({ tags: { first_name: 'Ana' } }) })
    const dry = await call('POST', '/v1/send', { target: { type: 'all' }, template_id: tpl.id, dry_run: true })
    expect(dry.statusCode, dry.body).toBe(200)
    expect(dry.json().personalization.samples[0].notification).toMatchObject({ title: 'Hi Ana', body: 'Welcome to our shop' })
    const withData = await call('POST', '/v1/send', { target: { type: 'all' }, template_id: tpl.id, data: { shop: 'Herald Shop' }, dry_run: true })
    expect(withData.json().personalization.samples[0].notification.body).toBe('Welcome to Herald Shop')
    const sent = await call('POST', '/v1/send', { target: { type: 'all' }, template_id: tpl.id })
    expect(sent.statusCode).toBe(202)
    const view = (await call('GET', `/v1/broadcasts/${sent.json().broadcast_id}`)).json()
    expect(view).toMatchObject({ notification: { title: welcome.notification.title }, personalization: { template_id: tpl.id, missing: 'default', on_too_long: 'truncate' } })

    const other = await t.project({ plan: 'plus' })
    const foreign = await call('POST', '/v1/send', { target: { type: 'all' }, template_id: tpl.id }, other)
    expect(foreign.statusCode).toBe(404)
    expect(foreign.json().error.code).toBe('template_not_found')
    const both = await call('POST', '/v1/send', { target: { type: 'all' }, template_id: tpl.id, notification: { title: 't', body: 'b' } })
    expect(both.json().error.issues).toEqual([expect.objectContaining({ path: 'notification' })])
    const neither = await call('POST', '/v1/send', { target: { type: 'all' } })
    expect(neither.json().error.issues).toEqual([expect.objectContaining({ path: 'notification' })])
  })
})

describe('subscriber locale', () => {
  it('is set at subscribe (canonical), kept on a repeat without it, set and cleared by PATCH; a bad tag is 400 and changes nothing', async () => {
    const body = subscription({ tags: { a: 1 } })
    const sub = (await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: { ...body, locale: 'pt-br' } })).json().id
    const get = async () => (await call('GET', `/v1/subscribers/${sub}`)).json()
    expect((await get()).locale).toBe('pt-BR')
    await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: body })
    expect((await get()).locale).toBe('pt-BR')
    const bad = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: { ...body, locale: 'not a language' } })
    expect(bad.statusCode).toBe(400)
    expect(bad.json().error.issues[0].path).toBe('locale')
    expect((await get()).locale).toBe('pt-BR')

    const patched = await call('PATCH', `/v1/subscribers/${sub}`, { locale: 'ZH-hant-tw' })
    expect(patched.json()).toMatchObject({ locale: 'zh-Hant-TW', tags: { a: 1 } })
    expect((await call('PATCH', `/v1/subscribers/${sub}`, { locale: '12' })).json().error.issues[0].path).toBe('locale')
    expect((await call('PATCH', `/v1/subscribers/${sub}`, {})).json().error.issues[0].path).toBe('tags')
    expect((await call('PATCH', `/v1/subscribers/${sub}`, { locale: null })).json()).toMatchObject({ locale: null, tags: { a: 1 } })
    const other = await t.project()
    expect((await call('PATCH', `/v1/subscribers/${sub}`, { locale: 'fr' }, other)).statusCode).toBe(404)
    expect((await get()).locale).toBe(null)
  })
})
