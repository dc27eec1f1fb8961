// Helpers for the tests of a broadcast's progress and stop: read the view,
// check that it adds up, and poll it until a condition holds, checking every
// view seen on the way.
import { expect } from 'vitest'
import type { TestApp, TestProject } from '../../test/support/app.ts'
import type { BroadcastView } from '../broadcasts/broadcasts.schemas.ts'
import type { Queryable } from '../platform/db/database.ts'

export async function view(t: TestApp, project: TestProject, id: string): Promise<BroadcastView> {
  const res = await t.app.inject({ method: 'GET', url: `/v1/broadcasts/${id}`, headers: project.auth })
  expect(res.statusCode, res.body).toBe(200)
  return res.json()
}

/** What must hold of every view at every moment. */
export function expectConsistent(b: BroadcastView): void {
  const where = JSON.stringify(b)
  expect(b.delivered + b.failed + b.pending + b.retrying, where).toBe(b.audience)
  expect(b.pending, where).toBeGreaterThanOrEqual(0)
  expect(b.retrying, where).toBeGreaterThanOrEqual(0)
  expect(Object.values(b.failures).reduce((n, count) => n + count, 0), where).toBe(b.failed)
  const services = Object.values(b.by_push_service)
  expect(services, where).toHaveLength(5)
  expect(services.reduce((n, s) => n + s.delivered, 0), where).toBe(b.delivered)
  expect(services.reduce((n, s) => n + s.failed, 0), where).toBe(b.failed)
  expect(services.reduce((n, s) => n + s.retrying, 0), where).toBe(b.retrying)
  if (b.status !== 'sending') expect(b.next_attempt_at, where).toBeNull()
}

/** Polls the view until done(view), checking each one; returns the last and every view seen. */
export async function pollView(
  t: TestApp,
  project: TestProject,
  id: string,
  done: (b: BroadcastView) => boolean,
  timeoutMs = 30_000,
): Promise<{ last: BroadcastView; seen: BroadcastView[] }> {
  const seen: BroadcastView[] = []
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const b = await view(t, project, id)
    expectConsistent(b)
    seen.push(b)
    if (done(b)) return { last: b, seen }
    if (Date.now() > deadline) throw new Error(`broadcast ${id} did not get there in ${timeoutMs} ms: ${JSON.stringify(b)}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Jobs of any kind still queued (or running) for the broadcast. */
export async function jobsOf(db: Queryable, broadcastId: string): Promise<number> {
  const result = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM jobs WHERE payload ->> 'broadcast_id' = $1`, [broadcastId])
  return result.rows[0].n
}

/** Waits until cond() holds, polling every 25 ms. */
export async function until(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

export async function pushUsage(db: Queryable, projectId: string): Promise<number> {
  const result = await db.query<{ n: number }>('SELECT COALESCE(sum(pushes), 0)::int AS n FROM push_usage WHERE project_id = $1', [projectId])
  return result.rows[0].n
}
