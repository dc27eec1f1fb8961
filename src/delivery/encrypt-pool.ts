// RFC 8291 encryption is the CPU cost of a push (~0.2 ms each, mostly ECDH).
// It runs on a pool of worker threads, one per core by default, so every core
// encrypts while the main thread does the HTTP and the database work.
import { createECDH, randomBytes } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { Piscina } from 'piscina'
import { chooseEncryptPayload, encryptPayload } from './encryption.ts'

export interface SubscriptionKeys {
  p256dh: string
  auth: string
}

/** One plaintext for every subscription (a broadcast), or one each, in the subscriptions' order (a personalized broadcast, issue 24). */
export type Plaintexts = Buffer | Buffer[]

/** An encrypted body, or why these keys could not be used. */
export type Encrypted = Buffer | { error: string }

/** Subscriptions per message to a thread: large enough that messaging costs little next to the crypto. */
const CHUNK = 64
/**
 * A batch's first message is smaller: its pushes leave once their chunk is
 * encrypted, so the first 16 go out sooner than the first 64 would (the
 * first push of a broadcast, issue 26).
 */
const FIRST_CHUNK = 16
/** V8 heap limits of an encryption thread, in MB (a thread holds a few tasks at a time). */
const THREAD_YOUNG_MB = 8
const THREAD_OLD_MB = 64

/**
 * Threads when the config names none. node:crypto (~150-200 µs a push) gets
 * one per core. The OpenSSL addon (~60 µs) keeps one thread busy at ~16,000
 * pushes/s, more than a worker's connections carry, so it gets one per four
 * cores: on two cores a second thread (its own V8 heap) took ~20 MB more
 * peak RSS and pushed no faster (docs/performance.md, issue 14).
 */
export function defaultThreads(implementation: 'openssl' | 'node:crypto', cores: number): number {
  return implementation === 'openssl' ? Math.max(1, Math.floor(cores / 4)) : cores
}

/** A subscription's keys as a browser makes them, for warming the threads. */
function throwawayKeys(): SubscriptionKeys {
  const ecdh = createECDH('prime256v1')
  return { p256dh: ecdh.generateKeys().toString('base64url'), auth: randomBytes(16).toString('base64url') }
}

export class EncryptPool {
  private pool: Piscina | null = null
  /** For threads = 0; the threads choose the same way when they load (encrypt-worker.mjs). */
  private readonly encrypt: ReturnType<typeof chooseEncryptPayload>
  /** Which RFC 8291 implementation encrypts: the OpenSSL addon or node:crypto. */
  readonly implementation: 'openssl' | 'node:crypto'
  /** Encryption threads: HERALD_ENCRYPT_THREADS, or defaultThreads(). */
  readonly threads: number

  /**
   * threads = 0 encrypts on the calling thread (handy where threads cost more than they give).
   * nativeCrypto (config HERALD_NATIVE_CRYPTO, default true): use the OpenSSL addon where it was built.
   */
  constructor(
    threads: number | null = null,
    private readonly nativeCrypto = true,
  ) {
    this.encrypt = chooseEncryptPayload(nativeCrypto)
    this.implementation = this.encrypt === encryptPayload ? 'node:crypto' : 'openssl'
    this.threads = threads ?? defaultThreads(this.implementation, availableParallelism())
  }

  private get workers(): Piscina {
    if (!this.pool) {
      this.pool = new Piscina({
        filename: new URL('./encrypt-worker.mjs', import.meta.url).href,
        minThreads: this.threads,
        maxThreads: this.threads,
        idleTimeout: 60_000,
        // Not the process's flags: `--import tsx` would load a TypeScript loader
        // (and its hooks thread) into every encryption thread for nothing.
        execArgv: [],
        // The config reaches the threads here, not through their environment.
        workerData: { nativeCrypto: this.nativeCrypto },
        // A task is 64 subscriptions and their bodies (at most 4 KB each): small
        // heaps suffice, and V8's defaults let each thread's young generation
        // alone grow to 32 MB under a fan-out's churn.
        resourceLimits: { maxYoungGenerationSizeMb: THREAD_YOUNG_MB, maxOldGenerationSizeMb: THREAD_OLD_MB },
      })
    }
    return this.pool
  }

  /**
   * Starts the threads now and has each encrypt once for a throwaway key, so
   * the first broadcast waits neither for them to load nor for their first
   * call's compiling (~10-30 ms on its first chunk otherwise).
   */
  warm(): void {
    if (this.threads === 0) return
    const keys = throwawayKeys()
    const plaintext = Buffer.alloc(16)
    for (let i = 0; i < this.threads; i++) void this.encryptChunk(plaintext, [keys]).catch(() => undefined)
  }

  /**
   * Encrypts for every subscription, in chunks that finish independently, so
   * the caller can send a chunk's pushes while later chunks are still being
   * encrypted. Chunks cover the subscriptions in order, from `offset`.
   */
  encryptInChunks(plaintext: Plaintexts, subscriptions: SubscriptionKeys[]): Array<{ offset: number; count: number; bodies: Promise<Encrypted[]> }> {
    const chunks: Array<{ offset: number; count: number; bodies: Promise<Encrypted[]> }> = []
    for (let offset = 0; offset < subscriptions.length;) {
      const end = offset + (offset === 0 ? FIRST_CHUNK : CHUNK)
      const slice = subscriptions.slice(offset, end)
      const text = Array.isArray(plaintext) ? plaintext.slice(offset, end) : plaintext
      chunks.push({ offset, count: slice.length, bodies: this.encryptChunk(text, slice) })
      offset = end
    }
    return chunks
  }

  async encryptMany(plaintext: Plaintexts, subscriptions: SubscriptionKeys[]): Promise<Encrypted[]> {
    const chunks = this.encryptInChunks(plaintext, subscriptions)
    return (await Promise.all(chunks.map((chunk) => chunk.bodies))).flat()
  }

  private async encryptChunk(plaintext: Plaintexts, subscriptions: SubscriptionKeys[]): Promise<Encrypted[]> {
    if (this.threads === 0) {
      return subscriptions.map((keys, i) => {
        try {
          return this.encrypt(Array.isArray(plaintext) ? plaintext[i] : plaintext, keys)
        } catch (err) {
          return { error: (err as Error).message }
        }
      })
    }
    // The keys alone, as one flat array of strings (p256dh, auth, p256dh, …): the subscriptions given are
    // whole recipients (endpoint, ids, tags…), which the structured clone to the thread would copy too.
    const keys: string[] = new Array(subscriptions.length * 2)
    for (let i = 0; i < subscriptions.length; i++) {
      keys[2 * i] = subscriptions[i].p256dh
      keys[2 * i + 1] = subscriptions[i].auth
    }
    const task = Array.isArray(plaintext) ? { plaintexts: plaintext, keys } : { plaintext, keys }
    const packed: ArrayBuffer = await this.workers.run(task)
    // Views into the one buffer the thread handed over (layout in encrypt-worker.mjs): no copy per body.
    const view = new DataView(packed)
    const count = view.getUint32(0)
    const bodies: Encrypted[] = []
    let offset = 4 + 4 * count
    for (let i = 0; i < count; i++) {
      const length = view.getInt32(4 + 4 * i)
      if (length < 0) {
        bodies.push({ error: 'invalid subscription keys' })
        continue
      }
      bodies.push(Buffer.from(packed, offset, length))
      offset += length
    }
    return bodies
  }

  async close(): Promise<void> {
    await this.pool?.destroy()
    this.pool = null
  }
}
