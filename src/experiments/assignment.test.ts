// Which part of a test a subscriber is in: a function of (broadcast, subscriber) only.
import { describe, expect, it } from 'vitest'
import { newId } from '../platform/ids.ts'
import { assignVariant, assignmentPoint } from './assignment.ts'

describe('assignment', () => {
  const broadcast = newId('bdc')
  const subscribers = Array.from({ length: 20_000 }, () => newId('sub'))

  it('is the same on every call (a retry, a second worker, a restart)', () => {
    for (const s of subscribers.slice(0, 100)) expect(assignVariant(broadcast, s, 0.3, 3)).toBe(assignVariant(broadcast, s, 0.3, 3))
    expect(assignmentPoint('bdc_x', 'sub_y')).toBe(assignmentPoint('bdc_x', 'sub_y'))
  })

  it('puts test_share of the audience in the test, split evenly among the variants', () => {
    const parts = new Map<number | null, number>()
    for (const s of subscribers) {
      const v = assignVariant(broadcast, s, 0.3, 3)
      parts.set(v, (parts.get(v) ?? 0) + 1)
    }
    // Binomial: 2,000 expected per variant, a standard deviation of about 42; 5 of them is a generous margin.
    for (const v of [0, 1, 2]) expect(Math.abs(parts.get(v)! - 2000)).toBeLessThan(220)
    expect(Math.abs(parts.get(null)! - 14_000)).toBeLessThan(330)
  })

  it('leaves nobody out with test_share 1, and differs between broadcasts', () => {
    expect(subscribers.every((s) => assignVariant(broadcast, s, 1, 2) !== null)).toBe(true)
    const other = newId('bdc')
    const same = subscribers.slice(0, 1000).filter((s) => assignVariant(broadcast, s, 1, 2) === assignVariant(other, s, 1, 2)).length
    expect(same).toBeGreaterThan(400)
    expect(same).toBeLessThan(600)
  })
})
