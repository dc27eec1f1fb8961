import { describe, expect, it } from 'vitest'
import { isWellFormedId, newId } from './ids.ts'

describe('newId', () => {
  it('gives well-formed ids, all different across refills of the random pool', () => {
    // 4 KiB of random bytes serve 256 ids: 10,000 ids cross the refill 39 times.
    const ids = Array.from({ length: 10_000 }, () => newId('evt', 1_700_000_000_000))
    expect(ids.every((id) => isWellFormedId('evt', id))).toBe(true)
    expect(new Set(ids).size).toBe(ids.length)
    // Same millisecond: the random tails differ, so they are not all one character either.
    expect(new Set(ids.map((id) => id.slice(-16, -15))).size).toBe(32)
  })

  it('sorts by creation time', () => {
    const earlier = newId('bdc', 1_700_000_000_000)
    const later = newId('bdc', 1_700_000_000_001)
    expect(earlier < later).toBe(true)
    expect(earlier.slice(4, 14)).toBe('01hf7yat00')
  })
})
