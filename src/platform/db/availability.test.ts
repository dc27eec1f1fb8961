// The outage log: one line as an outage starts, one as it ends, whatever the
// number of failures in between or the order in which round trips that
// straddle a change finish.
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
  function availability(log: ReturnType<typeof recorder>['log'], probe: () => Promise<unknown> = () => Promise.reject(refused)) {
    const a = new DatabaseAvailability(log, probe)
    opened.push(a)
    return a
  }

  it('logs an outage once however many attempts fail, and its end once', () => {
    const { lines, log } = recorder()
    const a = availability(log)
    for (let i = 0; i < 50; i++) a.failed(refused)
    expect(a.reachable).toBe(false)
    a.succeeded()
    a.succeeded()
    expect(a.reachable).toBe(true)
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(/^database unreachable/)
    expect(lines[1]).toBe('database reachable again')
  })

  it('ignores a round trip that started before the last change', () => {
    const { lines, log } = recorder()
    const a = availability(log)
    const beforeCut = a.begin()
    a.failed(refused)
    // Answered just before the cut but reported after it: the outage goes on.
    a.succeeded(beforeCut)
    expect(a.reachable).toBe(false)
    const duringOutage = a.begin()
    a.succeeded()
    // Failed because of the cut, but reported after the heal: no second outage.
    a.failed(refused, duringOutage)
    expect(a.reachable).toBe(true)
    expect(lines).toHaveLength(2)
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

  it('notices the end of an outage by itself, probing with backoff', async () => {
    const { lines, log } = recorder()
    let probes = 0
    let up = false
    const a = availability(log, async () => {
      probes++
      if (!up) throw refused
    })
    a.failed(refused)
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    // 250, 500 ms… apart: a few probes in a second, not one per millisecond.
    expect(probes).toBeLessThanOrEqual(3)
    up = true
    for (let waited = 0; !a.reachable && waited < 10_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(a.reachable).toBe(true)
    expect(lines).toEqual([expect.stringMatching(/^database unreachable/), 'database reachable again'])
  })
})
