import sharp from 'sharp'
import { describe, expect, it } from 'vitest'
import {
  MAX_ICON_BYTES,
  MAX_IMAGE_BYTES,
  MAX_PIXELS,
  MediaCheckError,
  base64DecodedLength,
  checkByteLength,
  checkDataUrl,
  decodeDataUrl,
  detectFormat,
  isHttpsUrl,
  readDimensions,
} from './image-check.ts'
import { pngHeader, toDataUrl } from './images.fixtures.ts'

const solid = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 90 } } })

const dataUrl = toDataUrl

function rejects(fn: () => unknown, message: RegExp): void {
  expect(fn).toThrow(MediaCheckError)
  expect(fn).toThrow(message)
}

describe('byte limits', () => {
  it('allows exactly 256 KB for an icon and refuses one byte more', () => {
    expect(() => checkByteLength('icon', MAX_ICON_BYTES)).not.toThrow()
    rejects(() => checkByteLength('icon', MAX_ICON_BYTES + 1), /262145 bytes; at most 262144/)
  })

  it('allows exactly 1 MB for an image and refuses one byte more', () => {
    expect(MAX_IMAGE_BYTES).toBe(1048576)
    expect(() => checkByteLength('image', MAX_IMAGE_BYTES)).not.toThrow()
    rejects(() => checkByteLength('image', MAX_IMAGE_BYTES + 1), /at most 1048576/)
  })

  it('refuses zero bytes', () => {
    rejects(() => checkByteLength('image', 0), /no data/)
  })

  it('applies the limit to the decoded bytes of a data URL', () => {
    for (const [kind, limit] of [['icon', MAX_ICON_BYTES], ['image', MAX_IMAGE_BYTES]] as const) {
      const exact = Buffer.alloc(limit, 7)
      expect(decodeDataUrl(kind, dataUrl('image/png', exact)).bytes.length).toBe(limit)
      rejects(() => decodeDataUrl(kind, dataUrl('image/png', Buffer.alloc(limit + 1, 7))), /at most/)
    }
  })

  it('computes the decoded length from the base64 text', () => {
    for (const n of [1, 2, 3, 4, 5, 100, 262144, 262145]) {
      expect(base64DecodedLength(Buffer.alloc(n).toString('base64'))).toBe(n)
    }
  })
})

describe('decodeDataUrl', () => {
  it('accepts the three types, image/jpg as an alias, and any case in the type', () => {
    for (const type of ['image/png', 'image/jpeg', 'image/jpg', 'image/webp', 'IMAGE/PNG']) {
      expect(decodeDataUrl('icon', dataUrl(type, Buffer.from('abc'))).declaredType).toBe(type.toLowerCase())
    }
  })

  it('accepts base64 without padding', () => {
    expect(decodeDataUrl('icon', 'data:image/png;base64,YWI').bytes.toString()).toBe('ab')
  })

  it('refuses other types, a missing base64 marker, empty data and bad base64', () => {
    const cases: Array<[string, RegExp]> = [
      ['data:image/gif;base64,R0lGODlh', /not allowed/],
      ['data:image/svg+xml;base64,PHN2Zz4=', /not allowed/],
      ['data:text/html;base64,PGI+', /not allowed/],
      ['data:;base64,YWJj', /not allowed/],
      ['data:image/png,abc', /must look like/],
      ['data:image/png;charset=utf-8;base64,YWJj', /must look like/],
      ['data:image/png;base64,', /no data/],
      ['data:image/png;base64,@@@@', /not valid base64/],
      ['data:image/png;base64,YWJj ZA==', /not valid base64/],
      ['data:image/png;base64,YWJjZ', /not valid base64/],
      ['data:image/png;base64,YW=j', /not valid base64/],
      ['data:image/png;base64,YWI=YWI=', /not valid base64/],
      ['data:image/png;base64,YWJjZA-_', /not valid base64/],
    ]
    for (const [value, message] of cases) rejects(() => decodeDataUrl('icon', value), message)
  })
})

describe('detectFormat', () => {
  it('knows PNG, JPEG and WebP by their bytes', async () => {
    expect(detectFormat(await solid(4, 4).png().toBuffer())).toBe('png')
    expect(detectFormat(await solid(4, 4).jpeg().toBuffer())).toBe('jpeg')
    expect(detectFormat(await solid(4, 4).webp().toBuffer())).toBe('webp')
  })

  it('refuses GIF, SVG, HTML, text and nothing', async () => {
    expect(detectFormat(await solid(4, 4).gif().toBuffer())).toBeNull()
    expect(detectFormat(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'))).toBeNull()
    expect(detectFormat(Buffer.from('<html><script>alert(1)</script></html>'))).toBeNull()
    expect(detectFormat(Buffer.from('RIFF0000WAVE'))).toBeNull()
    expect(detectFormat(Buffer.alloc(0))).toBeNull()
  })
})

describe('readDimensions', () => {
  it('reads width and height from the header', async () => {
    expect(readDimensions(await solid(30, 20).png().toBuffer(), 'png')).toEqual({ width: 30, height: 20 })
    expect(readDimensions(await solid(30, 20).jpeg().toBuffer(), 'jpeg')).toEqual({ width: 30, height: 20 })
    expect(readDimensions(await solid(30, 20).webp().toBuffer(), 'webp')).toEqual({ width: 30, height: 20 })
  })

  it('refuses a header claiming 100000 × 100000 pixels (decompression bomb) from the header alone', () => {
    rejects(() => readDimensions(pngHeader(100_000, 100_000), 'png'), /100000×100000 pixels; at most 40000000/)
  })

  it('allows exactly MAX_PIXELS and refuses one row more', () => {
    expect(MAX_PIXELS).toBe(40_000_000)
    expect(readDimensions(pngHeader(8000, 5000), 'png')).toEqual({ width: 8000, height: 5000 })
    rejects(() => readDimensions(pngHeader(8000, 5001), 'png'), /at most 40000000 pixels/)
  })

  it('refuses a header of another format or one that cannot be read', async () => {
    const png = await solid(4, 4).png().toBuffer()
    rejects(() => readDimensions(png, 'jpeg'), /header/)
    rejects(() => readDimensions(Buffer.from([0xff, 0xd8, 0xff, 0x00]), 'jpeg'), /header/)
    rejects(() => readDimensions(pngHeader(0, 10), 'png'), /header/)
  })
})

describe('checkDataUrl', () => {
  it('returns the real format, whatever the label says', async () => {
    const png = await solid(8, 8).png().toBuffer()
    const checked = checkDataUrl('icon', dataUrl('image/jpeg', png))
    expect(checked).toMatchObject({ format: 'png', declaredType: 'image/jpeg', width: 8, height: 8 })
  })

  it('refuses a non-square icon but not a non-square image', async () => {
    const wide = await solid(16, 9).png().toBuffer()
    rejects(() => checkDataUrl('icon', dataUrl('image/png', wide)), /square; it is 16×9/)
    expect(checkDataUrl('image', dataUrl('image/png', wide))).toMatchObject({ width: 16, height: 9 })
  })

  it('refuses a GIF labelled as PNG', async () => {
    const gif = await solid(8, 8).gif().toBuffer()
    rejects(() => checkDataUrl('icon', dataUrl('image/png', gif)), /not a PNG, JPEG or WebP/)
  })
})

describe('isHttpsUrl', () => {
  it('takes https URLs up to 2048 characters and nothing else', () => {
    const base = 'https://cdn.example.com/'
    expect(isHttpsUrl(base + 'a'.repeat(2048 - base.length))).toBe(true)
    expect(isHttpsUrl(base + 'a'.repeat(2049 - base.length))).toBe(false)
    expect(isHttpsUrl('http://cdn.example.com/a.png')).toBe(false)
    expect(isHttpsUrl('https://')).toBe(false)
    expect(isHttpsUrl('/icon.png')).toBe(false)
    expect(isHttpsUrl('javascript:alert(1)')).toBe(false)
    expect(isHttpsUrl('')).toBe(false)
  })
})
