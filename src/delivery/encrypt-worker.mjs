// Runs in an encryption thread (see encrypt-pool.ts). Plain JavaScript, like
// the RFC 8291 implementation it loads, so the thread starts without a
// TypeScript loader (tsx in a thread measured ~40 MB each).
import { move, workerData } from 'piscina'
import { chooseEncryptPayload } from './rfc8291.mjs'

// Chosen once per thread: EncryptPool passes the config's nativeCrypto.
const encryptPayload = chooseEncryptPayload(workerData?.nativeCrypto !== false)

/**
 * Encrypts for each subscription and returns the bodies packed in one
 * ArrayBuffer that is moved, not copied, to the main thread: a count (u32),
 * then each body's length (i32, -1 for keys that could not be used), then the
 * bodies one after another.
 * A personalized broadcast (issue 24) sends `plaintexts`, one per subscription, instead of one `plaintext`.
 * The keys come as one flat array, p256dh then auth for each subscription (encrypt-pool.ts sends nothing else of them).
 * @param {{ plaintext?: Uint8Array, plaintexts?: Uint8Array[], keys: string[] }} task
 */
export default function encryptBatch(task) {
  const asBuffer = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const plaintext = task.plaintext ? asBuffer(task.plaintext) : null
  const count = task.keys.length / 2
  const bodies = new Array(count)
  for (let i = 0; i < count; i++) {
    try {
      bodies[i] = encryptPayload(plaintext ?? asBuffer(task.plaintexts[i]), { p256dh: task.keys[2 * i], auth: task.keys[2 * i + 1] })
    } catch {
      // A subscription with malformed keys fails alone, not its whole batch.
      bodies[i] = null
    }
  }
  const header = 4 + 4 * bodies.length
  const total = bodies.reduce((sum, body) => sum + (body ? body.length : 0), header)
  const packed = new Uint8Array(total)
  const view = new DataView(packed.buffer)
  view.setUint32(0, bodies.length)
  let offset = header
  bodies.forEach((body, i) => {
    view.setInt32(4 + 4 * i, body ? body.length : -1)
    if (body) {
      packed.set(body, offset)
      offset += body.length
    }
  })
  return move(packed.buffer)
}
