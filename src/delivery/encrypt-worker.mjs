// Runs in an encryption thread (see encrypt-pool.ts). Plain JavaScript so the
// thread can start without a TypeScript loader; it registers tsx to load the
// one implementation of RFC 8291 in encryption.ts.
import { register } from 'tsx/esm/api'

register()
const { encryptPayload } = await import('./encryption.ts')

/** @param {{ plaintext: Uint8Array, subscriptions: { p256dh: string, auth: string }[] }} task */
export default function encryptBatch(task) {
  const plaintext = Buffer.from(task.plaintext.buffer, task.plaintext.byteOffset, task.plaintext.byteLength)
  return task.subscriptions.map((subscription) => {
    try {
      return encryptPayload(plaintext, subscription)
    } catch (err) {
      // A subscription with malformed keys fails alone, not its whole batch.
      return { error: err instanceof Error ? err.message : String(err) }
    }
  })
}
