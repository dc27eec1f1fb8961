// RFC 8291 encryption is the CPU cost of a push (~0.2 ms each, mostly ECDH).
// It runs on a pool of worker threads, one per core by default, so every core
// encrypts while the main thread does the HTTP and the database work.
import { availableParallelism } from 'node:os'
import { Piscina } from 'piscina'
import { encryptPayload } from './encryption.ts'

export interface SubscriptionKeys {
  p256dh: string
  auth: string
}

/** An encrypted body, or why these keys could not be used. */
export type Encrypted = Buffer | { error: string }

/** Subscriptions per message to a thread: large enough that messaging costs little next to the crypto. */
const CHUNK = 64

export class EncryptPool {
  private pool: Piscina | null = null

  /** threads = 0 encrypts on the calling thread (handy where threads cost more than they give). */
  constructor(private readonly threads = availableParallelism()) {}

  private get workers(): Piscina {
    if (!this.pool) {
      this.pool = new Piscina({
        filename: new URL('./encrypt-worker.mjs', import.meta.url).href,
        minThreads: this.threads,
        maxThreads: this.threads,
        idleTimeout: 60_000,
      })
    }
    return this.pool
  }

  async encryptMany(plaintext: Buffer, subscriptions: SubscriptionKeys[]): Promise<Encrypted[]> {
    if (this.threads === 0) {
      return subscriptions.map((keys) => {
        try {
          return encryptPayload(plaintext, keys)
        } catch (err) {
          return { error: (err as Error).message }
        }
      })
    }
    const chunks: Promise<Array<Uint8Array | { error: string }>>[] = []
    for (let i = 0; i < subscriptions.length; i += CHUNK) {
      chunks.push(this.workers.run({ plaintext, subscriptions: subscriptions.slice(i, i + CHUNK) }))
    }
    const results = (await Promise.all(chunks)).flat()
    return results.map((item) => (item instanceof Uint8Array ? Buffer.from(item.buffer, item.byteOffset, item.byteLength) : item))
  }

  async close(): Promise<void> {
    await this.pool?.destroy()
    this.pool = null
  }
}
