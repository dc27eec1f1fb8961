// Leases: a write left over from an earlier claim of a job (a renewal that
// reached the database late, a run that lost its lease while the same worker
// claimed the job again) changes nothing, and a job whose end could not be
// written while the database was away is released once it is back, instead of
// staying locked to a worker that no longer runs it.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createTestDatabase, testDbMode, type TestDatabase } from '../../../test/support/database.ts'
import { startTcpRelay, type TcpRelay } from '../../../test/support/tcp-relay.ts'
import { openDatabase, type Database } from '../db/database.ts'
import { enqueue } from './queue.ts'
import { claimJobs, completeJob, renewLease, type JobLease } from './jobs.store.ts'
import { JobWorker, LeaseLostError, retryWhileLeased, WorkerStoppingError, type Job } from './worker.ts'
import { loseClaimAnswer, until } from '../../../test/support/lost-claim.ts'

let database: TestDatabase
beforeAll(async () => {
  database = await createTestDatabase()
})
afterAll(async () => {
  await database.drop()
})
beforeEach(async () => {
  await database.db.query('DELETE FROM jobs')
})

interface LeaseState {
  locked_by: string | null
  lease_token: string | null
  locked_until: Date | null
}

async function state(id: number): Promise<LeaseState | undefined> {
  const result = await database.db.query<LeaseState>('SELECT locked_by, lease_token, locked_until FROM jobs WHERE id = $1', [id])
  return result.rows[0]
}

async function claimOne(workerId: string, token: string, leaseMs: number): Promise<JobLease> {
  const [row] = await claimJobs(database.db, { limit: 1, kinds: ['fanout_broadcast'], payloadVersions: [1], workerId, token, leaseMs })
  expect(row).toBeDefined()
  return { id: row.id, token: row.lease_token }
}

describe('lease writes of an earlier claim', () => {
  it('a renewal arriving after the job finished changes nothing', async () => {
    const id = await enqueue(database.db, 'fanout_broadcast', { broadcast_id: 'bdc_done' })
    const lease = await claimOne('w1', 'claim-1', 30_000)
    expect(await completeJob(database.db, lease)).toBe(true)
    expect(await renewLease(database.db, lease, 30_000)).toBe(false)
    expect(await state(id)).toBeUndefined()
  })

  it('a late renewal never revives a lapsed lease, and one of an earlier claim never extends a re-claim by the same worker', async () => {
    const id = await enqueue(database.db, 'fanout_broadcast', { broadcast_id: 'bdc_again' })
    const first = await claimOne('w1', 'claim-1', 50)
    await new Promise((resolve) => setTimeout(resolve, 120))
    const lapsed = await state(id)
    // Lapsed, nobody has claimed it since: the late renewal still must not bring it back.
    expect(await renewLease(database.db, first, 30_000)).toBe(false)
    expect(await state(id)).toEqual(lapsed)

    // The same worker claims it again; the first claim's renewal and completion touch nothing.
    const second = await claimOne('w1', 'claim-2', 2_000)
    const reclaimed = await state(id)
    expect(reclaimed).toMatchObject({ locked_by: 'w1', lease_token: 'claim-2' })
    expect(await renewLease(database.db, first, 30_000)).toBe(false)
    expect(await completeJob(database.db, first)).toBe(false)
    expect(await state(id)).toEqual(reclaimed)
    expect(await renewLease(database.db, second, 30_000)).toBe(true)
    expect((await state(id))!.locked_until!.getTime()).toBeGreaterThan(reclaimed!.locked_until!.getTime())
  })
})

describe('retryWhileLeased', () => {
  const withCode = (code: string) => Object.assign(new Error(code), { code })

  it('writes again after connection failures, deadlocks and server timeouts, and stops on anything else', async () => {
    const thrown = [withCode('ECONNRESET'), withCode('08006'), withCode('40P01'), withCode('55P03')]
    let calls = 0
    const written = await retryWhileLeased(new AbortController().signal, async () => {
      calls++
      const err = thrown.shift()
      if (err) throw err
      return 'saved'
    })
    expect([written, calls]).toEqual(['saved', 5])

    calls = 0
    const refused = retryWhileLeased(new AbortController().signal, async () => {
      calls++
      throw withCode('23505')
    })
    await expect(refused).rejects.toMatchObject({ code: '23505' })
    await expect(retryWhileLeased(new AbortController().signal, async () => { throw new LeaseLostError(1) })).rejects.toBeInstanceOf(LeaseLostError)
    expect(calls).toBe(1)
  })

  it('gives up once the worker stops, and makes one last try once the lease was seen lost', async () => {
    const stopping = new AbortController()
    stopping.abort(new WorkerStoppingError())
    let calls = 0
    await expect(retryWhileLeased(stopping.signal, async () => { calls++; throw withCode('ECONNREFUSED') })).rejects.toMatchObject({ code: 'ECONNREFUSED' })
    expect(calls).toBe(1)

    const lost = new AbortController()
    calls = 0
    const write = retryWhileLeased(lost.signal, async () => {
      calls++
      if (calls === 2) lost.abort(new LeaseLostError(1))
      throw withCode('ECONNREFUSED')
    })
    await expect(write).rejects.toMatchObject({ code: 'ECONNREFUSED' })
    expect(calls).toBe(3)
  })
})

// The database cut for real through a relay: PostgreSQL only.
describe.skipIf(testDbMode() !== 'postgres')('a worker cut off from the database', () => {
  let relay: TcpRelay
  let cut: Database
  let worker: JobWorker | null = null
  /** Handlers still waiting to be let go: released at the end, so stop() never waits on them. */
  const waiting: Array<() => void> = []

  beforeEach(async () => {
    const url = new URL(database.url!)
    relay = await startTcpRelay(url.hostname, Number(url.port || 5432))
    cut = await openDatabase({ databaseUrl: relay.urlFor(database.url!), dataDir: null, poolSize: 4 })
  })
  afterEach(async () => {
    relay.heal()
    waiting.splice(0).forEach((release) => release())
    await worker?.stop(0)
    worker = null
    await cut.close()
    await relay.close()
  })

  it('a run that lost its lease while the same worker claimed the job again is stopped and cannot complete it', async () => {
    const runs: Array<{ job: Job<'fanout_broadcast'>; finish: () => void; finished: Promise<void> }> = []
    worker = new JobWorker(
      cut,
      {
        fanout_broadcast: async (job) => {
          let finish!: () => void
          const finished = new Promise<void>((resolve) => (finish = resolve))
          runs.push({ job, finish, finished })
          waiting.push(finish)
          await finished
          await cut.transaction((tx) => job.completeIn(tx))
        },
      },
      { leaseMs: 600, pollIntervalMs: 50, workerId: 'one-worker' },
    )
    await worker.start()
    const id = await enqueue(database.db, 'fanout_broadcast', { broadcast_id: 'bdc_twice' })
    await until(() => runs.length === 1)

    // Cut for longer than the lease: run 1 cannot renew, and its lease lapses.
    relay.reset()
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    relay.heal()
    // Back: the worker claims the job again under the same worker id (run 2).
    await until(() => runs.length === 2)
    expect(await state(id)).toMatchObject({ locked_by: 'one-worker' })

    // Run 1 learns it lost the lease (its renewals no longer match), and its completion is refused.
    await until(() => runs[0].job.signal.aborted)
    expect(runs[0].job.signal.reason).toBeInstanceOf(LeaseLostError)
    expect(runs[1].job.signal.aborted).toBe(false)
    await expect(cut.transaction((tx) => runs[0].job.completeIn(tx))).rejects.toBeInstanceOf(LeaseLostError)
    expect(await state(id)).toMatchObject({ locked_by: 'one-worker' })

    runs[1].finish()
    await until(async () => (await state(id)) === undefined)
    runs[0].finish()
  })

  it('a job whose failure could not be written while the database was away is released once it is back', async () => {
    let failNow!: () => void
    const failing = new Promise<void>((resolve) => (failNow = resolve))
    waiting.push(failNow)
    let started = false
    worker = new JobWorker(
      cut,
      {
        fanout_broadcast: async () => {
          started = true
          await failing
          throw new Error('push service exploded')
        },
      },
      // A long lease: without the release the job would stay locked to this worker for 30 s.
      { leaseMs: 30_000, pollIntervalMs: 50, workerId: 'gone-worker' },
    )
    await worker.start()
    const id = await enqueue(database.db, 'fanout_broadcast', { broadcast_id: 'bdc_release' })
    await until(() => started)
    const held = await state(id)
    const lease = { id, token: held!.lease_token! }

    relay.reset()
    failNow()
    await new Promise((resolve) => setTimeout(resolve, 800))
    expect(await state(id)).toEqual(held)
    relay.heal()

    // Released well within the lease: due again later (backoff), held by nobody.
    await until(async () => (await state(id))?.locked_by === null, 8_000)
    expect(await state(id)).toMatchObject({ locked_by: null, lease_token: null, locked_until: null })
    // A renewal of that claim reaching the database now (sent before the cut) changes nothing.
    expect(await renewLease(database.db, lease, 30_000)).toBe(false)
    expect(await state(id)).toMatchObject({ locked_by: null, lease_token: null, locked_until: null })
  })

  it('a claim the database applied but whose answer was lost is handed back once the database is back, not left to its lease', async () => {
    const runs: number[] = []
    worker = new JobWorker(cut, { fanout_broadcast: async (job) => void runs.push(job.attempts) }, { leaseMs: 30_000, pollIntervalMs: 50 })
    const id = await enqueue(database.db, 'fanout_broadcast', { broadcast_id: 'bdc_lost_claim' })
    await loseClaimAnswer(database.url!, 'jobs', relay, () => worker!.start())
    await until(async () => (await state(id))?.locked_by === worker!.workerId)
    expect(runs).toEqual([])
    relay.heal()
    // Handed back (its attempt not counted) and run, without waiting for the 30 s lease.
    await until(async () => (await state(id)) === undefined, 8_000)
    expect(runs).toEqual([1])
  })
})
