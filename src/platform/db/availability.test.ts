// The outage log: one line as an outage starts, one as it ends, whatever the
// number of failures in between, the order in which round trips that
// straddle a change finish, or a server that answers once while shutting down.
import { afterEach, describe, expect, it } from 'vitest'
import { DatabaseAvailability, isConnectionError } from './availability.ts'

function recorder() {
  const lines: string[] = []
  const log = { warn: (_: object, msg: string) => void lines.push(msg), info: (_: object, msg: string) => void lines.push(msg) }
  return { lines, log }
}

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })

describe('DatabaseAvailability', () => {
  const opened: DatabaseAvailability[] = []
  afterEach(() => opened.splice(0).forEach((a) => a.close()))
  const SETTLE_MS = 30
  function availability(log: ReturnType<typeof recorder>['log'], probe: () => Promise<unknown> = () => Promise.reject(refused)) {
    const a = new DatabaseAvailability(log, probe, SETTLE_MS)
    opened.push(a)
    return a
  }
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
  const answers = () => Promise.resolve()

  it('logs an outage once however many attempts fail, and its end once, after the settle', async () => {
    const { lines, log } = recorder()
    const a = availability(log, answers)
    for (let i = 0; i < 50; i++) a.failed(refused)
    expect(a.reachable).toBe(false)
    a.succeeded()
    a.succeeded()
    expect(a.reachable).toBe(true)
    // The end waits for the server to go on answering.
    expect(lines).toHaveLength(1)
    await sleep(SETTLE_MS * 4)
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(/^database unreachable/)
    expect(lines[1]).toBe('database reachable again')
  })

  it('ignores a round trip that started before the last change', async () => {
    const { lines, log } = recorder()
    const a = availability(log, answers)
    const beforeCut = a.begin()
    a.failed(refused)
    // Answered just before the cut but reported after it: the outage goes on.
    a.succeeded(beforeCut)
    expect(a.reachable).toBe(false)
    const duringOutage = a.begin()
    a.succeeded()
    // Failed because of the cut, but reported after the heal: no second outage, and the settle goes on.
    a.failed(refused, duringOutage)
    expect(a.reachable).toBe(true)
    await sleep(SETTLE_MS * 4)
    const afterEnd = a.begin()
    a.failed(refused, duringOutage)
    expect(a.reachable).toBe(true)
    expect(lines).toEqual([expect.stringMatching(/^database unreachable/), 'database reachable again'])
    // A failure of a round trip that started after the end is a new outage.
    a.failed(refused, afterEnd)
    expect(a.reachable).toBe(false)
    expect(lines).toHaveLength(3)
  })

  it('counts a server that answers once and then fails again as the same outage', async () => {
    const { lines, log } = recorder()
    let up = false
    const a = availability(log, async () => {
      if (!up) throw refused
    })
    a.failed(refused)
    // A backend the shutdown has not ended yet answers…
    a.succeeded()
    expect(a.reachable).toBe(true)
    // …and the next query, begun after that answer, fails.
    a.failed(refused)
    expect(a.reachable).toBe(false)
    await sleep(SETTLE_MS * 4)
    expect(lines).toHaveLength(1)
    // Back for good: the probe notices, the settle confirms, one end is logged.
    up = true
    for (let waited = 0; lines.length < 2 && waited < 5_000; waited += 20) await sleep(20)
    expect(lines).toEqual([expect.stringMatching(/^database unreachable/), 'database reachable again'])
  })

  it('goes on with the outage when the settle probe fails', async () => {
    const { lines, log } = recorder()
    let probes = 0
    const a = availability(log, async () => {
      probes++
      throw refused
    })
    a.failed(refused)
    a.succeeded()
    await sleep(SETTLE_MS * 4)
    expect(probes).toBeGreaterThanOrEqual(1)
    expect(a.reachable).toBe(false)
    expect(lines).toHaveLength(1)
  })

  it('counts only failures that mean the server is not there', () => {
    const { lines, log } = recorder()
    const a = availability(log)
    a.failed(Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }))
    a.failed(Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }))
    a.failed(new Error('a bug'))
    expect(a.reachable).toBe(true)
    expect(lines).toHaveLength(0)
    for (const err of [
      new Error('Connection terminated unexpectedly'),
      new Error('Query read timeout'),
      new Error('timeout exceeded when trying to connect'),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
    ]) {
      expect(isConnectionError(err), err.message).toBe(true)
    }
  })

  it('probes on after a settle probe that failed with another error, and ends the outage once one answers', async () => {
    const { lines, log } = recorder()
    let answers = 0
    const tooMany = Object.assign(new Error('sorry, too many clients already'), { code: '53300' })
    const a = availability(log, async () => {
      // The settle's probe meets an error that says nothing of the connection; the loop's next probe answers.
      if (answers++ === 0) throw tooMany
    })
    a.failed(refused)
    a.succeeded()
    for (let waited = 0; lines.length < 2 && waited < 5_000; waited += 20) await sleep(20)
    expect(answers).toBeGreaterThanOrEqual(3)
    expect(lines).toEqual([expect.stringMatching(/^database unreachable/), 'database reachable again'])
  })

  it('keeps one probe loop when a probe begun before a relapse fails after it, and none after close', async () => {
    const { lines, log } = recorder()
    let probes = 0
    let failFirst: (err: Error) => void = () => {}
    // As ping() does, each probe reports its own outcome back.
    const a: DatabaseAvailability = availability(log, () => {
      probes++
      const startedAt = a.begin()
      const outcome = probes === 1 ? new Promise<void>((_, reject) => (failFirst = reject)) : Promise.reject(refused)
      return outcome.catch((err: Error) => {
        a.failed(err, startedAt)
        throw err
      })
    })
    a.failed(refused)
    for (let waited = 0; probes === 0 && waited < 2_000; waited += 10) await sleep(10)
    expect(probes).toBe(1)
    // While the first probe hangs: an answer, then a failure begun after it (a relapse, which probes again)…
    a.succeeded()
    a.failed(refused)
    // …and then the hanging probe fails: it must not start a second loop.
    failFirst(refused)
    await sleep(1_000)
    // One loop from the relapse: probes at ~250 and ~750 ms (backoff doubling); two loops would make ~4.
    expect(probes).toBeLessThanOrEqual(3)
    a.close()
    const atClose = probes
    await sleep(600)
    expect(probes).toBe(atClose)
    expect(lines).toEqual([expect.stringMatching(/^database unreachable/)])
  })

  it('logs the end of an outage when closed while the server answers again (during the settle)', () => {
    const { lines, log } = recorder()
    const a = availability(log, answers)
    a.failed(refused)
    a.succeeded()
    a.close()
    a.close()
    expect(lines).toEqual([expect.stringMatching(/^database unreachable/), 'database reachable again'])
  })

  it('notices the end of an outage by itself, probing with backoff', async () => {
    const { lines, log } = recorder()
    let probes = 0
    let up = false
    const a = availability(log, async () => {
      probes++
      if (!up) throw refused
    })
    a.failed(refused)
    await sleep(1_000)
    // 250, 500 ms… apart: a few probes in a second, not one per millisecond.
    expect(probes).toBeLessThanOrEqual(3)
    up = true
    for (let waited = 0; lines.length < 2 && waited < 10_000; waited += 50) await sleep(50)
    expect(a.reachable).toBe(true)
    expect(lines).toEqual([expect.stringMatching(/^database unreachable/), 'database reachable again'])
  })
})
