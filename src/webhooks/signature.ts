// Standard Webhooks signatures (https://www.standardwebhooks.com): the
// receiver recomputes HMAC-SHA256 over "id.timestamp.body" with the secret
// and compares. The key is the base64-decoded part of the whsec_ secret.
import { createHmac } from 'node:crypto'

const SECRET_PREFIX = 'whsec_'

/** The HMAC key of a whsec_ secret: its base64 part, decoded. */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64')
}

/** The webhook-signature header value: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', secretKey(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64')
  return `v1,${mac}`
}

/**
 * The headers of one delivery attempt. webhook-id is the event id, the same on
 * every retry. During a secret rotation `previousSecret` is given too, and
 * webhook-signature carries one signature per secret, space-separated (the
 * new one first), as Standard Webhooks allows: a receiver holding either
 * secret verifies the request.
 */
export function webhookHeaders(secret: string, id: string, body: string, now = Date.now(), previousSecret: string | null = null): Record<string, string> {
  const timestamp = Math.floor(now / 1000)
  const signature = signWebhook(secret, id, timestamp, body)
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': previousSecret === null ? signature : `${signature} ${signWebhook(previousSecret, id, timestamp, body)}`,
  }
}
