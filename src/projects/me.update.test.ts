// PATCH /v1/me: a project's own key sets or clears its default icon, with the
// checks and hosting of the operator's PATCH /admin/v1/projects/:id.
import sharp from 'sharp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'

let t: TestApp
let a: TestProject
let b: TestProject
beforeAll(async () => {
  t = await createTestApp()
  a = await t.project({ name: 'Shop A', plan: 'hobby' })
  b = await t.project({ name: 'Blog B' })
})
afterAll(async () => {
  await t.close()
})

function patchMe(project: TestProject, payload: unknown) {
  return t.app.inject({ method: 'PATCH', url: '/v1/me', headers: project.auth, payload: payload as object })
}

async function storedIcon(projectId: string): Promise<string | null> {
  return (await t.database.db.query<{ default_icon: string | null }>('SELECT default_icon FROM projects WHERE id = $1', [projectId])).rows[0].default_icon
}

const png = (width: number, height: number) => sharp({ create: { width, height, channels: 4, background: '#0a6' } }).png().toBuffer()

describe('PATCH /v1/me', () => {
  it('sets the default icon from an HTTPS URL, answering like GET /v1/me, and clears it with null', async () => {
    const icon = 'https://shop.example.com/icon.png'
    const res = await patchMe(a, { default_icon: icon })
    expect(res.statusCode).toBe(200)
    const me = (await t.app.inject({ method: 'GET', url: '/v1/me', headers: a.auth })).json()
    expect(res.json()).toEqual(me)
    expect(me.project.default_icon).toBe(icon)
    expect(await storedIcon(a.id)).toBe(icon)

    const cleared = await patchMe(a, { default_icon: null })
    expect(cleared.statusCode).toBe(200)
    expect(cleared.json().project.default_icon).toBeNull()
    expect(await storedIcon(a.id)).toBeNull()
  })

  it('hosts a square data-URL icon under /icons and serves it', async () => {
    const res = await patchMe(a, { default_icon: `data:image/png;base64,${(await png(48, 48)).toString('base64')}` })
    expect(res.statusCode).toBe(200)
    const hosted = res.json().project.default_icon as string
    expect(hosted).toMatch(/^http:\/\/localhost:3000\/icons\/[0-9a-f]{64}\.png$/)
    expect(await storedIcon(a.id)).toBe(hosted)
    const served = await t.app.inject({ method: 'GET', url: new URL(hosted).pathname })
    expect(served.statusCode).toBe(200)
    expect(served.headers['content-type']).toBe('image/png')
  })

  it('is used by a send without an icon', async () => {
    await patchMe(a, { default_icon: 'https://shop.example.com/default.png' })
    const sent = await t.app.inject({ method: 'POST', url: '/v1/send', headers: a.auth, payload: { target: { type: 'all' }, notification: { title: 'Hi', body: 'There' } } })
    expect(sent.statusCode).toBe(202)
    const broadcast = (await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${sent.json().broadcast_id}`, headers: a.auth })).json()
    expect(broadcast.notification.icon).toBe('https://shop.example.com/default.png')
  })

  it('refuses a bad icon with invalid_icon naming default_icon, and keeps the old one', async () => {
    await patchMe(a, { default_icon: 'https://shop.example.com/keep.png' })
    const wide = `data:image/png;base64,${(await png(64, 32)).toString('base64')}`
    for (const icon of ['http://shop.example.com/a.png', 'ftp://x/a.png', 'data:image/png;base64,AAAA', 'data:text/plain;base64,aGVsbG8=', wide, `https://x.example.com/${'a'.repeat(2100)}`]) {
      const res = await patchMe(a, { default_icon: icon })
      expect(res.statusCode, icon.slice(0, 40)).toBe(400)
      expect(res.json().error.code).toBe('invalid_icon')
      expect(res.json().error.message).toMatch(/^default_icon/)
    }
    expect(await storedIcon(a.id)).toBe('https://shop.example.com/keep.png')
  })

  it('refuses other shapes with 400 invalid_request, changing nothing', async () => {
    for (const payload of [{}, { default_icon: '' }, { default_icon: 5 }, { plan: 'max' }, { default_icon: null, limits: { groups: 1000 } }, { name: 'Renamed' }]) {
      const res = await patchMe(a, payload)
      expect(res.statusCode, JSON.stringify(payload)).toBe(400)
      expect(res.json().error.code).toBe('invalid_request')
    }
    const row = (await t.database.db.query('SELECT plan, limits, name, default_icon FROM projects WHERE id = $1', [a.id])).rows[0]
    expect(row).toMatchObject({ plan: 'hobby', name: 'Shop A', default_icon: 'https://shop.example.com/keep.png' })
  })

  it('answers 413 payload_too_large above 512 KB', async () => {
    const res = await patchMe(a, { default_icon: 'data:image/png;base64,' + 'A'.repeat(520 * 1024) })
    expect(res.statusCode).toBe(413)
    expect(res.json().error.code).toBe('payload_too_large')
  })

  it("changes only the key's own project", async () => {
    await patchMe(a, { default_icon: 'https://shop.example.com/a-only.png' })
    const res = await patchMe(b, { default_icon: 'https://blog.example.com/b.png' })
    expect(res.json().project.id).toBe(b.id)
    expect(await storedIcon(a.id)).toBe('https://shop.example.com/a-only.png')
    expect(await storedIcon(b.id)).toBe('https://blog.example.com/b.png')
  })

  it('answers 401 invalid_api_key without a valid key', async () => {
    for (const headers of [{}, { authorization: 'Bearer hk_live_nope' }]) {
      const res = await t.app.inject({ method: 'PATCH', url: '/v1/me', headers, payload: { default_icon: null } })
      expect(res.statusCode).toBe(401)
      expect(res.json().error.code).toBe('invalid_api_key')
    }
  })
})
