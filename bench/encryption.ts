// Micro-benchmark of the per-push CPU work on one core: RFC 8291 encryption
// (raw and pre-decoded subscription keys) and the VAPID header (signed vs cached).
// Run: npx tsx bench/encryption.ts
import { createECDH, randomBytes } from 'node:crypto'
import { encryptPayload, prepareSubscriptionKeys } from '../src/delivery/encryption.ts'
import { VapidTokenCache, vapidAuthorization } from '../src/delivery/vapid.ts'
import { generateVapidKeys } from '../src/projects/vapid-keys.ts'

function measure(name: string, iterations: number, fn: () => unknown): void {
  for (let i = 0; i < Math.min(1000, iterations / 10); i++) fn() // warm up
  const runs: number[] = []
  for (let run = 0; run < 5; run++) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < iterations; i++) fn()
    runs.push(Number(process.hrtime.bigint() - start) / 1e6)
  }
  runs.sort((a, b) => a - b)
  const ms = runs[2] // median of five
  console.log(`${name.padEnd(40)} ${Math.round((iterations / ms) * 1000).toString().padStart(9)} ops/s  ${((ms / iterations) * 1000).toFixed(1).padStart(7)} µs`)
}

const ua = createECDH('prime256v1')
const keys = { p256dh: ua.generateKeys().toString('base64url'), auth: randomBytes(16).toString('base64url') }
const prepared = prepareSubscriptionKeys(keys)
const plaintext = Buffer.from(JSON.stringify({ v: 1, title: 'x'.repeat(100), body: 'y'.repeat(850) })) // ~1 KB

const n = Number(process.argv[2] ?? 2000)
measure('encryptPayload 1 KB, base64url keys', n, () => encryptPayload(plaintext, keys))
measure('encryptPayload 1 KB, prepared keys', n, () => encryptPayload(plaintext, prepared))
measure('encryptPayload 3993 B, prepared keys', n, () => encryptPayload(Buffer.alloc(3993), prepared))

const vapid = generateVapidKeys()
measure('vapidAuthorization (key import + sign)', n, () => vapidAuthorization(vapid, 'https://fcm.googleapis.com', 'mailto:ops@herald.dev'))
const cache = new VapidTokenCache()
measure('VapidTokenCache.get (cached)', n * 50, () => cache.get('prj_a', vapid, 'https://fcm.googleapis.com/fcm/send/abc', 'mailto:ops@herald.dev'))
