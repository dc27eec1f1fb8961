// Test setup for A/B tests: a broadcast whose test is running, without a
// worker (the route sweeps in test/ run none): sent through the API, then put
// in the state its fan-out would leave it in (sending, test started).
import type { LightMyRequestResponse } from 'fastify'
import type { TestApp, TestProject } from '../../test/support/app.ts'

/** Two variants of a small test, every option given. */
export const TWO_VARIANTS = {
  variants: [
    { key: 'a', notification: { title: 'Twenty percent off' } },
    { key: 'b', notification: { title: 'Half price today', body: 'Only until midnight' } },
  ],
  experiment: { test_share: 0.5, metric: 'clicked', decide_after: '4h', min_per_variant: 1, on_inconclusive: 'best' },
} as const

/** A broadcast of the project whose A/B test is running (status sending, phase testing). */
export async function runningExperiment(t: Pick<TestApp, 'app' | 'ctx'>, project: Pick<TestProject, 'auth'>): Promise<string> {
  const res: LightMyRequestResponse = await t.app.inject({
    method: 'POST',
    url: '/v1/send',
    headers: project.auth,
    payload: { target: { type: 'all' }, notification: { title: 'Sale', body: 'Everything must go' }, ...TWO_VARIANTS },
  })
  if (res.statusCode !== 202) throw new Error(`setup: ${res.statusCode} ${res.body}`)
  const id = res.json().broadcast_id as string
  await t.ctx.db.query("UPDATE broadcasts SET status = 'sending', started_at = now(), pending_batches = 1, planning_done = true WHERE id = $1", [id])
  await t.ctx.db.query("UPDATE broadcast_experiments SET phase = 'testing', decide_at = now() + interval '4 hours' WHERE broadcast_id = $1", [id])
  return id
}
