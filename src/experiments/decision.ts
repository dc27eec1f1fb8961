// How an A/B test picks its winner (docs/experiments.md has a worked
// example). Pure: counts in, statistic and decision out.
//
// The test: a one-sided two-proportion z-test of the leader (the variant with
// the best rate) against each other variant, with a pooled standard error.
// With k variants the leader is compared k - 1 times, so each comparison must
// pass at (1 - confidence) / (k - 1) (Bonferroni): the chance that a variant
// no better than the others is declared the winner stays under 1 - confidence.
// The normal distribution comes from simple-statistics (docs/dependencies.md).
import { errorFunction } from 'simple-statistics'
import type { ExperimentMetric, OnInconclusive } from './experiments.schemas.ts'

export const TEST_NAME = 'one-sided two-proportion z-test (pooled), leader against each other variant, Bonferroni-corrected'

export interface VariantCounts {
  key: string
  delivered: number
  clicked: number
  shown: number
}

export interface Comparison {
  key: string
  /** The metric's rate: successes / delivered; null with nothing delivered. */
  rate: number | null
  /** The leader's z against this variant; null for the leader itself or without data. */
  z: number | null
  /** P(a lead this large | no real difference), one-sided; null as z. */
  p_value: number | null
}

export interface Analysis {
  leader: string | null
  /** True when the leader beats every other variant at the corrected level and every variant has min_per_variant delivered. */
  significant: boolean
  /** The level each comparison must pass: (1 - confidence) / (k - 1). */
  alpha: number
  /** The variants short of min_per_variant delivered, in their order. */
  short: string[]
  comparisons: Comparison[]
}

/** Upper tail of the standard normal: P(Z > z) = erfc(z / √2) / 2. */
export function upperTail(z: number): number {
  return (1 - errorFunction(z / Math.SQRT2)) / 2
}

/** The pooled two-proportion z statistic of a (x1 of n1) over b (x2 of n2); 0 when neither varies (all or none succeeded). */
export function twoProportionZ(x1: number, n1: number, x2: number, n2: number): number {
  const pooled = (x1 + x2) / (n1 + n2)
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
  if (se === 0) return 0
  return (x1 / n1 - x2 / n2) / se
}

function successes(v: VariantCounts, metric: ExperimentMetric): number {
  return metric === 'clicked' ? v.clicked : v.shown
}

export function analyse(variants: VariantCounts[], metric: ExperimentMetric, minPerVariant: number, confidence: number): Analysis {
  // Rounded: 1 - 0.95 is 0.05000000000000004 in floating point.
  const alpha = Math.round((1 - confidence) * 1e9) / 1e9 / Math.max(1, variants.length - 1)
  const rateOf = (v: VariantCounts) => (v.delivered > 0 ? Math.min(1, successes(v, metric) / v.delivered) : null)
  // The leader: the best rate; a tie goes to the earlier variant.
  let leader: VariantCounts | null = null
  for (const v of variants) {
    const rate = rateOf(v)
    if (rate !== null && (leader === null || rate > rateOf(leader)!)) leader = v
  }
  const short = variants.filter((v) => v.delivered < minPerVariant).map((v) => v.key)
  const comparisons = variants.map((v): Comparison => {
    const rate = rateOf(v)
    if (!leader || v === leader || rate === null) return { key: v.key, rate, z: null, p_value: null }
    const z = twoProportionZ(Math.min(successes(leader, metric), leader.delivered), leader.delivered, Math.min(successes(v, metric), v.delivered), v.delivered)
    return { key: v.key, rate, z, p_value: upperTail(z) }
  })
  const others = comparisons.filter((c) => leader && c.key !== leader.key)
  const significant = leader !== null && short.length === 0 && others.every((c) => c.p_value !== null && c.p_value < alpha)
  return { leader: leader?.key ?? null, significant, alpha, short, comparisons }
}

export interface Decision {
  winner: string | null
  decided_by: 'test' | 'rule' | 'person'
  reason: string
  analysis: Analysis
}

const percent = (rate: number | null) => (rate === null ? 'no rate' : `${(rate * 100).toFixed(2)}%`)

/** The automatic decision at decide_after: the test's winner, or what on_inconclusive says. */
export function decide(
  variants: VariantCounts[],
  metric: ExperimentMetric,
  minPerVariant: number,
  confidence: number,
  onInconclusive: OnInconclusive,
): Decision {
  const analysis = analyse(variants, metric, minPerVariant, confidence)
  const rateOf = (key: string | null) => analysis.comparisons.find((c) => c.key === key)?.rate ?? null
  if (analysis.significant) {
    const worst = Math.max(...analysis.comparisons.filter((c) => c.p_value !== null).map((c) => c.p_value!))
    return {
      winner: analysis.leader,
      decided_by: 'test',
      reason:
        `${analysis.leader} won: its ${metric} rate of ${percent(rateOf(analysis.leader))} beats every other variant ` +
        `(largest p-value ${worst.toPrecision(3)} < ${analysis.alpha.toPrecision(3)}, ${confidence * 100}% confidence).`,
      analysis,
    }
  }
  const why = analysis.leader === null
    ? 'nothing was delivered'
    : analysis.short.length > 0
      ? `${analysis.short.join(', ')} had fewer than ${minPerVariant} delivered`
      : `the lead of ${analysis.leader} (${percent(rateOf(analysis.leader))}) is not significant at ${confidence * 100}% confidence`
  const fallback = onInconclusive === 'stop' ? null : onInconclusive === 'first' ? variants[0].key : (analysis.leader ?? variants[0].key)
  const then = fallback === null
    ? 'on_inconclusive is stop: the rest of the audience gets nothing.'
    : onInconclusive === 'first'
      ? `on_inconclusive is first: ${fallback} is sent to the rest.`
      : `on_inconclusive is best: ${fallback}, the best rate, is sent to the rest.`
  return { winner: fallback, decided_by: 'rule', reason: `No winner: ${why}. ${then}`, analysis }
}

/** A person ended the test early: their choice, or the leader now. */
export function decideByPerson(
  variants: VariantCounts[],
  metric: ExperimentMetric,
  minPerVariant: number,
  confidence: number,
  chosen: string | undefined,
): Decision {
  const analysis = analyse(variants, metric, minPerVariant, confidence)
  const winner = chosen ?? analysis.leader ?? variants[0].key
  const how = chosen ? `chosen by a person who ended the test early` : `the leader when a person ended the test early`
  const standing = analysis.significant ? 'its lead was significant' : 'its lead was not (yet) significant'
  return { winner, decided_by: 'person', reason: `${winner}: ${how}; ${chosen && chosen !== analysis.leader ? `the leader was ${analysis.leader ?? 'none'}` : standing}.`, analysis }
}
