// Pushes one broadcast to a list of recipients: encrypt (on the thread pool),
// sign (one cached VAPID token per project, key pair and push service: each
// subscriber with the pair it was made with, issue 23), send (pooled
// connections), and sort every answer into delivered, failed or retry,
// keeping the latest push that did not deliver for the broadcast's last_error.
import type { EncryptPool, Encrypted, Plaintexts } from './encrypt-pool.ts'
import type { PushClient, PushOutcome } from './push-client.ts'
import type { Recipient } from '../broadcasts/audience.store.ts'
import type { LastPushError, SendingBroadcast } from '../broadcasts/broadcast-state.ts'
import type { PushErrorReason } from '../broadcasts/broadcasts.schemas.ts'
import type { ProjectKeys } from '../projects/projects.store.ts'
import type { Delivered, Failed } from './batch-outcomes.ts'
import { pushTopicFor } from './topic.ts'
import type { VapidTokenCache } from './vapid.ts'
import type { PushMetrics, PushTally } from './push-metrics.ts'
import type { PushService } from '../subscribers/subscribers.schemas.ts'
import type { VapidKeys } from './vapid.ts'

export interface Retry {
  recipient: Recipient
  /** The push service's wait (Retry-After), when it gave one. */
  retryAfterMs: number | null
  status: number | null
}

export interface SendResult {
  delivered: Delivered[]
  failed: Failed[]
  retry: Retry[]
  /** The last push answered with anything but delivered; null when every push was delivered. */
  lastError: LastPushError | null
  /** The batch's counts for /metrics, recorded with its outcomes (fanout.ts). */
  tally?: PushTally
}

/**
 * Whether a refusal says the VAPID key is not the one the subscription was
 * made with (docs/vapid-keys.md): Apple answers 400 with reason
 * VapidPkHashMismatch (read from the body, whatever the host), FCM 403,
 * Mozilla autopush 401 (errno 109). Another push service's 401 or 403 may
 * mean something else, so it stays a plain rejection.
 */
export function isVapidKeyMismatch(pushService: PushService, outcome: Extract<PushOutcome, { kind: 'rejected' }>): boolean {
  if (outcome.status === 400) return outcome.reason === 'VapidPkHashMismatch'
  if (outcome.status === 403) return pushService === 'fcm'
  if (outcome.status === 401) return pushService === 'mozilla'
  return false
}

/** last_error's reason for a push that was not delivered (decisions.md "Broadcast progress and stop"). */
export function pushErrorReason(outcome: Exclude<PushOutcome, { kind: 'delivered' }>, pushService: PushService = 'other'): PushErrorReason {
  switch (outcome.kind) {
    case 'gone':
      return 'gone'
    case 'rejected':
      if (isVapidKeyMismatch(pushService, outcome)) return 'vapid_key_mismatch'
      // Status 0: the endpoint's host resolved to a private address and was never sent to.
      return outcome.status === 0 ? 'private_address' : outcome.status === 413 ? 'payload_too_large' : 'rejected'
    case 'retry':
      if (outcome.status === 429) return 'rate_limited'
      if (outcome.status === 408) return 'timeout'
      if (outcome.status !== null) return 'server_error'
      return outcome.error && /TIMEOUT/i.test(outcome.error) ? 'timeout' : 'network_error'
  }
}

export interface SenderDeps {
  encryptPool: EncryptPool
  pushClient: PushClient
  vapidTokens: VapidTokenCache
  vapidSubject: string
  pushMetrics?: PushMetrics
}

function parseEndpoint(endpoint: string): URL | null {
  try {
    return new URL(endpoint)
  } catch {
    return null
  }
}

/** RFC 8030 headers for this broadcast; TTL is what is left of the broadcast's TTL. */
function pushHeaders(broadcast: SendingBroadcast, endpoint: URL, authorization: string, ttl: number): Record<string, string> {
  const headers: Record<string, string> = {
    TTL: String(ttl),
    'Content-Encoding': 'aes128gcm',
    'Content-Type': 'application/octet-stream',
    Authorization: authorization,
  }
  if (broadcast.urgency !== 'normal') headers.Urgency = broadcast.urgency
  const topic = pushTopicFor(endpoint, broadcast.topic)
  if (topic) headers.Topic = topic
  return headers
}

/** Seconds of the broadcast's TTL left now; pushes retried late carry less. */
export function remainingTtl(broadcast: SendingBroadcast, now = Date.now()): number {
  const start = broadcast.started_at?.getTime() ?? now
  return Math.max(0, broadcast.ttl - Math.floor((now - start) / 1000))
}

/**
 * The batch's signing pairs by id, built once per batch from what
 * checkBeforeSend read (no query per push): every pair not retired, and the
 * current pair (projects.vapid_public) whatever the table holds. A project no
 * rotation has touched may have no vapid_keys row yet (made by the previous
 * release during an upgrade): its current pair is then its original one.
 */
export function signingKeys(project: ProjectKeys): { byId: Map<string, VapidKeys>; currentId: string; originalId: string } {
  const originalId = `vk_${project.id.slice(4)}`
  const currentId = project.vapid_key_id ?? originalId
  const byId = new Map<string, VapidKeys>()
  for (const key of project.vapid_keys ?? []) byId.set(key.id, { publicKey: key.public_key, privateKey: key.private_key })
  byId.set(currentId, { publicKey: project.vapid_public, privateKey: project.vapid_private })
  return { byId, currentId, originalId }
}

export async function sendToRecipients(
  deps: SenderDeps,
  broadcast: SendingBroadcast,
  project: ProjectKeys,
  /** One payload for all, or one per recipient in their order (a personalized broadcast). */
  plaintext: Plaintexts,
  recipients: Recipient[],
): Promise<SendResult> {
  const tally = deps.pushMetrics?.tally()
  const result: SendResult = { delivered: [], failed: [], retry: [], lastError: null, tally }
  // One object per batch, overwritten by each push that does not deliver: nothing allocated per push for it.
  const lastError: LastPushError = { status: null, reason: '', pushService: 'other', at: 0 }
  const noteError = (recipient: Recipient, reason: PushErrorReason, status: number | null): void => {
    lastError.status = status
    lastError.reason = reason
    lastError.pushService = recipient.push_service
    lastError.at = Date.now()
  }
  const signing = signingKeys(project)
  const ttl = remainingTtl(broadcast)
  // The headers of a push depend on its signature (which names the push service's origin) and the batch only:
  // one object per signature, shared by the batch's pushes (neither undici nor http2-origin.ts changes it).
  const headersBySignature = new Map<string, Record<string, string>>()

  /** Sorts one push's answer into the batch's result. */
  const record = (recipient: Recipient, who: Delivered, outcome: PushOutcome): void => {
    if (outcome.kind === 'delivered') {
      result.delivered.push(who)
      return
    }
    const reason = pushErrorReason(outcome, recipient.push_service)
    noteError(recipient, reason, outcome.status || null)
    switch (outcome.kind) {
      case 'gone':
        result.failed.push({ ...who, reason: 'gone', status: outcome.status })
        break
      case 'rejected':
        result.failed.push({ ...who, reason: reason === 'vapid_key_mismatch' ? 'vapid_key_mismatch' : 'rejected', status: outcome.status || null })
        break
      case 'retry':
        result.retry.push({ recipient, retryAfterMs: outcome.retryAfterMs, status: outcome.status })
        break
    }
  }

  /** A push that cannot leave: failed (rejected, never sent), and the batch's last error says why. */
  const refuse = (recipient: Recipient, who: Delivered, why: PushErrorReason, over: () => void): void => {
    result.failed.push({ ...who, reason: 'rejected', status: null })
    noteError(recipient, why, null)
    over()
  }

  /** Hands one push to the client; `over` is called once it is answered or could not be sent (with an error: a bug handling it). */
  const pushOne = (recipient: Recipient, body: Encrypted, over: (err?: unknown) => void): void => {
    const who = { subscriberId: recipient.id, externalId: recipient.external_id, pushService: recipient.push_service }
    const endpoint = parseEndpoint(recipient.endpoint)
    // Keys or endpoint no push service could use: nothing to retry.
    if (!endpoint || !Buffer.isBuffer(body)) return refuse(recipient, who, 'invalid_subscription', over)
    const keyId = recipient.vapid_key_id === undefined ? signing.currentId : (recipient.vapid_key_id ?? signing.originalId)
    const keys = signing.byId.get(keyId)
    // The pair it was made with was retired meanwhile: nothing can sign for it any more.
    if (!keys) return refuse(recipient, who, 'vapid_key', over)
    let authorization: string
    try {
      authorization = deps.vapidTokens.get(project.id, keys, endpoint, deps.vapidSubject, keyId)
    } catch {
      // The project's VAPID key cannot sign: no push service would take this push.
      return refuse(recipient, who, 'vapid_key', over)
    }
    const startedAt = tally ? performance.now() : 0
    let headers = headersBySignature.get(authorization)
    if (!headers) headersBySignature.set(authorization, (headers = pushHeaders(broadcast, endpoint, authorization, ttl)))
    // A callback rather than a promise per push (issue 26: the send path's allocations).
    deps.pushClient.dispatchPush({ endpoint, body, headers }, (outcome) => {
      try {
        tally?.add(recipient.push_service, outcome, startedAt, endpoint)
        record(recipient, who, outcome)
      } catch (err) {
        return over(err)
      }
      over()
    })
  }

  // Each chunk's pushes leave as soon as that chunk is encrypted; each push is over for the client's plan once answered.
  deps.pushClient.plan(recipients.length)
  await Promise.all(
    deps.encryptPool.encryptInChunks(plaintext, recipients).map(async (chunk) => {
      let bodies: Encrypted[]
      try {
        bodies = await chunk.bodies
      } catch (err) {
        deps.pushClient.finished(chunk.count)
        throw err
      }
      // One promise per chunk, settled when its last push is over.
      await new Promise<void>((resolve, reject) => {
        let left = bodies.length
        let failure: unknown = null
        const over = (err?: unknown): void => {
          if (err !== undefined) failure ??= err
          deps.pushClient.finished()
          if (--left === 0) {
            if (failure === null) resolve()
            else reject(failure)
          }
        }
        if (left === 0) return resolve()
        for (let i = 0; i < bodies.length; i++) {
          try {
            pushOne(recipients[chunk.offset + i], bodies[i], over)
          } catch (err) {
            // A bug before the push left: this push is over, and the batch fails once the others are.
            over(err)
          }
        }
      })
    }),
  )
  if (lastError.at > 0) result.lastError = lastError
  return result
}
