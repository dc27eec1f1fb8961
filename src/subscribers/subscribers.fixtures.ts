// Test helpers: realistic browser subscriptions and a subscribe call through
// HTTP. Used by the groups and subscribers tests; not loaded by the server.
import { createECDH, randomBytes } from 'node:crypto'
import type { TestApp, TestProject } from '../../test/support/app.ts'

/** Keys as a browser's PushSubscription.toJSON() gives them: a P-256 public point and a 16-byte secret, base64url. */
export function pushKeys(): { p256dh: string; auth: string } {
  const ecdh = createECDH('prime256v1')
  ecdh.generateKeys()
  return { p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') }
}

/** An endpoint on a known push service, so it passes the push host rule too. */
export function fcmEndpoint(): string {
  return `https://fcm.googleapis.com/fcm/send/${randomBytes(12).toString('base64url')}`
}

export function subscription(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { endpoint: fcmEndpoint(), keys: pushKeys(), ...extra }
}

/** Subscribes through POST /v1/subscribe and returns the subscriber id; fails the test on anything but 201. */
export async function subscribe(t: TestApp, project: TestProject, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: subscription(extra) })
  if (res.statusCode !== 201) throw new Error(`subscribe answered ${res.statusCode}: ${res.body}`)
  return res.json().id
}
