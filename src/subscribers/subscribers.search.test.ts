// GET /v1/subscribers ?tag= (key:value as text, or a bare key) and
// ?external_id_contains= (a case-insensitive search whose LIKE wildcards are
// literal), combined with the other filters; never another project's rows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { subscribe } from './subscribers.fixtures.ts'

let t: TestApp
let p: TestProject
const id: Record<string, string> = {}

beforeAll(async () => {
  t = await createTestApp()
  p = await t.project()
  const other = await t.project()
  const rows: Record<string, Record<string, unknown>> = {
    n10: { tags: { age: 10, plan: 'pro' }, external_id: 'Alice_01' },
    s10: { tags: { age: '10' }, external_id: 'alice-02' },
    b: { tags: { vip: true, note: 'a:b' }, external_id: 'aliceX01' },
    pro: { tags: { plan: 'pro' }, external_id: 'bob_al' },
    bare: {},
  }
  for (const [label, body] of Object.entries(rows)) id[label] = await subscribe(t, p, body)
  await subscribe(t, other, { tags: { age: 10, plan: 'pro' }, external_id: 'alice_01' })
})
afterAll(async () => {
  await t.close()
})

async function list(query: string): Promise<string[]> {
  const res = await t.app.inject({ method: 'GET', url: `/v1/subscribers?${query}`, headers: p.auth })
  expect(res.statusCode, res.body).toBe(200)
  const label = new Map(Object.entries(id).map(([k, v]) => [v, k]))
  return res.json().subscribers.map((s: { id: string }) => label.get(s.id) ?? s.id).sort()
}

describe('GET /v1/subscribers?tag=', () => {
  it.each([
    ['tag=plan:pro', ['n10', 'pro']],
    ['tag=age:10', ['n10', 's10']],
    ['tag=vip:true', ['b']],
    ['tag=note:a%3Ab', ['b']],
    ['tag=age', ['n10', 's10']],
    ['tag=age:', []],
    ['tag=plan:Pro', []],
    ['tag=nope:1', []],
    ['tag=plan:pro&external_id_contains=bob', ['pro']],
    ['tag=plan:pro&external_id=Alice_01', ['n10']],
  ])('%s', async (query, expected) => {
    expect(await list(query)).toEqual(expected)
  })

  it('refuses a malformed tag filter naming it', async () => {
    for (const bad of ['', ':pro', 'bad%20key:1', `${'k'.repeat(65)}:1`, `k:${'v'.repeat(257)}`]) {
      const res = await t.app.inject({ method: 'GET', url: `/v1/subscribers?tag=${bad}`, headers: p.auth })
      expect(res.statusCode, bad).toBe(400)
      expect(res.json().error.issues[0].path).toBe('querystring.tag')
    }
  })
})

describe('GET /v1/subscribers?external_id_contains=', () => {
  it.each([
    ['external_id_contains=alice', ['b', 'n10', 's10']],
    ['external_id_contains=ALICE', ['b', 'n10', 's10']],
    ['external_id_contains=01', ['b', 'n10']],
    // _ is a LIKE wildcard: escaped, it matches only an underscore (not the X of aliceX01, nor the - of alice-02).
    ['external_id_contains=e_0', ['n10']],
    ['external_id_contains=_', ['n10', 'pro']],
    ['external_id_contains=-', ['s10']],
    ['external_id_contains=al', ['b', 'n10', 'pro', 's10']],
    ['external_id_contains=zzz', []],
  ])('%s', async (query, expected) => {
    expect(await list(query)).toEqual(expected)
  })

  it('refuses what an external_id cannot hold (% included)', async () => {
    for (const bad of ['', '%25', 'a%20b']) {
      const res = await t.app.inject({ method: 'GET', url: `/v1/subscribers?external_id_contains=${bad}`, headers: p.auth })
      expect(res.statusCode, bad).toBe(400)
      expect(res.json().error.issues[0].path).toBe('querystring.external_id_contains')
    }
  })
})
