// SQL for hosted icons and images, keyed by the SHA-256 of the stored bytes.
import type { Queryable } from '../platform/db/database.ts'

export interface MediaRow {
  sha256: string
  ext: string
  content_type: string
  width: number
  height: number
  bytes: Buffer
}

/** Stores the file unless the same bytes are already there; either way the file exists afterwards. */
export async function insertMedia(q: Queryable, row: MediaRow): Promise<void> {
  await q.query(
    `INSERT INTO media (sha256, ext, content_type, width, height, bytes)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (sha256) DO NOTHING`,
    [row.sha256, row.ext, row.content_type, row.width, row.height, row.bytes],
  )
}

export async function findMedia(q: Queryable, sha256: string): Promise<MediaRow | null> {
  const result = await q.query<Omit<MediaRow, 'bytes'> & { bytes: Uint8Array }>(
    'SELECT sha256, ext, content_type, width, height, bytes FROM media WHERE sha256 = $1',
    [sha256],
  )
  const row = result.rows[0]
  if (!row) return null
  // pg gives a Buffer, PGlite a Uint8Array: one type for callers, without copying.
  const bytes = Buffer.isBuffer(row.bytes) ? row.bytes : Buffer.from(row.bytes.buffer, row.bytes.byteOffset, row.bytes.byteLength)
  return { ...row, bytes }
}
