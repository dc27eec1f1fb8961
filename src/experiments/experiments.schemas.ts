// A/B tests (issue 25, docs/experiments.md): the `variants` and `experiment`
// fields of POST /v1/send, the `experiment` of the broadcast view and the
// body of POST /v1/broadcasts/:id/experiment/decide.
import { Type, type Static } from 'typebox'
import { CLICK_URL, MAX_ACTIONS, NotificationAction } from '../broadcasts/notification-action.schemas.ts'

/** A variant's key: short and plain, so it reads well in the payload, the beacon and a chart. */
export const VARIANT_KEY = '^[A-Za-z0-9_-]{1,16}$'
export const MIN_VARIANTS = 2
export const MAX_VARIANTS = 10
export const METRICS = ['clicked', 'shown'] as const
export type ExperimentMetric = (typeof METRICS)[number]
export const ON_INCONCLUSIVE = ['best', 'first', 'stop'] as const
export type OnInconclusive = (typeof ON_INCONCLUSIVE)[number]
/** decide_after: a number and a unit, "30m", "4h", "2d". */
export const DURATION = '^[1-9][0-9]{0,4}(m|h|d)$'

/** Defaults, applied in code (an Ajv default would change the Idempotency-Key hash of the body). */
export const DEFAULT_TEST_SHARE = 0.2
export const DEFAULT_METRIC: ExperimentMetric = 'clicked'
export const DEFAULT_DECIDE_AFTER = '4h'
export const DEFAULT_MIN_PER_VARIANT = 200
export const DEFAULT_ON_INCONCLUSIVE: OnInconclusive = 'best'
/** The confidence the z-test asks for: a winner's lead would arise by chance less than 5% of the time. */
export const CONFIDENCE = 0.95
/** decide_after: at least 5 minutes (a decision needs engagement to come in), at most 7 days. */
export const MIN_DECIDE_AFTER_MS = 5 * 60_000
export const MAX_DECIDE_AFTER_MS = 7 * 86_400_000

/** A variant's notification: each field given replaces the top-level notification's (docs/experiments.md). */
export const VariantNotification = Type.Object(
  {
    title: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
    body: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
    icon: Type.Optional(Type.String({ description: 'HTTPS URL or a PNG/JPEG/WebP data URL, as notification.icon.' })),
    image: Type.Optional(Type.String({ description: 'HTTPS URL or a PNG/JPEG/WebP data URL, as notification.image (Hobby plan or higher).' })),
    url: Type.Optional(Type.String({ maxLength: 2048, pattern: CLICK_URL })),
  },
  { additionalProperties: false, minProperties: 1 },
)

export const VariantInput = Type.Object(
  {
    key: Type.String({ pattern: VARIANT_KEY, description: 'Unique among the variants: 1-16 of A-Z a-z 0-9 _ -.' }),
    notification: VariantNotification,
    actions: Type.Optional(
      Type.Array(NotificationAction, { maxItems: MAX_ACTIONS, description: "This variant's buttons; default: the top-level notification's." }),
    ),
  },
  { additionalProperties: false },
)
export type VariantInput = Static<typeof VariantInput>

export const Variants = Type.Array(VariantInput, {
  minItems: MIN_VARIANTS,
  maxItems: MAX_VARIANTS,
  description:
    'An A/B test (docs/experiments.md): 2 to 10 versions of the notification. Each variant\'s notification fields replace the top-level ' +
    "notification's (which stays required, as the base every variant starts from). Needs experiment.",
})

// No schema defaults: they would be written into the body, whose hash an Idempotency-Key is checked against.
export const ExperimentInput = Type.Object(
  {
    test_share: Type.Optional(
      Type.Number({ exclusiveMinimum: 0, maximum: 1, description: 'Share of the audience in the test, split evenly among the variants. 1: everyone is in the test, no winner phase. Default 0.2.' }),
    ),
    metric: Type.Optional(Type.Enum([...METRICS], { description: 'What a variant is judged on: clicked or shown, over delivered. Default clicked.' })),
    decide_after: Type.Optional(Type.String({ pattern: DURATION, description: 'How long after the test starts the winner is chosen: "30m", "4h", "2d" (5 minutes to 7 days). Default "4h".' })),
    min_per_variant: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Delivered pushes each variant needs before the test can pick a winner. Default 200.' })),
    on_inconclusive: Type.Optional(
      Type.Enum([...ON_INCONCLUSIVE], {
        description: 'When no variant wins (too little data, or no significant lead): best sends the variant with the best rate, first the first variant, stop sends the rest of the audience nothing. Default best.',
      }),
    ),
  },
  { additionalProperties: false },
)
export type ExperimentInput = Static<typeof ExperimentInput>

export const PHASES = ['waiting', 'testing', 'sending_winner', 'stopped', 'complete'] as const
export type ExperimentPhase = (typeof PHASES)[number]

const Count = Type.Integer({ minimum: 0 })
const Rate = Type.Union([Type.Number(), Type.Null()])

export const VariantView = Type.Object({
  key: Type.String(),
  notification: Type.Object({
    title: Type.String(),
    body: Type.String(),
    icon: Type.Union([Type.String(), Type.Null()]),
    image: Type.Union([Type.String(), Type.Null()]),
    url: Type.String(),
    actions: Type.Optional(Type.Array(NotificationAction)),
  }),
  audience: Type.Integer({ minimum: 0, description: 'Test subscribers this variant was given to.' }),
  sent: Count,
  delivered: Count,
  failed: Count,
  clicked: Count,
  shown: Count,
  dismissed: Count,
  click_rate: Type.Union([Type.Number(), Type.Null()], { description: 'clicked / delivered; null before anything is delivered.' }),
  shown_rate: Type.Union([Type.Number(), Type.Null()], { description: 'shown / delivered; null before anything is delivered.' }),
  z: Type.Union([Type.Number(), Type.Null()], { description: 'The z statistic of the leader against this variant (null for the leader, or without data).' }),
  p_value: Type.Union([Type.Number(), Type.Null()], { description: "One-sided p-value of the leader's lead over this variant (null for the leader, or without data)." }),
})

export const ExperimentView = Type.Object(
  {
    phase: Type.Enum([...PHASES], {
      description: 'waiting (not started), testing, sending_winner (the winner goes to the rest), stopped (no winner: the rest got nothing), complete (test_share 1: no winner phase).',
    }),
    test_share: Type.Number(),
    metric: Type.Enum([...METRICS]),
    decide_after: Type.String(),
    min_per_variant: Type.Integer(),
    on_inconclusive: Type.Enum([...ON_INCONCLUSIVE]),
    confidence: Type.Number({ description: 'The confidence a winner needs (0.95).' }),
    test: Type.String({ description: 'The test used: a one-sided two-proportion z-test of the leader against each other variant, Bonferroni-corrected.' }),
    decide_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms when the decision is due; null until the test starts.' }),
    decided_at: Type.Union([Type.Integer(), Type.Null()]),
    leader: Type.Union([Type.String(), Type.Null()], { description: 'The variant with the best rate now; null without data.' }),
    significant: Type.Boolean({ description: "Whether the leader's lead over every other variant is significant now." }),
    winner: Type.Union([Type.String(), Type.Null()], { description: 'The variant sent to the rest of the audience; null until decided, or when none was.' }),
    decided_by: Type.Union([Type.Literal('test'), Type.Literal('rule'), Type.Literal('person'), Type.Null()], {
      description: 'test: it won the z-test; rule: on_inconclusive chose it (or chose none); person: someone ended the test early.',
    }),
    reason: Type.Union([Type.String(), Type.Null()], { description: 'Why the winner won, or why none did, in words.' }),
    variants: Type.Array(VariantView),
    rest: Type.Object({ audience: Count }, { description: 'The subscribers outside the test, who get the winner.' }),
  },
  { description: 'An A/B test (docs/experiments.md); absent for a broadcast without variants.' },
)
export type ExperimentView = Static<typeof ExperimentView>

export const DecideBody = Type.Object(
  { winner: Type.Optional(Type.String({ pattern: VARIANT_KEY, description: "The variant to send to the rest; default: the test's leader now." })) },
  { additionalProperties: false },
)
export type DecideBody = Static<typeof DecideBody>
export { Rate }
