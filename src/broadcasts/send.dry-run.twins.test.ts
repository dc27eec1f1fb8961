// The existing POST /v1/send tests (validation, plan gates, scheduled_at,
// media, audience and the monthly cap) run again here, with every send they
// make preceded by its dry run: the same body with "dry_run": true. Each dry
// run must leave the whole database as it was (test/support/db-fingerprint.ts)
// and answer what the real send then answers: the same status and error body,
// or 200 with the audience the real broadcast was created with. So a dry run
// refuses exactly what a send refuses, over every case those files hold,
// without a copy of them.
import { expect } from 'vitest'
import type { TestApp } from '../../test/support/app.ts'
import { changedTables, fingerprinter, type Fingerprint } from '../../test/support/db-fingerprint.ts'
import { routeSends, type SendCall } from './broadcasts.fixtures.ts'
import './send.validation.test.ts'
import './send.plans.test.ts'
import './send.media.test.ts'
import './send.audience.test.ts'

const fingerprints = new WeakMap<TestApp, () => Promise<Fingerprint>>()

async function fingerprintOf(t: TestApp): Promise<() => Promise<Fingerprint>> {
  let fingerprint = fingerprints.get(t)
  if (!fingerprint) {
    fingerprint = await fingerprinter(t.ctx.db)
    fingerprints.set(t, fingerprint)
  }
  return fingerprint
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

const dryRunFirst = (post: SendCall): SendCall => async (t, project, body) => {
  // A body that is not an object (the validation tests send an array) has no field to add.
  if (!isObject(body)) return post(t, project, body)
  const fingerprint = await fingerprintOf(t)
  const before = await fingerprint()
  const dry = await post(t, project, { ...body, dry_run: true })
  expect(changedTables(before, await fingerprint()), `the dry run wrote (${dry.statusCode} ${dry.body.slice(0, 200)})`).toEqual([])
  const real = await post(t, project, body)
  if (real.statusCode === 202) {
    expect(dry.statusCode, dry.body).toBe(200)
    const created = await t.ctx.db.query<{ audience: number }>('SELECT audience FROM broadcasts WHERE id = $1', [real.json().broadcast_id])
    expect(dry.json()).toMatchObject({ dry_run: true, audience: created.rows[0].audience })
  } else {
    expect({ status: dry.statusCode, body: dry.json() }).toEqual({ status: real.statusCode, body: real.json() })
  }
  return real
}

// One send (dry run, then real) at a time: a test that sends several at once
// (the race for the last of the budget) would otherwise write between a dry
// run's two fingerprints. That race is tested, concurrent, in its own file.
let previous: Promise<unknown> = Promise.resolve()
routeSends((post) => {
  const twin = dryRunFirst(post)
  return (t, project, body) => {
    const run = previous.then(() => twin(t, project, body))
    previous = run.catch(() => undefined)
    return run
  }
})
