// The pushes of a personalized broadcast (issue 24): one payload per
// recipient, rendered from the broadcast's parsed templates, which are kept
// per broadcast for the whole fan-out (parsing is most of a render's cost).
// A recipient the rendering skips gets no push: they are counted failed with
// reason skipped, their failed event carrying the cause.
import type { Recipient } from '../broadcasts/audience.store.ts'
import type { SendingBroadcast } from '../broadcasts/broadcast-state.ts'
import { fullPayload } from '../broadcasts/notification-payload.ts'
import { MAX_PLAINTEXT_BYTES } from '../platform/webpush/record-size.mjs'
import { compileNotification, renderFor, type CompiledNotification, type NotificationFields } from '../templates/personalization.ts'
import type { Failed } from './batch-outcomes.ts'

/** Broadcasts whose templates stay parsed: a worker fans out a few at a time. */
const CACHED_BROADCASTS = 32
const cache = new Map<string, CompiledNotification>()

/** The broadcast's parsed templates, parsed once per process and fan-out. */
export function compiledFor(broadcast: SendingBroadcast, cacheKey = broadcast.id): CompiledNotification {
  let compiled = cache.get(cacheKey)
  if (!compiled) {
    const fields: NotificationFields = { title: broadcast.title, body: broadcast.body, url: broadcast.url, icon: broadcast.icon, image: broadcast.image, actions: broadcast.actions }
    compiled = compileNotification(fields, broadcast.personalization!)
    if (cache.size >= CACHED_BROADCASTS) cache.delete(cache.keys().next().value!)
    cache.set(cacheKey, compiled)
  }
  return compiled
}

const ELLIPSIS = '…'

/**
 * The push's JSON for one recipient. Unlike a shared push, a personal one
 * cannot fall back to the fetch: true stub (the content is this subscriber's,
 * and GET /v1/notifications knows only the broadcast), nor carry the
 * declarative form (its click links redirect to URLs the broadcast stores).
 * So when it does not fit one record its body is cut, or the subscriber
 * skipped, as on_too_long says.
 */
function personalPlaintext(projectId: string, broadcastId: string, fields: NotificationFields, truncate: boolean, variant: string | null): Buffer | null {
  const encode = (body: string) => Buffer.from(JSON.stringify(fullPayload({ project_id: projectId, broadcast_id: broadcastId, ...fields, body, variant })), 'utf8')
  const whole = encode(fields.body)
  if (whole.length <= MAX_PLAINTEXT_BYTES) return whole
  if (!truncate) return null
  const chars = Array.from(fields.body)
  const at = (n: number) => encode(chars.slice(0, n).join('') + ELLIPSIS)
  if (at(0).length > MAX_PLAINTEXT_BYTES) return null
  let low = 0
  let high = chars.length - 1
  while (low < high) {
    const mid = Math.ceil((low + high) / 2)
    if (at(mid).length <= MAX_PLAINTEXT_BYTES) low = mid
    else high = mid - 1
  }
  return at(low)
}

export interface PersonalBatch {
  /** Those who get a push, and theirs in the same order. */
  recipients: Recipient[]
  plaintexts: Buffer[]
  skipped: Failed[]
}

/** An A/B test's variant (experiments/experiment-fanout.ts): its own parsed templates, and its key in the payload. */
export interface VariantOptions {
  cacheKey: string
  variant: string | null
}

export function personalPayloads(broadcast: SendingBroadcast, recipients: Recipient[], options?: VariantOptions): PersonalBatch {
  const compiled = compiledFor(broadcast, options?.cacheKey)
  const truncate = compiled.personalization.on_too_long === 'truncate'
  const batch: PersonalBatch = { recipients: [], plaintexts: [], skipped: [] }
  for (const recipient of recipients) {
    const rendered = renderFor(compiled, { tags: recipient.tags ?? null, external_id: recipient.external_id, locale: recipient.locale ?? null })
    const plaintext = rendered.ok ? personalPlaintext(broadcast.project_id, broadcast.id, rendered.fields, truncate, options?.variant ?? null) : null
    if (plaintext) {
      batch.recipients.push(recipient)
      batch.plaintexts.push(plaintext)
      continue
    }
    const cause = rendered.ok ? 'too_long: the push is over 4096 bytes' : rendered.cause
    batch.skipped.push({ subscriberId: recipient.id, externalId: recipient.external_id, pushService: recipient.push_service, reason: 'skipped', status: null, cause })
  }
  return batch
}
