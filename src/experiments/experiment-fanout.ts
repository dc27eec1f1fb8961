// What fan-out does differently for a broadcast with an A/B test
// (docs/experiments.md): which recipients a batch pushes in each part of the
// test, the push each gets (its variant's, naming the variant; the rest get
// the winner's, naming none, so their engagement counts in the broadcast's
// totals and not in the test's), and the per-variant counts of a batch, added
// in one statement with the batch's outcomes.
import type { Queryable } from '../platform/db/database.ts'
import type { Recipient } from '../broadcasts/audience.store.ts'
import type { SendingBroadcast } from '../broadcasts/broadcast-state.ts'
import type { BatchOutcomes, Failed } from '../delivery/batch-outcomes.ts'
import { personalPayloads, type PersonalBatch } from '../delivery/personal-payloads.ts'
import { assignVariant } from './assignment.ts'
import { findExperiment, type Experiment, type VariantContent, type VariantDelta } from './experiments.store.ts'

/** Which part of the audience a chain of batches pushes: the test's variants, or the rest (the winner). */
export type AudiencePart = 'test' | 'rest'

/** The experiment of a broadcast that has one; null (and no query) for every other broadcast. */
export async function loadFanoutExperiment(q: Queryable, broadcast: Pick<SendingBroadcast, 'id' | 'has_experiment'>): Promise<Experiment | null> {
  return broadcast.has_experiment ? findExperiment(q, broadcast.id) : null
}

/** The variant a subscriber tests, or null when they are in the rest of the audience. */
export function variantOf(experiment: Experiment, broadcastId: string, subscriberId: string): VariantContent | null {
  const index = assignVariant(broadcastId, subscriberId, experiment.test_share, experiment.variants.length)
  return index === null ? null : experiment.variants[index]
}

/** The recipients of a slice in this part of the audience. */
export function inPart(experiment: Experiment, broadcastId: string, recipients: Recipient[], part: AudiencePart): Recipient[] {
  return recipients.filter((r) => (variantOf(experiment, broadcastId, r.id) === null) === (part === 'rest'))
}

/**
 * The broadcast with a variant's content in place of its own. Without the
 * languages of a template: a language's version would replace the variant's
 * text, and the test would compare nothing (docs/experiments.md).
 */
function withContent(broadcast: SendingBroadcast, content: VariantContent): SendingBroadcast {
  const personalization = broadcast.personalization ? { ...broadcast.personalization, localized: {} } : null
  return { ...broadcast, title: content.title, body: content.body, icon: content.icon, image: content.image, url: content.url, actions: content.actions, personalization }
}

/**
 * One push per recipient, in the form personal-payloads.ts gives: each
 * recipient's variant (or the winner for the rest), one payload per variant
 * for a shared broadcast (`shared` makes it), rendered per recipient for a
 * personalized one. A recipient of the rest when there is no winner (the
 * test was stopped) gets nothing, counted skipped.
 */
export function experimentPayloads(
  broadcast: SendingBroadcast,
  experiment: Experiment,
  recipients: Recipient[],
  shared: (content: SendingBroadcast, variant: string | null) => Buffer,
): PersonalBatch {
  const winner = experiment.variants.find((v) => v.key === experiment.winner) ?? null
  const groups = new Map<VariantContent | null, Recipient[]>()
  for (const r of recipients) {
    const variant = variantOf(experiment, broadcast.id, r.id)
    const content = variant ?? winner
    const group = groups.get(variant === null ? null : content) ?? []
    group.push(r)
    groups.set(variant === null ? null : content, group)
  }
  const batch: PersonalBatch = { recipients: [], plaintexts: [], skipped: [] }
  for (const [variant, group] of groups) {
    const content = variant ?? winner
    if (!content) {
      batch.skipped.push(...group.map((r): Failed => ({ subscriberId: r.id, externalId: r.external_id, pushService: r.push_service, reason: 'skipped', status: null, cause: 'experiment: no winner was sent to the rest of the audience' })))
      continue
    }
    const key = variant?.key ?? null
    if (broadcast.personalization) {
      const personal = personalPayloads(withContent(broadcast, content), group, { cacheKey: `${broadcast.id} ${content.key}`, variant: key })
      batch.recipients.push(...personal.recipients)
      batch.plaintexts.push(...personal.plaintexts)
      batch.skipped.push(...personal.skipped)
    } else {
      const plaintext = shared(withContent(broadcast, content), key)
      for (const r of group) {
        batch.recipients.push(r)
        batch.plaintexts.push(plaintext)
      }
    }
  }
  return batch
}

/**
 * A batch's counts per variant: `assigned` are the job's recipients on a
 * first attempt (the variant's audience), `pushed` those a push left for
 * the first time (sent); delivered and failed come from the outcomes. The
 * rest of the audience is left out: it counts in the broadcast's totals.
 */
export function variantDeltas(
  experiment: Experiment,
  broadcastId: string,
  assigned: Recipient[] | null,
  pushed: Recipient[] | null,
  outcomes: Pick<BatchOutcomes, 'delivered' | 'failed'>,
): VariantDelta[] {
  const deltas = new Map<string, VariantDelta>()
  const of = (subscriberId: string): VariantDelta | null => {
    const variant = variantOf(experiment, broadcastId, subscriberId)
    if (!variant) return null
    let delta = deltas.get(variant.key)
    if (!delta) deltas.set(variant.key, (delta = { broadcast_id: broadcastId, key: variant.key, audience: 0, sent: 0, delivered: 0, failed: 0 }))
    return delta
  }
  for (const r of assigned ?? []) { const d = of(r.id); if (d) d.audience!++ }
  for (const r of pushed ?? []) { const d = of(r.id); if (d) d.sent!++ }
  for (const o of outcomes.delivered) { const d = of(o.subscriberId); if (d) d.delivered!++ }
  for (const o of outcomes.failed) { const d = of(o.subscriberId); if (d) d.failed!++ }
  return [...deltas.values()]
}
