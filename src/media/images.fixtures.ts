// Test helpers: hand-built PNG pieces for the media tests (bombs, padding to an exact size).
import { crc32 } from 'node:zlib'

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** A PNG chunk with a correct CRC. */
export function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4)
  length.writeUInt32BE(data.length)
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(body))
  return Buffer.concat([length, body, crc])
}

/** A PNG signature and an IHDR claiming width × height: how a decompression bomb starts. */
export function pngHeader(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8 // bit depth
  ihdr[9] = 2 // RGB
  return Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', ihdr)])
}

/** The PNG with an ancillary chunk inserted before IEND (e.g. a tEXt chunk carrying a marker). */
export function withChunk(png: Buffer, type: string, data: Buffer): Buffer {
  const iend = png.length - 12
  return Buffer.concat([png.subarray(0, iend), pngChunk(type, data), png.subarray(iend)])
}

/** The PNG padded with an ancillary chunk to exactly `size` bytes (size ≥ png.length + 12). */
export function padPng(png: Buffer, size: number): Buffer {
  const padded = withChunk(png, 'zzPd', Buffer.alloc(size - png.length - 12, 0x41))
  if (padded.length !== size) throw new Error('padding went wrong')
  return padded
}

export function toDataUrl(type: string, bytes: Uint8Array): string {
  return `data:${type};base64,${Buffer.from(bytes).toString('base64')}`
}
