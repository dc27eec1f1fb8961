// End to end: a segment broadcast, sent through the real API and fanned out
// by the real worker in several keyset batches, reaches exactly the matching
// active subscribers, each once, through a push service that decrypts it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../../test/support/app.ts'
import { startPushService, type PushService } from '../../test/support/push-service.ts'
import { send, subscribeBrowser, waitForBroadcast } from '../../test/support/delivery.ts'

let t: TestApp
let push: PushService

beforeAll(async () => {
  push = await startPushService()
  // Batches of 2, so the matching subscribers span several push_batch jobs
  // with non-matching ones between them.
  t = await createTestApp({ HERALD_FANOUT_BATCH_SIZE: '2', HERALD_ENCRYPT_THREADS: '1' }, { worker: true })
})
afterAll(async () => {
  await t.close()
  await push.close()
})

describe('fan-out of a segment', () => {
  it('reaches exactly the matching active subscribers, once each', async () => {
    const project = await t.project({ plan: 'plus' })
    const other = await t.project({ plan: 'plus' })
    const browsers = []
    const tagSets: Array<Record<string, string | number | boolean>> = [{ age: 9 }, { age: 10 }, { age: '10' }, { age: 11, vip: true }, {}, { age: 12 }, { age: 10.5 }, { vip: true }]
    for (const tags of tagSets) {
      browsers.push(await subscribeBrowser(t, project, push, { tags }))
    }
    const [n9, n10, , n11vip, , n12, n10half, vip] = browsers
    // Unsubscribed though matching: not pushed.
    await t.app.inject({ method: 'POST', url: `/v1/unsubscribe?project=${project.id}`, payload: { endpoint: n12.endpoint } })
    await subscribeBrowser(t, other, push, { tags: { age: 11, vip: true } })

    const filter = { or: [{ and: [{ tag: 'age', gte: 10 }, { not: { tag: 'age', eq: 10.5 } }] }, { tag: 'vip', eq: true }] }
    const dry = (await t.app.inject({
      method: 'POST', url: '/v1/send', headers: project.auth,
      payload: { target: { type: 'segment', filter }, notification: { title: 'T', body: 'B' }, dry_run: true },
    })).json()
    expect(dry.audience).toBe(3)

    const id = await send(t, project, { target: { type: 'segment', filter }, notification: { title: 'For you', body: 'Tagged' } })
    const done = await waitForBroadcast(t, project, id)
    expect(done).toMatchObject({ status: 'sent', audience: 3, delivered: 3, failed: 0, target: { type: 'segment', filter } })
    const reached = push.received.map((r) => `${push.url}/push/${r.subscriptionId}`).sort()
    expect(reached).toEqual([n10, n11vip, vip].map((b) => b.endpoint).sort())
    expect(reached).not.toContain(n9.endpoint)
    expect(reached).not.toContain(n10half.endpoint)
    for (const received of push.received) expect(received.payload).toMatchObject({ broadcast_id: id, title: 'For you', body: 'Tagged' })
    expect(push.rejected).toEqual([])
  })
})
