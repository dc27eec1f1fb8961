// Frequency caps (issue 24, docs/frequency-caps.md): the project setting and
// what a send says about them. The TypeScript types come from these schemas.
import { Type, type Static } from 'typebox'

const HOUR = 3600
const DAY = 24 * HOUR

/**
 * The windows a rule may use, in seconds. A fixed list rather than any
 * duration: each reads plainly in the dashboard, and the longest (30 days)
 * bounds what fan-out keeps per subscriber (push_counts, migration 0030).
 */
export const CAP_WINDOWS = {
  '1h': HOUR,
  '2h': 2 * HOUR,
  '3h': 3 * HOUR,
  '6h': 6 * HOUR,
  '12h': 12 * HOUR,
  '1d': DAY,
  '2d': 2 * DAY,
  '3d': 3 * DAY,
  '7d': 7 * DAY,
  '14d': 14 * DAY,
  '30d': 30 * DAY,
} as const
export type CapWindow = keyof typeof CAP_WINDOWS

/** The longest window: pushes older than this never count, so they are not kept. */
export const LONGEST_WINDOW_SECONDS = CAP_WINDOWS['30d']
/** Rules per project: enough for an hour, a day, a week and a month, and one more. */
export const MAX_CAP_RULES = 5
/** The most pushes one rule may allow: more than any cap worth having, and a bound on what is kept per subscriber. */
export const MAX_CAP_PUSHES = 1000

export const FrequencyCapRule = Type.Object(
  {
    max: Type.Integer({ minimum: 1, maximum: MAX_CAP_PUSHES, description: 'At most this many pushes to one subscriber within the window (1-1000).' }),
    per: Type.Enum(Object.keys(CAP_WINDOWS) as CapWindow[], { description: 'The rolling window: 1h, 2h, 3h, 6h, 12h, 1d, 2d, 3d, 7d, 14d or 30d.' }),
  },
  { additionalProperties: false },
)
export type FrequencyCapRule = Static<typeof FrequencyCapRule>

export const FrequencyCaps = Type.Union(
  [
    Type.Array(FrequencyCapRule, { maxItems: MAX_CAP_RULES }),
    Type.Null(),
  ],
  {
    description:
      'At most 5 rules, each at most `max` pushes per subscriber in a rolling window `per`, counted across every broadcast of the project ' +
      '(transactional sends are not capped but count). A subscriber over any rule is skipped (failed, reason capped) or deferred, as the send says. ' +
      'null or []: no caps. docs/frequency-caps.md.',
  },
)
export type FrequencyCaps = Static<typeof FrequencyCaps>

/** A send's class: only marketing sends are capped. */
export const SEND_CLASSES = ['marketing', 'transactional'] as const
export type SendClass = (typeof SEND_CLASSES)[number]

/** What a marketing send does with a subscriber over a cap. */
export const ON_CAPPED = ['skip', 'defer'] as const
export type OnCapped = (typeof ON_CAPPED)[number]

/** A rule as fan-out checks it: the window in seconds. */
export interface CapCheck {
  max: number
  seconds: number
}

/** The rules as fan-out checks them; null when the project has none (nothing is counted then). */
export function capChecks(caps: FrequencyCapRule[] | null | undefined): CapCheck[] | null {
  if (!caps || caps.length === 0) return null
  return caps.map((rule) => ({ max: rule.max, seconds: CAP_WINDOWS[rule.per] }))
}
