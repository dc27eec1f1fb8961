// Micro-benchmark of the per-push CPU work on one core: RFC 8291 encryption by
// each candidate path (issue 14), and the VAPID header (signed vs cached).
// Run: npx tsx bench/encryption.ts [encryptions per round, default 2000]
//
// Prints µs of CPU per encryption: process.cpuUsage() (user + system, every
// thread of the process, so WebCrypto's libuv threads count too), the median
// of ROUNDS rounds. Every path starts from the subscription's base64url keys,
// as an encryption thread does (one push per subscriber per broadcast).
import {
  createCipheriv,
  createECDH,
  createHmac,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  randomBytes,
  randomFillSync,
  webcrypto,
} from 'node:crypto'
import { encryptPayload, prepareSubscriptionKeys } from '../src/delivery/encryption.ts'
import { nativeEncryptPayload } from '../src/delivery/rfc8291.mjs'
import { VapidTokenCache, vapidAuthorization } from '../src/delivery/vapid.ts'
import { generateVapidKeys } from '../src/projects/vapid-keys.ts'

const ROUNDS = 7

function report(name: string, perOpUs: number[]): void {
  perOpUs.sort((a, b) => a - b)
  const median = perOpUs[Math.floor(perOpUs.length / 2)]
  console.log(`${name.padEnd(52)} ${median.toFixed(1).padStart(7)} µs CPU  (rounds ${perOpUs[0].toFixed(1)}-${perOpUs.at(-1)!.toFixed(1)})`)
}

function cpuUs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since)
  return used.user + used.system
}

function measure(name: string, iterations: number, fn: () => unknown): void {
  for (let i = 0; i < Math.min(1000, iterations / 10); i++) fn() // warm up
  const runs: number[] = []
  for (let run = 0; run < ROUNDS; run++) {
    const start = process.cpuUsage()
    for (let i = 0; i < iterations; i++) fn()
    runs.push(cpuUs(start) / iterations)
  }
  report(name, runs)
}

/** Async paths run 64 at a time, as a thread's batch would. */
async function measureAsync(name: string, iterations: number, fn: () => Promise<unknown>): Promise<void> {
  const batch = async (count: number) => {
    for (let done = 0; done < count; done += 64) await Promise.all(Array.from({ length: Math.min(64, count - done) }, fn))
  }
  await batch(Math.min(1000, iterations / 10))
  const runs: number[] = []
  for (let run = 0; run < ROUNDS; run++) {
    const start = process.cpuUsage()
    await batch(iterations)
    runs.push(cpuUs(start) / iterations)
  }
  report(name, runs)
}

// The key schedule and record of rfc8291.mjs, for the paths that only swap the ECDH.
const KEY_INFO = Buffer.from('WebPush: info\0', 'latin1')
const CEK_INFO = Buffer.from('Content-Encoding: aes128gcm\0\x01', 'latin1')
const NONCE_INFO = Buffer.from('Content-Encoding: nonce\0\x01', 'latin1')
const hmac = (key: Buffer, ...data: Buffer[]) => data.reduce((mac, part) => mac.update(part), createHmac('sha256', key)).digest()
function seal(plaintext: Buffer, uaPublic: Buffer, auth: Buffer, asPublic: Buffer, secret: Buffer): Buffer {
  const salt = randomFillSync(Buffer.alloc(16))
  const ikm = hmac(hmac(auth, secret), KEY_INFO, uaPublic, asPublic, Buffer.of(1))
  const prk = hmac(salt, ikm)
  const cipher = createCipheriv('aes-128-gcm', hmac(prk, CEK_INFO).subarray(0, 16), hmac(prk, NONCE_INFO).subarray(0, 12))
  const header = Buffer.alloc(21)
  salt.copy(header)
  header.writeUInt32BE(4096, 16)
  header[20] = 65
  return Buffer.concat([header, asPublic, cipher.update(plaintext), cipher.update(Buffer.of(2)), cipher.final(), cipher.getAuthTag()])
}

// SubjectPublicKeyInfo prefix of an uncompressed P-256 point (id-ecPublicKey, prime256v1).
const SPKI_P256 = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex')

function encryptDiffieHellman(plaintext: Buffer, keys: { p256dh: string; auth: string }): Buffer {
  const { uaPublic, authSecret } = prepareSubscriptionKeys(keys)
  const peer = createPublicKey({ key: Buffer.concat([SPKI_P256, uaPublic]), format: 'der', type: 'spki' })
  const sender = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const asPublic = sender.publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_P256.length)
  return seal(plaintext, uaPublic, authSecret, asPublic, diffieHellman({ privateKey: sender.privateKey, publicKey: peer }))
}

const subtle = webcrypto.subtle
async function encryptWebCrypto(plaintext: Buffer, keys: { p256dh: string; auth: string }): Promise<Buffer> {
  const { uaPublic, authSecret } = prepareSubscriptionKeys(keys)
  const peer = await subtle.importKey('raw', uaPublic, { name: 'ECDH', namedCurve: 'P-256' }, false, [])
  const sender = (await subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, ['deriveBits'])) as CryptoKeyPair
  const asPublic = Buffer.from(await subtle.exportKey('raw', sender.publicKey))
  const secret = Buffer.from(await subtle.deriveBits({ name: 'ECDH', public: peer }, sender.privateKey, 256))
  return seal(plaintext, uaPublic, authSecret, asPublic, secret)
}

const ua = createECDH('prime256v1')
const keys = { p256dh: ua.generateKeys().toString('base64url'), auth: randomBytes(16).toString('base64url') }
const prepared = prepareSubscriptionKeys(keys)
const plaintext = Buffer.from(JSON.stringify({ v: 1, title: 'x'.repeat(100), body: 'y'.repeat(850) })) // ~1 KB
const n = Number(process.argv[2] ?? 2000)
const native = nativeEncryptPayload()

console.log('RFC 8291 encryption, 1 KB, from base64url keys:')
measure('node:crypto createECDH + computeSecret (current)', n, () => encryptPayload(plaintext, keys))
measure('crypto.diffieHellman with KeyObjects', n, () => encryptDiffieHellman(plaintext, keys))
await measureAsync('WebCrypto ECDH (+ node:crypto HMAC and AES-GCM)', n, () => encryptWebCrypto(plaintext, keys))
if (native) measure('OpenSSL addon, one call (src/delivery/native)', n, () => native(plaintext, keys))
else console.log('OpenSSL addon: not built (node scripts/build-native.mjs)')

console.log('Parts of the current path:')
measure('createECDH + generateKeys', n, () => createECDH('prime256v1').generateKeys())
const sender = createECDH('prime256v1')
sender.generateKeys()
measure('computeSecret', n, () => sender.computeSecret(prepared.uaPublic))
measure('encryptPayload 1 KB, prepared keys', n, () => encryptPayload(plaintext, prepared))
if (native) measure('OpenSSL addon 1 KB, prepared keys', n, () => native(plaintext, prepared))
measure('encryptPayload 3993 B, prepared keys', n, () => encryptPayload(Buffer.alloc(3993), prepared))
if (native) measure('OpenSSL addon 3993 B, prepared keys', n, () => native(Buffer.alloc(3993), prepared))

console.log('VAPID:')
const vapid = generateVapidKeys()
measure('vapidAuthorization (key import + sign)', n, () => vapidAuthorization(vapid, 'https://fcm.googleapis.com', 'mailto:ops@herald.dev'))
const cache = new VapidTokenCache()
measure('VapidTokenCache.get (cached)', n * 50, () => cache.get('prj_a', vapid, 'https://fcm.googleapis.com/fcm/send/abc', 'mailto:ops@herald.dev'))
