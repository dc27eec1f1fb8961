// Helpers for end-to-end delivery tests: subscribe browsers of the local push
// service through the real API, send through the real API, wait for counts.
import type { Queryable } from '../../src/platform/db/database.ts'
import { newId } from '../../src/platform/ids.ts'
import type { PushService, TestSubscription } from './push-service.ts'
import type { TestApp, TestProject } from './app.ts'

export interface Browser extends TestSubscription {
  id: string
}

export async function subscribeBrowser(
  t: TestApp,
  project: TestProject,
  push: PushService,
  extra: { external_id?: string; group_ids?: string[]; tags?: Record<string, string | number | boolean>; timezone?: string } = {},
): Promise<Browser> {
  const subscription = push.createSubscription()
  const res = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: { ...subscription, ...extra } })
  if (res.statusCode !== 201) throw new Error(`subscribe failed: ${res.statusCode} ${res.body}`)
  return { ...subscription, id: res.json().id }
}

export async function send(t: TestApp, project: TestProject, body: Record<string, unknown>): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: '/v1/send', headers: project.auth, payload: body })
  if (res.statusCode !== 202) throw new Error(`send failed: ${res.statusCode} ${res.body}`)
  return res.json().broadcast_id
}

export interface BroadcastState {
  status: string
  audience: number
  delivered: number
  failed: number
  failure_reason: string | null
  started_at: number | null
  finished_at: number | null
}

export async function getBroadcast(t: TestApp, project: TestProject, id: string): Promise<BroadcastState> {
  const res = await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: project.auth })
  return res.json()
}

/** Polls the broadcast until done(state) or the timeout; returns the last state. */
export async function waitForBroadcast(
  t: TestApp,
  project: TestProject,
  id: string,
  done: (state: BroadcastState) => boolean = (s) => s.status === 'sent' || s.status === 'failed',
  timeoutMs = 15_000,
): Promise<BroadcastState> {
  const start = Date.now()
  for (;;) {
    const state = await getBroadcast(t, project, id)
    if (done(state)) return state
    if (Date.now() - start > timeoutMs) throw new Error(`broadcast ${id} did not settle: ${JSON.stringify(state)}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

export async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms))
}

/** Many subscribers at once, written straight to the database (setup for large fan-outs). */
export async function bulkSubscribe(db: Queryable, projectId: string, push: PushService, count: number): Promise<Browser[]> {
  const browsers: Browser[] = Array.from({ length: count }, () => ({ ...push.createSubscription(), id: newId('sub') }))
  for (let i = 0; i < browsers.length; i += 5000) {
    const slice = browsers.slice(i, i + 5000)
    await db.query(
      `INSERT INTO subscribers (id, project_id, endpoint, p256dh, auth)
       SELECT id, $1, endpoint, p256dh, auth FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS s(id, endpoint, p256dh, auth)`,
      [projectId, slice.map((b) => b.id), slice.map((b) => b.endpoint), slice.map((b) => b.keys.p256dh), slice.map((b) => b.keys.auth)],
    )
  }
  return browsers
}
