// Shared by the SDK and service worker browser tests.
//
// Headless Chromium cannot reach a real push service (FCM), so
// PushManager.subscribe would fail. The tests stand in for PushManager's two
// methods with subscriptions handed out by the local push service
// (test/support/push-service.ts): real P-256 keys, so everything after the
// stand-in is real (Herald stores them, encrypts to them, the push service
// decrypts).
import type { Page, Worker } from 'playwright-core'
import type { TestSubscription } from '../support/push-service.ts'

/** What the stand-in recorded, read back by the tests. */
export interface FakePushLog {
  /** applicationServerKey of every subscribe() call, base64url. */
  subscribeKeys: string[]
  /** Endpoints whose PushSubscription.unsubscribe() was called. */
  unsubscribed: string[]
}

/**
 * Replaces PushManager.prototype.subscribe/getSubscription in the global scope
 * it runs in (a page, or a service worker through worker.evaluate): subscribe()
 * hands out the next of `subscriptions`, in order. Written as one
 * self-contained function because it is serialised into the browser.
 */
export function installFakePushManager(subscriptions: TestSubscription[]): void {
  const toBase64url = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
  const fromBase64url = (text: string) => Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0)).buffer
  const log = { subscribeKeys: [] as string[], unsubscribed: [] as string[] }
  const queue = [...subscriptions]
  let current: unknown = null
  ;(globalThis as unknown as { __fakePush: typeof log }).__fakePush = log
  const make = (sub: TestSubscription, key: ArrayBuffer) => {
    const subscription = {
      endpoint: sub.endpoint,
      expirationTime: null,
      options: { applicationServerKey: key, userVisibleOnly: true },
      getKey: (name: 'p256dh' | 'auth') => fromBase64url(sub.keys[name]),
      toJSON: () => ({ endpoint: sub.endpoint, expirationTime: null, keys: { ...sub.keys } }),
      unsubscribe: async () => {
        log.unsubscribed.push(sub.endpoint)
        if (current === subscription) current = null
        return true
      },
    }
    return subscription
  }
  PushManager.prototype.subscribe = async function (options?: PushSubscriptionOptionsInit) {
    const raw = options?.applicationServerKey
    const bytes = raw instanceof ArrayBuffer ? new Uint8Array(raw) : ArrayBuffer.isView(raw) ? new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength) : new Uint8Array(0)
    log.subscribeKeys.push(toBase64url(bytes))
    const next = queue.shift()
    if (!next) throw new Error('the test gave no more subscriptions')
    current = make(next, bytes.slice().buffer)
    return current as PushSubscription
  }
  PushManager.prototype.getSubscription = async function () {
    return current as PushSubscription | null
  }
}

export async function fakePushLog(target: Page | Worker): Promise<FakePushLog> {
  const read = () => (globalThis as unknown as { __fakePush: FakePushLog }).__fakePush
  return 'goto' in target ? target.evaluate(read) : target.evaluate(read)
}

/** Polls `read` until `accept` holds (counts written by batched or background work), or fails with the last value. 20 s: fan-out and beacons on a loaded two-core CI machine. */
export async function eventually<T>(read: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let value = await read()
  while (!accept(value)) {
    if (Date.now() > deadline) throw new Error(`still not there after ${timeoutMs} ms: ${JSON.stringify(value)}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
    value = await read()
  }
  return value
}
