// The winner's test, at the unit level: numbers in, statistic and decision
// out, for both metrics (docs/experiments.md has the first example worked).
import { describe, expect, it } from 'vitest'
import { analyse, decide, decideByPerson, twoProportionZ, upperTail } from './decision.ts'

const counts = (key: string, delivered: number, clicked: number, shown = 0) => ({ key, delivered, clicked, shown })

describe('the two-proportion z-test', () => {
  it('gives the normal tail of the standard values', () => {
    expect(upperTail(1.959964)).toBeCloseTo(0.025, 6)
    expect(upperTail(0)).toBeCloseTo(0.5, 6)
    expect(upperTail(-1.644854)).toBeCloseTo(0.95, 6)
    expect(upperTail(3.090232)).toBeCloseTo(0.001, 6)
  })

  it('is the pooled statistic, and 0 when neither rate varies', () => {
    // docs/experiments.md: 78 of 1,000 against 52 of 1,000.
    expect(twoProportionZ(78, 1000, 52, 1000)).toBeCloseTo(2.3583, 4)
    expect(twoProportionZ(52, 1000, 78, 1000)).toBeCloseTo(-2.3583, 4)
    expect(twoProportionZ(0, 10, 0, 10)).toBe(0)
    expect(twoProportionZ(10, 10, 10, 10)).toBe(0)
  })
})

describe('the decision', () => {
  it('picks the worked example\'s winner: b at 7.8% against a at 5.2%, p = 0.0092 < 0.05', () => {
    const d = decide([counts('a', 1000, 52), counts('b', 1000, 78)], 'clicked', 200, 0.95, 'stop')
    expect(d).toMatchObject({ winner: 'b', decided_by: 'test' })
    expect(d.analysis.comparisons[0].p_value).toBeCloseTo(0.00918, 5)
    expect(d.analysis.alpha).toBe(0.05)
    expect(d.reason).toBe('b won: its clicked rate of 7.80% beats every other variant (largest p-value 0.00918 < 0.0500, 95% confidence).')
  })

  it('corrects for several comparisons: the same lead with a third close variant is not significant', () => {
    const d = decide([counts('a', 1000, 52), counts('b', 1000, 78), counts('c', 1000, 66)], 'clicked', 200, 0.95, 'best')
    expect(d.analysis.alpha).toBe(0.025)
    expect(d.analysis.comparisons[2].p_value).toBeCloseTo(0.1496, 4)
    expect(d).toMatchObject({ winner: 'b', decided_by: 'rule' })
    expect(d.reason).toBe('No winner: the lead of b (7.80%) is not significant at 95% confidence. on_inconclusive is best: b, the best rate, is sent to the rest.')
  })

  it('judges on shown when the metric is shown, ignoring clicks', () => {
    const variants = [counts('a', 500, 100, 480), counts('b', 500, 10, 400)]
    expect(decide(variants, 'shown', 100, 0.95, 'stop')).toMatchObject({ winner: 'a', decided_by: 'test' })
    expect(decide(variants, 'clicked', 100, 0.95, 'stop')).toMatchObject({ winner: 'a', decided_by: 'test' })
    const flipped = [counts('a', 500, 10, 480), counts('b', 500, 100, 400)]
    expect(decide(flipped, 'shown', 100, 0.95, 'stop').winner).toBe('a')
    expect(decide(flipped, 'clicked', 100, 0.95, 'stop').winner).toBe('b')
  })

  it('declares no winner below min_per_variant, however large the lead, and on_inconclusive decides', () => {
    const variants = [counts('a', 150, 1), counts('b', 150, 60)]
    expect(analyse(variants, 'clicked', 200, 0.95)).toMatchObject({ leader: 'b', significant: false, short: ['a', 'b'] })
    expect(decide(variants, 'clicked', 200, 0.95, 'best')).toMatchObject({ winner: 'b', decided_by: 'rule' })
    expect(decide(variants, 'clicked', 200, 0.95, 'first')).toMatchObject({ winner: 'a', decided_by: 'rule' })
    const stopped = decide(variants, 'clicked', 200, 0.95, 'stop')
    expect(stopped).toMatchObject({ winner: null, decided_by: 'rule' })
    expect(stopped.reason).toBe('No winner: a, b had fewer than 200 delivered. on_inconclusive is stop: the rest of the audience gets nothing.')
    expect(decide(variants, 'clicked', 150, 0.95, 'stop')).toMatchObject({ winner: 'b', decided_by: 'test' })
  })

  it('with nothing delivered has no leader; best falls back to the first variant', () => {
    const variants = [counts('a', 0, 0), counts('b', 0, 0)]
    expect(analyse(variants, 'clicked', 1, 0.95)).toMatchObject({ leader: null, significant: false })
    expect(decide(variants, 'clicked', 1, 0.95, 'best')).toMatchObject({ winner: 'a', reason: expect.stringMatching(/^No winner: nothing was delivered\./) })
  })

  it('a tie goes to the earlier variant, and is never significant', () => {
    const d = analyse([counts('a', 400, 40), counts('b', 400, 40)], 'clicked', 1, 0.95)
    expect(d).toMatchObject({ leader: 'a', significant: false })
    expect(d.comparisons[1].p_value).toBeCloseTo(0.5, 6)
  })

  it("a person's choice wins over the leader, and their reason says what the leader was", () => {
    const variants = [counts('a', 1000, 52), counts('b', 1000, 78)]
    expect(decideByPerson(variants, 'clicked', 200, 0.95, 'a')).toMatchObject({ winner: 'a', decided_by: 'person', reason: expect.stringContaining('the leader was b') })
    expect(decideByPerson(variants, 'clicked', 200, 0.95, undefined)).toMatchObject({ winner: 'b', decided_by: 'person', reason: expect.stringContaining('its lead was significant') })
  })
})
