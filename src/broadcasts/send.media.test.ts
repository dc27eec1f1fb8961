// POST /v1/send: notification.icon and notification.image as HTTPS URLs and
// data URLs (api.md 4.7), the project's default icon, and the 2 MiB body limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { updateProject } from '../projects/projects.store.ts'
import { dataUrl, getBroadcast, makeImage, pngOfSize, send, sendBody } from './broadcasts.fixtures.ts'

const KB = 1024
const HOSTED = /^http:\/\/localhost:3000\/icons\/[0-9a-f]{64}\.(png|jpg|webp)$/

let t: TestApp
let p: TestProject
beforeAll(async () => {
  t = await createTestApp()
  p = await t.project({ plan: 'hobby' })
})
afterAll(async () => {
  await t.close()
})

async function sentNotification(notification: Record<string, unknown>, project = p) {
  const res = await send(t, project, sendBody({ notification }))
  expect(res.statusCode, res.body).toBe(202)
  return (await getBroadcast(t, project, res.json().broadcast_id)).json().notification
}

async function expectCode(notification: Record<string, unknown>, code: string) {
  const res = await send(t, p, sendBody({ notification }))
  expect(res.statusCode, res.body).toBe(400)
  expect(res.json().error.code).toBe(code)
}

describe('POST /v1/send icon and image URLs', () => {
  it('an HTTPS URL of up to 2048 chars is used as given; 2049 chars is invalid', async () => {
    const base = 'https://cdn.shop.example/'
    const url = base + 'i'.repeat(2048 - base.length)
    expect(await sentNotification({ icon: url, image: url })).toMatchObject({ icon: url, image: url })
    await expectCode({ icon: url + 'i' }, 'invalid_icon')
    await expectCode({ image: url + 'i' }, 'invalid_image')
  })

  it('anything but https: or data: is invalid_icon / invalid_image', async () => {
    for (const bad of ['http://cdn.shop.example/i.png', '/icon.png', 'icon.png', '', 'ftp://x/i.png', 'javascript:alert(1)']) {
      await expectCode({ icon: bad }, 'invalid_icon')
      await expectCode({ image: bad }, 'invalid_image')
    }
  })

  it('no icon: the project default icon is used; none set: icon null', async () => {
    expect((await sentNotification({})).icon).toBeNull()
    const q = await t.project()
    await updateProject(t.ctx.db, q.id, { default_icon: 'https://cdn.shop.example/default.png' })
    expect((await sentNotification({}, q)).icon).toBe('https://cdn.shop.example/default.png')
    expect((await sentNotification({ icon: 'https://cdn.shop.example/own.png' }, q)).icon).toBe('https://cdn.shop.example/own.png')
  })
})

describe('POST /v1/send data URL icons', () => {
  it('a square PNG, JPEG or WebP is hosted under {cdn_url}/icons and served from there', async () => {
    for (const [format, type] of [['png', 'image/png'], ['jpeg', 'image/jpeg'], ['webp', 'image/webp']] as const) {
      const icon = (await sentNotification({ icon: dataUrl(type, await makeImage(format, 64, 64)) })).icon
      expect(icon).toMatch(HOSTED)
      const served = await t.app.inject({ method: 'GET', url: new URL(icon).pathname })
      expect(served.statusCode).toBe(200)
    }
  })

  it('256 KB exactly is accepted; one byte more is invalid_icon', async () => {
    expect((await sentNotification({ icon: dataUrl('image/png', await pngOfSize(64, 64, 256 * KB)) })).icon).toMatch(HOSTED)
    await expectCode({ icon: dataUrl('image/png', await pngOfSize(64, 64, 256 * KB + 1)) }, 'invalid_icon')
  })

  it('a non-square icon is invalid_icon', async () => {
    await expectCode({ icon: dataUrl('image/png', await makeImage('png', 64, 63)) }, 'invalid_icon')
  })

  it('malformed, empty, or another format is invalid_icon', async () => {
    const gif = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64')
    for (const bad of [
      'data:image/png;base64,',
      'data:image/png;base64,not base64!!',
      'data:image/png;base64,aGVsbG8gd29ybGQ=',
      'data:,hello',
      dataUrl('image/gif', gif),
      dataUrl('image/svg+xml', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>')),
    ]) {
      await expectCode({ icon: bad }, 'invalid_icon')
    }
  })
})

describe('POST /v1/send data URL images', () => {
  it('a non-square image is fine; it is hosted like an icon', async () => {
    const image = (await sentNotification({ image: dataUrl('image/jpeg', await makeImage('jpeg', 320, 160)) })).image
    expect(image).toMatch(HOSTED)
  })

  it('1 MB exactly is accepted; one byte more is invalid_image', async () => {
    expect((await sentNotification({ image: dataUrl('image/png', await pngOfSize(200, 100, 1024 * KB)) })).image).toMatch(HOSTED)
    await expectCode({ image: dataUrl('image/png', await pngOfSize(200, 100, 1024 * KB + 1)) }, 'invalid_image')
  })

  it('malformed image → invalid_image', async () => {
    await expectCode({ image: 'data:image/webp;base64,AAAA' }, 'invalid_image')
  })

  it('a 1 MB image and a 256 KB icon in one body fit the route body limit', async () => {
    const res = await send(t, p, sendBody({
      notification: {
        icon: dataUrl('image/png', await pngOfSize(64, 64, 256 * KB)),
        image: dataUrl('image/png', await pngOfSize(200, 100, 1024 * KB)),
      },
    }))
    expect(res.statusCode, res.body).toBe(202)
  })

  it('a body over 2 MiB → 413 payload_too_large', async () => {
    const res = await send(t, p, sendBody({ notification: { image: 'data:image/png;base64,' + 'A'.repeat(2 * 1024 * KB) } }))
    expect(res.statusCode).toBe(413)
    expect(res.json().error.code).toBe('payload_too_large')
  })
})
