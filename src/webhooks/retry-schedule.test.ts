import { describe, expect, it } from 'vitest'
import { judgeAttempt } from './retry-schedule.ts'
import { MAX_ATTEMPTS, RETRY_SCHEDULE_MS, retryDelayMs } from './retry-schedule.ts'

describe('webhook retry schedule', () => {
  it("follows Svix's schedule, with ±20% jitter, for more than 24 hours", () => {
    expect(RETRY_SCHEDULE_MS.map((_, i) => retryDelayMs(i + 1, 5000, () => 0.5))).toEqual(RETRY_SCHEDULE_MS)
    expect(retryDelayMs(1, 5000, () => 0)).toBe(4000)
    expect(retryDelayMs(1, 5000, () => 1)).toBe(6000)
    expect(retryDelayMs(99, 5000, () => 0.5)).toBe(36_000_000)
    expect(RETRY_SCHEDULE_MS.reduce((a, b) => a + b, 0)).toBeGreaterThan(24 * 3_600_000)
    expect(MAX_ATTEMPTS).toBe(8)
  })

  it('scales with the configured base', () => {
    expect(retryDelayMs(1, 5, () => 0.5)).toBe(5)
    expect(retryDelayMs(2, 5, () => 0.5)).toBe(300)
  })

  it('judges answers: 2xx done, 410 disables, 429/408/5xx/no answer retry, 3xx and other 4xx rejected', () => {
    expect(judgeAttempt({ status: 204, retryAfter: null })).toEqual({ kind: 'done' })
    expect(judgeAttempt({ status: 410, retryAfter: null })).toEqual({ kind: 'disable' })
    expect(judgeAttempt({ status: 429, retryAfter: '7' })).toEqual({ kind: 'retry', retryAfterMs: 7000 })
    expect(judgeAttempt({ status: 503, retryAfter: null })).toEqual({ kind: 'retry', retryAfterMs: null })
    expect(judgeAttempt({ status: null, error: 'ETIMEDOUT' })).toEqual({ kind: 'retry', retryAfterMs: null })
    expect(judgeAttempt({ status: 302, retryAfter: null })).toEqual({ kind: 'rejected' })
    expect(judgeAttempt({ status: 400, retryAfter: null })).toEqual({ kind: 'rejected' })
  })
})
