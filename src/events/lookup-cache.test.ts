// The beacon route's caches, against the real projects table: a flood of
// made-up ids costs one query per round, repeats cost none, and the cache
// stays within its bounds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../test/support/database.ts'
import { newId } from '../platform/ids.ts'
import { createProject } from '../projects/projects.service.ts'
import { BeaconLookups } from './beacon-lookups.ts'
import { findBeaconProjects } from './events.store.ts'
import { LookupCache, type LookupCacheOptions } from './lookup-cache.ts'
import { insertSentBroadcast } from '../broadcasts/broadcasts.fixtures.ts'

let database: TestDatabase
let projectId: string
beforeAll(async () => {
  database = await createTestDatabase()
  projectId = (await createProject(database.db, { name: 'Cached', plan: 'free' })).project.id
})
afterAll(async () => {
  await database.drop()
})

function projectCache(options: Partial<LookupCacheOptions<string>> = {}): LookupCache<string> {
  return new LookupCache<string>({
    async load(ids) {
      const rows = await findBeaconProjects(database.db, ids)
      return new Map(rows.map((row) => [row.id, row.plan]))
    },
    maxEntries: 10_000,
    foundTtlMs: 10_000,
    missingTtlMs: 10_000,
    maxPending: 1_000,
    ...options,
  })
}

describe('LookupCache', () => {
  it('answers a flood of distinct made-up ids with one query, and their repeats with none', async () => {
    const cache = projectCache()
    const madeUp = Array.from({ length: 800 }, () => newId('prj'))
    const answers = await Promise.all([...madeUp, projectId].map((id) => cache.get(id)))
    expect(answers.slice(0, -1).every((a) => a === null)).toBe(true)
    expect(answers.at(-1)).toBe('free')
    expect(cache.loads).toBe(1)
    await Promise.all([...madeUp, projectId].map((id) => cache.get(id)))
    expect(cache.loads).toBe(1)
  })

  it('asks again once an answer is older than its TTL, found and missing apart', async () => {
    const cache = projectCache({ foundTtlMs: 60_000, missingTtlMs: 1_000 })
    const missing = newId('prj')
    const now = Date.now()
    await Promise.all([cache.get(projectId, now), cache.get(missing, now)])
    expect(cache.loads).toBe(1)
    await Promise.all([cache.get(projectId, now + 2_000), cache.get(missing, now + 500)])
    expect(cache.loads).toBe(1)
    expect(await cache.get(missing, now + 2_000)).toBeNull()
    expect(cache.loads).toBe(2)
  })

  it('gives a found answer past its TTL at once and refreshes it behind, even while a flood fills maxPending', async () => {
    const cache = projectCache({ foundTtlMs: 1_000, maxPending: 10 })
    const now = Date.now()
    expect(await cache.get(projectId, now)).toBe('free')
    await database.db.query(`UPDATE projects SET plan = 'plus' WHERE id = $1`, [projectId])
    try {
      expect(await cache.get(projectId, now + 2_000)).toBe('free')
      await expect.poll(() => cache.loads).toBe(2)
      expect(await cache.get(projectId)).toBe('plus')
      expect(cache.loads).toBe(2)
      // Ten made-up ids fill the queue: a known project is still answered, a new id is not asked for.
      const flood = Array.from({ length: 10 }, () => cache.get(newId('prj')))
      expect(await cache.get(projectId, Date.now() + 5_000)).toBe('plus')
      expect(await cache.get(newId('prj'))).toBeNull()
      expect(cache.shed).toBe(1)
      await Promise.all(flood)
    } finally {
      await database.db.query(`UPDATE projects SET plan = 'free' WHERE id = $1`, [projectId])
    }
  })

  it('keeps at most maxMissingEntries "not found" answers, dropping the oldest', async () => {
    const cache = projectCache({ maxMissingEntries: 100 })
    const ids = Array.from({ length: 500 }, () => newId('prj'))
    await Promise.all(ids.map((id) => cache.get(id)))
    expect(cache.missingSize).toBe(100)
    expect(cache.size).toBe(0)
    const loads = cache.loads
    await cache.get(ids[499])
    expect(cache.loads).toBe(loads)
    await cache.get(ids[0])
    expect(cache.loads).toBe(loads + 1)
  })

  it('keeps found answers apart: a flood of made-up ids well past every bound never pushes a real project out, nor gets it shed', async () => {
    const cache = projectCache({ maxEntries: 10, maxMissingEntries: 100, maxPending: 50 })
    expect(await cache.get(projectId)).toBe('free')
    let floodLoads = 0
    for (let round = 0; round < 8; round++) {
      const before = cache.loads
      const flood = Array.from({ length: 500 }, () => cache.get(newId('prj')))
      // Asked while the waiting queue is full of made-up ids: still answered, from the cache.
      expect(await cache.get(projectId)).toBe('free')
      expect((await Promise.all(flood)).every((a) => a === null)).toBe(true)
      floodLoads += cache.loads - before
    }
    // 4,000 made-up ids: one query per round, never one per id; the real project needed none.
    expect(floodLoads).toBe(8)
    expect(cache.shed).toBe(8 * 450)
    expect(cache.size).toBe(1)
    expect(cache.missingSize).toBe(100)
  })

  it('keeps the most recently used found answers, and never sheds an id that was found before', async () => {
    const p2 = (await createProject(database.db, { name: 'Second', plan: 'hobby' })).project.id
    const p3 = (await createProject(database.db, { name: 'Third', plan: 'pro' })).project.id
    const cache = projectCache({ maxEntries: 2, maxPending: 5 })
    expect(await cache.get(projectId)).toBe('free')
    expect(await cache.get(p2)).toBe('hobby')
    expect(await cache.get(projectId)).toBe('free') // used: now the most recent
    expect(await cache.get(p3)).toBe('pro') // pushes out p2, the least recently used
    const loads = cache.loads
    expect(await cache.get(projectId)).toBe('free')
    expect(cache.loads).toBe(loads)
    // p2 was pushed out: with the queue full of made-up ids it is still looked up, not shed.
    const flood = Array.from({ length: 5 }, () => cache.get(newId('prj')))
    expect(await cache.get(newId('prj'))).toBeNull()
    expect(cache.shed).toBe(1)
    expect(await cache.get(p2)).toBe('hobby')
    expect(cache.shed).toBe(1)
    await Promise.all(flood)
  })

  it('past maxPending waiting ids, answers "not found" without asking', async () => {
    const cache = projectCache({ maxPending: 100 })
    const answers = await Promise.all(Array.from({ length: 300 }, () => cache.get(newId('prj'))))
    expect(answers.every((a) => a === null)).toBe(true)
    expect(cache.shed).toBe(200)
    expect(cache.loads).toBe(1)
  })

  it('caches nothing when the query fails, and asks again next time', async () => {
    let fail = true
    const cache = new LookupCache<string>({
      async load(ids) {
        if (fail) await database.db.query('SELECT * FROM no_such_table')
        return new Map((await findBeaconProjects(database.db, ids)).map((row) => [row.id, row.id]))
      },
      maxEntries: 10,
      foundTtlMs: 10_000,
      missingTtlMs: 10_000,
      maxPending: 10,
    })
    await expect(cache.get(projectId)).rejects.toThrow()
    fail = false
    expect(await cache.get(projectId)).toBe(projectId)
    expect(cache.loads).toBe(2)
  })
})

describe('BeaconLookups', () => {
  it('knows a project\'s broadcasts from other ids, and batches the questions', async () => {
    const other = (await createProject(database.db, { name: 'Other', plan: 'free' })).project.id
    const bdc = await insertSentBroadcast(database.db, projectId)
    const lookups = new BeaconLookups(database.db)
    const answers = await Promise.all([
      lookups.isProjectsBroadcast(projectId, bdc),
      lookups.isProjectsBroadcast(other, bdc),
      lookups.isProjectsBroadcast(projectId, newId('bdc')),
    ])
    expect(answers).toEqual([true, false, false])
    expect(lookups.broadcasts.loads).toBe(1)
    const project = await lookups.project(projectId)
    expect(project?.id).toBe(projectId)
    expect(project?.effectiveLimits.requests_per_minute).toBeGreaterThan(0)
    expect(await lookups.project(newId('prj'))).toBeNull()
  })
})
