// The `variants` and `experiment` of POST /v1/send (docs/experiments.md):
// checked with the rest of the send (dry runs included), then resolved
// (media stored) and written in the send's transaction.
import type { Config } from '../platform/config.ts'
import type { Queryable } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import type { AuthedProject } from '../projects/project-auth.ts'
import { howToLift, planAtLeast } from '../projects/plans.ts'
import { resolveMedia, type MediaKind } from '../media/media.service.ts'
import { hasMarkup } from '../templates/liquid.ts'
import { compileNotification, type Personalization } from '../templates/personalization.ts'
import type { NotificationAction, NotificationInput, SendBody } from '../broadcasts/broadcasts.schemas.ts'
import { checkClickUrl, checkMediaForm } from '../broadcasts/send-checks.ts'
import {
  CONFIDENCE, DEFAULT_DECIDE_AFTER, DEFAULT_METRIC, DEFAULT_MIN_PER_VARIANT, DEFAULT_ON_INCONCLUSIVE, DEFAULT_TEST_SHARE,
  MAX_DECIDE_AFTER_MS, MIN_DECIDE_AFTER_MS, type VariantInput,
} from './experiments.schemas.ts'
import { insertExperiment, type ExperimentConfig, type VariantContent } from './experiments.store.ts'

/** The send body as the experiment reads it (the schema's two fields, on bodies of any release). */
export type ExperimentBody = Pick<SendBody, 'variants' | 'experiment' | 'localized' | 'deliver_at_local'>

function invalid(path: string, message: string): AppError {
  return new AppError('invalid_experiment', `${path}: ${message}`, { issues: [{ path, message }] })
}

const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** "4h" → 14,400,000 ms. */
export function durationMs(text: string): number {
  return Number(text.slice(0, -1)) * UNIT_MS[text.slice(-1) as keyof typeof UNIT_MS]
}

/** How long: "4h" for 14,400,000 ms (the largest unit that divides it). */
export function durationText(ms: number): string {
  if (ms % UNIT_MS.d === 0) return `${ms / UNIT_MS.d}d`
  if (ms % UNIT_MS.h === 0) return `${ms / UNIT_MS.h}h`
  return `${Math.round(ms / UNIT_MS.m)}m`
}

/** The experiment with its defaults (applied here, never by the schema: they would change the Idempotency-Key hash). */
export function experimentConfig(body: ExperimentBody): ExperimentConfig {
  const e = body.experiment ?? {}
  return {
    test_share: e.test_share ?? DEFAULT_TEST_SHARE,
    metric: e.metric ?? DEFAULT_METRIC,
    decide_after_ms: durationMs(e.decide_after ?? DEFAULT_DECIDE_AFTER),
    min_per_variant: e.min_per_variant ?? DEFAULT_MIN_PER_VARIANT,
    on_inconclusive: e.on_inconclusive ?? DEFAULT_ON_INCONCLUSIVE,
    confidence: CONFIDENCE,
  }
}

/**
 * The form checks, before anything is written (the send's check order, so a
 * dry run refuses the same bodies): variants and experiment come together,
 * keys are unique, each variant's URL, buttons and media are well formed
 * and allowed by the plan, and no field of the send contradicts a test.
 */
export function checkExperimentForm(project: AuthedProject, body: ExperimentBody): void {
  const { variants, experiment } = body
  if (variants === undefined && experiment === undefined) return
  if (variants === undefined) throw invalid('experiment', 'needs variants (2 to 10 versions of the notification to test)')
  if (experiment === undefined) throw invalid('variants', 'need experiment ({} takes every default: docs/experiments.md)')
  // A language's version replaces the text a subscriber gets: it would replace the variant's, and the test would compare nothing.
  if (body.localized !== undefined && Object.keys(body.localized).length > 0) throw invalid('localized', 'cannot be combined with variants: a language\'s version would replace the variant\'s text')
  // Local-time delivery spreads the send over a day; the winner would go out at decide_after, not at the local time asked for.
  if (body.deliver_at_local !== undefined) throw invalid('deliver_at_local', 'cannot be combined with variants: the winner is sent when the test is decided, not at a local time')
  const decideAfter = durationMs(experiment.decide_after ?? DEFAULT_DECIDE_AFTER)
  if (decideAfter < MIN_DECIDE_AFTER_MS || decideAfter > MAX_DECIDE_AFTER_MS) throw invalid('experiment.decide_after', 'must lie between 5m and 7d')
  const keys = new Set<string>()
  variants.forEach((variant, i) => {
    const at = `variants.${i}`
    if (keys.has(variant.key)) throw invalid(`${at}.key`, `"${variant.key}" is the key of another variant; each must be unique`)
    keys.add(variant.key)
    const n = variant.notification
    if (n.url !== undefined) checkClickUrl(n.url, `${at}.notification.url`)
    checkMediaForm('icon', n.icon)
    checkMediaForm('image', n.image)
    if (n.image !== undefined && !planAtLeast(project.plan, 'hobby')) {
      throw new AppError('image_requires_upgrade', `${at}.notification.image needs the Hobby plan or higher; this project is on ${project.plan}. ${howToLift(project.id, { plan: 'hobby' })}`)
    }
    const ids = new Set<string>()
    variant.actions?.forEach((action, j) => {
      if (ids.has(action.action)) throw invalid(`${at}.actions.${j}.action`, `"${action.action}" is already the id of another action; each must be unique`)
      ids.add(action.action)
      if (action.url !== undefined) checkClickUrl(action.url, `${at}.actions.${j}.url`)
    })
  })
}

/** A variant's notification: the top-level one with the variant's fields over it. */
function merged(base: NotificationInput, variant: VariantInput): { title: string; body: string; icon?: string; image?: string; url: string; actions: NotificationAction[] } {
  const n = variant.notification
  return {
    title: n.title ?? base.title,
    body: n.body ?? base.body,
    icon: n.icon ?? base.icon,
    image: n.image ?? base.image,
    url: n.url ?? base.url ?? '/',
    actions: variant.actions ?? base.actions ?? [],
  }
}

/**
 * Each variant's content as it will be stored: media resolved (hosted when a
 * data URL), the project's default icon where none is given. Variables in a
 * variant are rendered per subscriber only in a personalized send (the
 * top-level notification or its template has some): then each variant must
 * parse as a template; otherwise a variable in a variant is refused, as it
 * would be sent as written.
 */
export async function resolveVariants(
  q: Queryable,
  config: Config,
  project: AuthedProject,
  base: NotificationInput,
  variants: VariantInput[],
  personalization: Personalization | null,
): Promise<VariantContent[]> {
  const contents: VariantContent[] = []
  for (const [i, variant] of variants.entries()) {
    const fields = merged(base, variant)
    const texts = [fields.title, fields.body, fields.url, fields.icon ?? '', fields.image ?? '', ...fields.actions.flatMap((a) => [a.title, a.url ?? ''])]
    if (personalization) {
      compileNotification({ ...fields, icon: fields.icon ?? null, image: fields.image ?? null }, { ...personalization, localized: {} }, `variants.${i}.notification`)
    } else if (texts.some(hasMarkup)) {
      throw invalid(`variants.${i}`, 'holds a variable, but the send is not personalized: put variables in the top-level notification too, or none in the variants')
    }
    const media = (kind: MediaKind, value: string) => (hasMarkup(value) ? value : resolveMedia(q, config, kind, value))
    contents.push({
      key: variant.key,
      title: fields.title,
      body: fields.body,
      icon: fields.icon !== undefined ? await media('icon', fields.icon) : project.default_icon ?? null,
      image: fields.image !== undefined ? await media('image', fields.image) : null,
      url: fields.url,
      actions: fields.actions,
    })
  }
  return contents
}

/** Writes the experiment of a broadcast just inserted, in the send's transaction. */
export async function createExperiment(q: Queryable, broadcastId: string, projectId: string, body: ExperimentBody, variants: VariantContent[]): Promise<void> {
  await insertExperiment(q, broadcastId, projectId, experimentConfig(body), variants)
}
