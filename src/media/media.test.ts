import { createHash, randomBytes } from 'node:crypto'
import sharp from 'sharp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../../test/support/app.ts'
import { AppError } from '../platform/errors.ts'
import { MAX_ICON_BYTES } from './image-check.ts'
import { resolveMedia, type MediaKind } from './media.service.ts'
import { padPng, pngChunk, pngHeader, toDataUrl, withChunk } from './images.fixtures.ts'

let t: TestApp
beforeAll(async () => {
  t = await createTestApp()
})
afterAll(async () => {
  await t.close()
})

const solid = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: 10, g: 120, b: 200 } } })

/** Random pixels: compresses badly, so a PNG of a wanted size is easy to reach. */
function noise(width: number, height: number) {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } })
}

const resolve = (kind: MediaKind, value: string) => resolveMedia(t.database.db, t.ctx.config, kind, value)

async function rejected(kind: MediaKind, value: string): Promise<AppError> {
  const err = await resolve(kind, value).then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(AppError)
  const appError = err as AppError
  expect(appError.code).toBe(kind === 'icon' ? 'invalid_icon' : 'invalid_image')
  expect(appError.status).toBe(400)
  return appError
}

async function mediaCount(): Promise<number> {
  const result = await t.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM media')
  return result.rows[0].n
}

function hostedPath(url: string): string {
  const prefix = `${t.ctx.config.cdnUrl}/icons/`
  expect(url.startsWith(prefix)).toBe(true)
  return `/icons/${url.slice(prefix.length)}`
}

describe('resolveMedia with an https URL', () => {
  it('returns the URL as given, up to 2048 characters', async () => {
    const url = 'https://cdn.example.com/a.png?v=1'
    expect(await resolve('icon', url)).toBe(url)
    const long = 'https://cdn.example.com/' + 'a'.repeat(2048 - 24)
    expect(long.length).toBe(2048)
    expect(await resolve('image', long)).toBe(long)
  })

  it('refuses a 2049-character URL, http, relative paths and other schemes', async () => {
    await rejected('icon', 'https://cdn.example.com/' + 'a'.repeat(2049 - 24))
    await rejected('icon', 'http://cdn.example.com/a.png')
    await rejected('image', '/a.png')
    await rejected('image', 'javascript:alert(1)')
    await rejected('icon', '')
    await rejected('icon', 'not a url')
  })
})

describe('resolveMedia with a data URL', () => {
  it('hosts a PNG, a JPEG and a WebP and serves each with its type', async () => {
    const cases = [
      ['image/png', await solid(64, 64).png().toBuffer(), 'png', 'image/png'],
      ['image/jpeg', await solid(64, 64).jpeg().toBuffer(), 'jpg', 'image/jpeg'],
      ['image/webp', await solid(64, 64).webp().toBuffer(), 'webp', 'image/webp'],
    ] as const
    for (const [type, bytes, ext, contentType] of cases) {
      const url = await resolve('icon', toDataUrl(type, bytes))
      expect(url).toMatch(new RegExp(`^http://localhost:3000/icons/[0-9a-f]{64}\\.${ext}$`))
      const res = await t.app.inject({ method: 'GET', url: hostedPath(url) })
      expect(res.statusCode).toBe(200)
      expect(res.headers['content-type']).toBe(contentType)
      const meta = await sharp(res.rawPayload).metadata()
      expect(meta).toMatchObject({ format: ext === 'jpg' ? 'jpeg' : ext, width: 64, height: 64 })
    }
  })

  it('accepts image/jpg as a label', async () => {
    const url = await resolve('icon', toDataUrl('image/jpg', await solid(20, 20).jpeg().toBuffer()))
    expect(url).toMatch(/\.jpg$/)
  })

  it('stores a PNG labelled image/jpeg as the PNG it is', async () => {
    const url = await resolve('icon', toDataUrl('image/jpeg', await solid(24, 24).png().toBuffer()))
    expect(url).toMatch(/\.png$/)
    const res = await t.app.inject({ method: 'GET', url: hostedPath(url) })
    expect(res.headers['content-type']).toBe('image/png')
  })

  it('refuses a non-square icon, and takes a non-square image', async () => {
    const wide = toDataUrl('image/png', await solid(200, 100).png().toBuffer())
    const err = await rejected('icon', wide)
    expect(err.message).toMatch(/square/)
    expect(await resolve('image', wide)).toMatch(/\.png$/)
    const tall = toDataUrl('image/webp', await solid(99, 100).webp().toBuffer())
    await rejected('icon', tall)
  })

  it('refuses GIF, SVG, HTML, garbage, empty data and bad base64, storing nothing', async () => {
    const before = await mediaCount()
    const gif = await solid(16, 16).gif().toBuffer()
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><script>alert(1)</script></svg>')
    const html = Buffer.from('<!doctype html><script>alert(1)</script>')
    for (const kind of ['icon', 'image'] as const) {
      await rejected(kind, toDataUrl('image/gif', gif))
      await rejected(kind, toDataUrl('image/png', gif))
      await rejected(kind, toDataUrl('image/svg+xml', svg))
      await rejected(kind, toDataUrl('image/png', svg))
      await rejected(kind, toDataUrl('image/png', html))
      await rejected(kind, toDataUrl('image/png', randomBytes(500)))
      await rejected(kind, 'data:image/png;base64,')
      await rejected(kind, 'data:image/png;base64,!!!notbase64!!!')
      await rejected(kind, 'data:image/png,rawbytes')
    }
    expect(await mediaCount()).toBe(before)
  })

  it('refuses bytes that start like a PNG but cannot be decoded', async () => {
    const png = await noise(40, 40).png().toBuffer()
    const truncated = png.subarray(0, Math.floor(png.length / 2))
    const err = await rejected('icon', toDataUrl('image/png', truncated))
    expect(err.message).toMatch(/decoded|header/)
    // A header with no image data after it.
    await rejected('icon', toDataUrl('image/png', Buffer.concat([pngHeader(16, 16), pngChunk('IEND', Buffer.alloc(0))])))
  })

  it('refuses a PNG claiming 100000 × 100000 pixels on its header, before decoding', async () => {
    const bomb = Buffer.concat([pngHeader(100_000, 100_000), pngChunk('IDAT', Buffer.alloc(64)), pngChunk('IEND', Buffer.alloc(0))])
    const err = await rejected('image', toDataUrl('image/png', bomb))
    // The pixel check's message, not the decoder's: nothing was decoded.
    expect(err.message).toMatch(/100000×100000 pixels; at most 40000000 pixels/)
  })

  it('takes an icon of exactly 256 KB and refuses one of 256 KB + 1', async () => {
    const png = await noise(200, 200).png().toBuffer()
    expect(png.length).toBeLessThan(MAX_ICON_BYTES - 12)
    const exact = padPng(png, MAX_ICON_BYTES)
    expect(await resolve('icon', toDataUrl('image/png', exact))).toMatch(/\.png$/)
    const over = padPng(png, MAX_ICON_BYTES + 1)
    const err = await rejected('icon', toDataUrl('image/png', over))
    expect(err.message).toMatch(/262145 bytes/)
  })

  it('refuses an icon over 256 KB of real pixels but takes it as an image (1 MB)', async () => {
    const big = await noise(400, 400).png().toBuffer()
    expect(big.length).toBeGreaterThan(MAX_ICON_BYTES)
    expect(big.length).toBeLessThan(1024 * 1024)
    await rejected('icon', toDataUrl('image/png', big))
    expect(await resolve('image', toDataUrl('image/png', big))).toMatch(/\.png$/)
  })

  it('strips what rides along with the pixels (text chunks, appended HTML)', async () => {
    const png = await solid(32, 32).png().toBuffer()
    const polyglot = Buffer.concat([
      withChunk(png, 'tEXt', Buffer.from('Comment\0<script>alert("chunk")</script>')),
      Buffer.from('<html><script>alert("tail")</script></html>'),
    ])
    const url = await resolve('icon', toDataUrl('image/png', polyglot))
    const res = await t.app.inject({ method: 'GET', url: hostedPath(url) })
    expect(res.statusCode).toBe(200)
    expect(res.rawPayload.includes('script')).toBe(false)
    expect(res.rawPayload.includes('Comment')).toBe(false)
  })

  it('applies the EXIF orientation of a JPEG to its pixels', async () => {
    const rotated = await solid(40, 20).jpeg().withMetadata({ orientation: 6 }).toBuffer()
    const url = await resolve('image', toDataUrl('image/jpeg', rotated))
    const row = await t.database.db.query<{ width: number; height: number }>('SELECT width, height FROM media WHERE sha256 = $1', [
      url.split('/').pop()!.split('.')[0],
    ])
    expect(row.rows[0]).toEqual({ width: 20, height: 40 })
  })

  it('stores the same image once', async () => {
    const value = toDataUrl('image/png', await solid(48, 48).png().toBuffer())
    const before = await mediaCount()
    const first = await resolve('icon', value)
    const second = await resolve('icon', value)
    expect(second).toBe(first)
    expect(await mediaCount()).toBe(before + 1)
  })

  it('names the file by the SHA-256 of the stored bytes and records its size', async () => {
    const url = await resolve('image', toDataUrl('image/webp', await solid(30, 10).webp().toBuffer()))
    const res = await t.app.inject({ method: 'GET', url: hostedPath(url) })
    const sha = createHash('sha256').update(res.rawPayload).digest('hex')
    expect(url).toBe(`${t.ctx.config.cdnUrl}/icons/${sha}.webp`)
    const row = await t.database.db.query('SELECT ext, content_type, width, height FROM media WHERE sha256 = $1', [sha])
    expect(row.rows[0]).toEqual({ ext: 'webp', content_type: 'image/webp', width: 30, height: 10 })
  })
})

describe('GET /icons/:file', () => {
  let url: string
  let path: string
  beforeAll(async () => {
    url = await resolve('icon', toDataUrl('image/png', await solid(16, 16).png().toBuffer()))
    path = hostedPath(url)
  })

  it('serves the bytes with long caching, nosniff and the hash as ETag', async () => {
    const res = await t.app.inject({ method: 'GET', url: path })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('image/png')
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    const sha = path.slice('/icons/'.length, -'.png'.length)
    expect(res.headers.etag).toBe(`"${sha}"`)
    expect(createHash('sha256').update(res.rawPayload).digest('hex')).toBe(sha)
    const stored = await t.database.db.query<{ bytes: Uint8Array }>('SELECT bytes FROM media WHERE sha256 = $1', [sha])
    expect(Buffer.compare(Buffer.from(stored.rows[0].bytes), res.rawPayload)).toBe(0)
  })

  it('answers 304 when the ETag matches', async () => {
    const first = await t.app.inject({ method: 'GET', url: path })
    const res = await t.app.inject({ method: 'GET', url: path, headers: { 'if-none-match': first.headers.etag as string } })
    expect(res.statusCode).toBe(304)
    expect(res.rawPayload.length).toBe(0)
  })

  it('answers 404 media_not_found for a wrong extension, an unknown hash or a bad name', async () => {
    const sha = path.slice('/icons/'.length, -'.png'.length)
    for (const file of [`${sha}.jpg`, `${sha}.webp`, `${'0'.repeat(64)}.png`, sha, `${sha}.PNG`, `${sha}.png.html`, 'x.png', `${sha.toUpperCase()}.png`]) {
      const res = await t.app.inject({ method: 'GET', url: `/icons/${file}` })
      expect(res.statusCode).toBe(404)
      expect(res.json()).toEqual({ error: { code: 'media_not_found', message: expect.any(String) } })
    }
  })
})
