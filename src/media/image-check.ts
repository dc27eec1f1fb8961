// The checks a notification icon or image goes through before anything decodes
// it (api.md 4.7 icon/image rows, §7): the data URL's shape, its size, the
// real format read from the bytes (magic numbers), and the dimensions read
// from the header. Pure functions: no I/O, no decoding. Each failure is a
// MediaCheckError whose message says what was wrong; the service turns it
// into invalid_icon / invalid_image.
import { imageSize } from 'image-size'

export type MediaKind = 'icon' | 'image'
export type ImageFormat = 'png' | 'jpeg' | 'webp'

/** api.md: icon data URLs at most 256 KB. Counted on the decoded bytes, i.e. the image file itself. */
export const MAX_ICON_BYTES = 256 * 1024
/** api.md: image data URLs at most 1 MB, decoded bytes. */
export const MAX_IMAGE_BYTES = 1024 * 1024
/** api.md: HTTPS icon and image URLs at most 2048 characters. */
export const MAX_URL_LENGTH = 2048
/**
 * Largest width × height accepted, checked on the header before any decoding.
 * A few hundred bytes of PNG can claim 100000 × 100000 pixels (40 GB once
 * decoded): that is the decompression bomb this stops. 40 megapixels is more
 * than any photo that fits in 1 MB or any notification can show, and bounds a
 * decode at 160 MB of RGBA.
 */
export const MAX_PIXELS = 40_000_000

export const FORMATS: Record<ImageFormat, { ext: 'png' | 'jpg' | 'webp'; contentType: string }> = {
  png: { ext: 'png', contentType: 'image/png' },
  jpeg: { ext: 'jpg', contentType: 'image/jpeg' },
  webp: { ext: 'webp', contentType: 'image/webp' },
}

/**
 * Media types a data URL may declare. image/jpg is not a registered type but
 * is what many tools write; since the bytes decide the format anyway,
 * accepting the label costs nothing.
 */
const DECLARED_TYPES = new Set(['image/png', 'image/jpeg', 'image/jpg', 'image/webp'])

export class MediaCheckError extends Error {}

export function maxBytes(kind: MediaKind): number {
  return kind === 'icon' ? MAX_ICON_BYTES : MAX_IMAGE_BYTES
}

/** True for a URL Herald passes on as given: parseable, https, at most 2048 characters. */
export function isHttpsUrl(value: string): boolean {
  if (value.length > MAX_URL_LENGTH) return false
  try {
    return new URL(value).protocol === 'https:'
  } catch {
    return false
  }
}

export function isDataUrl(value: string): boolean {
  return /^data:/i.test(value)
}

const DATA_URL = /^data:([^;,]*);base64,(.*)$/is
// Standard base64 alphabet; padding optional, but when present the length is whole.
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** Bytes a base64 string decodes to, computed from its length without decoding it. */
export function base64DecodedLength(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0
  return Math.floor((data.length * 3) / 4) - padding
}

/** Throws unless `length` bytes fit the kind's limit (256 KB icons, 1 MB images; the limit itself is allowed). */
export function checkByteLength(kind: MediaKind, length: number): void {
  if (length === 0) throw new MediaCheckError('The data URL holds no data.')
  const limit = maxBytes(kind)
  if (length > limit) {
    throw new MediaCheckError(`The ${kind} is ${length} bytes; at most ${limit} bytes (${limit / 1024} KB) are allowed.`)
  }
}

/**
 * Splits `data:image/png;base64,<data>` and decodes it. The size is checked
 * from the base64 length before decoding, so an oversized payload is never
 * copied into memory a second time.
 */
export function decodeDataUrl(kind: MediaKind, value: string): { declaredType: string; bytes: Buffer } {
  const match = DATA_URL.exec(value)
  if (!match) throw new MediaCheckError('A data URL must look like data:image/png;base64,<data>.')
  const declaredType = match[1].toLowerCase()
  if (!DECLARED_TYPES.has(declaredType)) {
    throw new MediaCheckError(`Data URL type "${match[1]}" is not allowed; use image/png, image/jpeg or image/webp.`)
  }
  const data = match[2]
  if (data.length === 0) throw new MediaCheckError('The data URL holds no data.')
  const padded = data.includes('=')
  if (!BASE64.test(data) || data.length % 4 === 1 || (padded && data.length % 4 !== 0)) {
    throw new MediaCheckError('The data URL is not valid base64.')
  }
  checkByteLength(kind, base64DecodedLength(data))
  const bytes = Buffer.from(data, 'base64')
  checkByteLength(kind, bytes.length)
  return { declaredType, bytes }
}

/** The format the bytes really are, by their magic numbers; null for anything else (GIF, SVG, HTML, …). */
export function detectFormat(bytes: Uint8Array): ImageFormat | null {
  const starts = (signature: number[], offset = 0) => signature.every((byte, i) => bytes[offset + i] === byte)
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png'
  if (starts([0xff, 0xd8, 0xff])) return 'jpeg'
  // RIFF <size> WEBP
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return 'webp'
  return null
}

const IMAGE_SIZE_TYPES: Record<ImageFormat, string> = { png: 'png', jpeg: 'jpg', webp: 'webp' }

/** Width and height as the header states them, checked against MAX_PIXELS. Nothing is decoded. */
export function readDimensions(bytes: Uint8Array, format: ImageFormat): { width: number; height: number } {
  let size
  try {
    size = imageSize(bytes)
  } catch {
    throw new MediaCheckError('The image header could not be read.')
  }
  const { width, height } = size
  if (size.type !== IMAGE_SIZE_TYPES[format] || !Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw new MediaCheckError('The image header could not be read.')
  }
  checkPixels(width, height)
  return { width, height }
}

export function checkPixels(width: number, height: number): void {
  if (width * height > MAX_PIXELS) {
    throw new MediaCheckError(`The image is ${width}×${height} pixels; at most ${MAX_PIXELS} pixels are allowed.`)
  }
}

/** Icons are shown in a square; anything else is refused (api.md 4.7). */
export function checkShape(kind: MediaKind, width: number, height: number): void {
  if (kind === 'icon' && width !== height) {
    throw new MediaCheckError(`The icon must be square; it is ${width}×${height} pixels.`)
  }
}

export interface CheckedImage {
  format: ImageFormat
  declaredType: string
  width: number
  height: number
  bytes: Buffer
}

/** Every check that needs no decoding, in order: shape of the URL, size, real format, header dimensions, squareness. */
export function checkDataUrl(kind: MediaKind, value: string): CheckedImage {
  const { declaredType, bytes } = decodeDataUrl(kind, value)
  const format = detectFormat(bytes)
  if (!format) throw new MediaCheckError('The data is not a PNG, JPEG or WebP image.')
  const { width, height } = readDimensions(bytes, format)
  checkShape(kind, width, height)
  return { format, declaredType, width, height, bytes }
}
