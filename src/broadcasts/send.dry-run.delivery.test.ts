// A dry run against what the real send then does, end to end: the real API,
// the fan-out worker, and the local push service that decrypts every push.
// The dry run's audience is the number of pushes received, and its
// payload_bytes the length of each encrypted body the push service got.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { send, subscribeBrowser, waitForBroadcast } from '../../test/support/delivery.ts'
import { dataUrl, makeImage } from './broadcasts.fixtures.ts'

let t: TestApp
let push: PushService
let project: TestProject

beforeAll(async () => {
  push = await startPushService()
  t = await createTestApp({ HERALD_ENCRYPT_THREADS: '1' }, { worker: true })
})
afterAll(async () => {
  await t.close()
  await push.close()
})
beforeEach(async () => {
  push.reset()
  project = await t.project({ plan: 'plus' })
})

async function dryRun(body: Record<string, unknown>) {
  const res = await t.app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: { ...body, dry_run: true } })
  expect(res.statusCode, res.body).toBe(200)
  return res.json()
}

/** Sends for real, waits until the broadcast is over, and returns what the push service received. */
async function sendForReal(body: Record<string, unknown>) {
  const id = await send(t, project, body)
  const done = await waitForBroadcast(t, project, id)
  expect(done.status).toBe('sent')
  return { id, received: push.received }
}

describe('dry run, then the real send', () => {
  it('audience = pushes received, and payload_bytes = each encrypted body (a group, a hosted icon, an image URL)', async () => {
    const members = await Promise.all(Array.from({ length: 3 }, () => subscribeBrowser(t, project, push)))
    const groupRes = await t.app.inject({ method: 'POST', url: '/v1/groups', headers: project.auth, payload: { name: 'buyers' } })
    const group = groupRes.json().id
    await t.app.inject({ method: 'POST', url: `/v1/groups/${group}/subscribers`, headers: project.auth, payload: { subscriber_ids: members.map((m) => m.id) } })
    await subscribeBrowser(t, project, push) // not a member
    const body = {
      target: { type: 'group', group_id: group },
      notification: {
        title: 'Sale',
        body: 'Everything must go',
        icon: dataUrl('image/png', await makeImage('png', 64, 64)),
        image: 'https://cdn.shop.example/banner.png',
        url: '/sale',
      },
    }
    const dry = await dryRun(body)
    // The local push service listens on 127.0.0.1: "other" by push_service.
    expect(dry).toMatchObject({ audience: 3, by_push_service: { fcm: 0, mozilla: 0, apple: 0, wns: 0, other: 3 }, fetch: false })
    const { received } = await sendForReal(body)
    expect(received).toHaveLength(dry.audience)
    expect(new Set(received.map((r) => r.subscriptionId))).toEqual(new Set(members.map((m) => m.endpoint.split('/').pop())))
    for (const r of received) {
      expect(r.bodyBytes).toBe(dry.payload_bytes)
      expect(r.payload).toMatchObject({ icon: expect.stringMatching(/\/icons\/[0-9a-f]{64}\.png$/), image: body.notification.image })
    }
  })

  it('the fetch: true stub: fetch and payload_bytes as the real push carries them', async () => {
    await subscribeBrowser(t, project, push)
    await subscribeBrowser(t, project, push)
    const body = { target: { type: 'all' }, notification: { title: 'Long', body: '😀'.repeat(1100) } }
    const dry = await dryRun(body)
    expect(dry).toMatchObject({ audience: 2, fetch: true })
    const { id, received } = await sendForReal(body)
    expect(received).toHaveLength(2)
    for (const r of received) {
      expect(r.payload).toEqual({ v: 1, project_id: project.id, broadcast_id: id, fetch: true })
      expect(r.bodyBytes).toBe(dry.payload_bytes)
    }
  })

  it('a user target: the devices of that user only', async () => {
    await subscribeBrowser(t, project, push, { external_id: 'ana' })
    await subscribeBrowser(t, project, push, { external_id: 'ana' })
    await subscribeBrowser(t, project, push, { external_id: 'bo' })
    const body = { target: { type: 'user', external_id: 'ana' }, notification: { title: 'Hi Ana', body: 'Your order shipped', url: '/orders' } }
    const dry = await dryRun(body)
    const { received } = await sendForReal(body)
    expect(dry.audience).toBe(2)
    expect(received).toHaveLength(2)
    expect(received.every((r) => r.bodyBytes === dry.payload_bytes)).toBe(true)
  })
})
