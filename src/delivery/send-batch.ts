// Pushes one broadcast to a list of recipients: encrypt (on the thread pool),
// sign (one cached VAPID token per project and push service), send (pooled
// connections), and sort every answer into delivered, failed or retry.
import type { EncryptPool, Encrypted } from './encrypt-pool.ts'
import type { PushClient, PushOutcome } from './push-client.ts'
import type { Recipient } from './audience.store.ts'
import type { Delivered, Failed, ProjectKeys, SendingBroadcast } from './fanout.store.ts'
import { pushTopicFor } from './topic.ts'
import type { VapidTokenCache } from './vapid.ts'

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
}

export interface SenderDeps {
  encryptPool: EncryptPool
  pushClient: PushClient
  vapidTokens: VapidTokenCache
  vapidSubject: string
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

export async function sendToRecipients(
  deps: SenderDeps,
  broadcast: SendingBroadcast,
  project: ProjectKeys,
  plaintext: Buffer,
  recipients: Recipient[],
): Promise<SendResult> {
  const result: SendResult = { delivered: [], failed: [], retry: [] }
  const keys = { publicKey: project.vapid_public, privateKey: project.vapid_private }
  const ttl = remainingTtl(broadcast)

  const pushOne = async (recipient: Recipient, body: Encrypted): Promise<void> => {
    const who = { subscriberId: recipient.id, externalId: recipient.external_id }
    const endpoint = parseEndpoint(recipient.endpoint)
    if (!endpoint || !Buffer.isBuffer(body)) {
      // Keys or endpoint no push service could use: nothing to retry.
      result.failed.push({ ...who, reason: 'rejected', status: null })
      return
    }
    let authorization: string
    try {
      authorization = deps.vapidTokens.get(project.id, keys, endpoint, deps.vapidSubject)
    } catch {
      // The project's VAPID key cannot sign: no push service would take this push.
      result.failed.push({ ...who, reason: 'rejected', status: null })
      return
    }
    const outcome: PushOutcome = await deps.pushClient.send({ endpoint, body, headers: pushHeaders(broadcast, endpoint, authorization, ttl) })
    switch (outcome.kind) {
      case 'delivered':
        result.delivered.push(who)
        break
      case 'gone':
        result.failed.push({ ...who, reason: 'gone', status: outcome.status })
        break
      case 'rejected':
        result.failed.push({ ...who, reason: 'rejected', status: outcome.status || null })
        break
      case 'retry':
        result.retry.push({ recipient, retryAfterMs: outcome.retryAfterMs, status: outcome.status })
        break
    }
  }

  // Each chunk's pushes leave as soon as that chunk is encrypted.
  await Promise.all(
    deps.encryptPool.encryptInChunks(plaintext, recipients).map(async (chunk) => {
      const bodies = await chunk.bodies
      await Promise.all(bodies.map((body, i) => pushOne(recipients[chunk.offset + i], body)))
    }),
  )
  return result
}
