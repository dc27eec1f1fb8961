// Helpers for the broadcasts tests: rows written with SQL (subscribers and
// groups belong to other domains; the tests only need them to exist), a valid
// send body, and real PNG/JPEG/WebP images of chosen sizes for data URLs.
import sharp from 'sharp'
import type { LightMyRequestResponse } from 'fastify'
import type { Queryable } from '../platform/db/database.ts'
import { newId } from '../platform/ids.ts'
import type { TestApp, TestProject } from '../../test/support/app.ts'

export async function insertSubscriber(
  q: Queryable,
  projectId: string,
  options: { status?: 'active' | 'unsubscribed' | 'expired'; externalId?: string } = {},
): Promise<string> {
  const id = newId('sub')
  await q.query(
    `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth, external_id, status)
     VALUES ($1, $2, $3, 'p256dh', 'auth', $4, $5)`,
    [id, projectId, `https://fcm.googleapis.com/fcm/send/${id}`, options.externalId ?? null, options.status ?? 'active'],
  )
  return id
}

export async function insertSubscribers(q: Queryable, projectId: string, count: number): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < count; i++) ids.push(await insertSubscriber(q, projectId))
  return ids
}

export async function insertGroup(q: Queryable, projectId: string, memberIds: string[] = []): Promise<string> {
  const id = newId('grp')
  await q.query('INSERT INTO groups (id, project_id, name) VALUES ($1, $2, $3)', [id, projectId, `group ${id}`])
  for (const subscriberId of memberIds) {
    await q.query('INSERT INTO group_members (group_id, subscriber_id) VALUES ($1, $2)', [id, subscriberId])
  }
  return id
}

/** A sent broadcast row, for tests that only need one to exist (events, webhooks, rate limits). */
export async function insertSentBroadcast(q: Queryable, projectId: string): Promise<string> {
  const id = newId('bdc')
  await q.query(
    `INSERT INTO broadcasts (id, project_id, status, target, title, body, url, ttl, urgency)
     VALUES ($1, $2, 'sent', '{"type":"all"}', 'T', 'B', '/', 86400, 'normal')`,
    [id, projectId],
  )
  return id
}

/** The smallest valid send body, with `extra` merged over it (notification merged field by field). */
export function sendBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const { notification, ...rest } = extra as { notification?: Record<string, unknown> }
  return { target: { type: 'all' }, notification: { title: 'Hello', body: 'World', ...notification }, ...rest }
}

export type SendCall = (t: TestApp, project: TestProject, body: unknown) => Promise<LightMyRequestResponse>

const postSend: SendCall = (t, project, body) =>
  t.app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: body as Record<string, unknown> })
let sendVia: SendCall = postSend

/**
 * Routes every send() of this test file through `wrap(post)` instead of
 * straight to POST /v1/send: send.dry-run.twins.test.ts runs the send tests
 * with a dry run before each send.
 */
export function routeSends(wrap: (post: SendCall) => SendCall): void {
  sendVia = wrap(postSend)
}

export function send(t: TestApp, project: TestProject, body: unknown): Promise<LightMyRequestResponse> {
  return sendVia(t, project, body)
}

export async function getBroadcast(t: TestApp, project: TestProject, id: string) {
  return t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: project.auth })
}

export function dataUrl(type: string, bytes: Buffer): string {
  return `data:${type};base64,${bytes.toString('base64')}`
}

export async function makeImage(format: 'png' | 'jpeg' | 'webp', width: number, height: number): Promise<Buffer> {
  const image = sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 90 } } })
  return image[format]().toBuffer()
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})

function crc32(bytes: Buffer): number {
  let c = 0xffffffff
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

/**
 * A valid PNG of exactly `totalBytes`: a private ancillary chunk ("hrLd",
 * ignored by decoders) of padding is put before IEND. For size boundaries.
 */
export async function pngOfSize(width: number, height: number, totalBytes: number): Promise<Buffer> {
  const png = await makeImage('png', width, height)
  const padding = totalBytes - png.length - 12
  if (padding < 0) throw new Error(`a ${width}x${height} PNG is already ${png.length} bytes`)
  const typeAndData = Buffer.concat([Buffer.from('hrLd', 'ascii'), Buffer.alloc(padding)])
  const chunk = Buffer.alloc(12 + padding)
  chunk.writeUInt32BE(padding, 0)
  typeAndData.copy(chunk, 4)
  chunk.writeUInt32BE(crc32(typeAndData), 8 + padding)
  const iend = png.length - 12
  const out = Buffer.concat([png.subarray(0, iend), chunk, png.subarray(iend)])
  if (out.length !== totalBytes) throw new Error('pngOfSize: wrong length')
  return out
}
