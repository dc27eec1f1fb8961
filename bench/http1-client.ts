// Micro-benchmark of the push client's HTTP/1.1 (issue 26): the main-thread
// CPU per push of Herald's own framing (delivery/http1-origin.ts) against
// undici's Pool, which it replaced, through PushClient as fan-out calls it.
// The push service is the bench's (HTTPS, answers after 50 ms, in a process
// of its own); bodies are ready-made, so only the sending is measured.
// Run: npx tsx bench/http1-client.ts [pushes per round, default 40000]
//
// Prints the CPU (user + system) of this process per push, every thread, for
// each client: the median of ROUNDS rounds taken in turn, each round on a
// fresh PushClient (its TLS handshakes counted: 512 of them), and pushes/s.
import { PushClient } from '../src/delivery/push-client.ts'
import { encryptPayload } from '../src/delivery/encryption.ts'
import { VapidTokenCache } from '../src/delivery/vapid.ts'
import { generateVapidKeys } from '../src/projects/vapid-keys.ts'
import { BenchPushService, makeCert } from './support.ts'

const ROUNDS = 5
const CONNECTIONS = 512
const pushes = Number(process.argv[2] ?? 40_000)

const cert = await makeCert()
const service = await BenchPushService.start(50, 0, cert)
const subscriptions = await service.createSubscriptions(1000, true)
const vapid = generateVapidKeys()
const tokens = new VapidTokenCache()
const requests = subscriptions.map((sub) => {
  const endpoint = new URL(sub.endpoint)
  return {
    endpoint,
    body: encryptPayload(Buffer.from('{"title":"Hello","body":"A notification of a usual size, with a URL","url":"https://example.com/a"}'), sub.keys),
    headers: {
      TTL: '86400',
      Urgency: 'normal',
      'Content-Encoding': 'aes128gcm',
      'Content-Type': 'application/octet-stream',
      Authorization: tokens.get('prj_bench', vapid, endpoint, 'mailto:ops@example.com'),
    },
  }
})

async function round(http1: 'herald' | 'undici'): Promise<{ cpuUs: number; rate: number }> {
  const client = new PushClient({ connectionsPerOrigin: CONNECTIONS, allowPrivateAddresses: true, ca: cert.cert, http2: false, http1 })
  let started = 0
  let finished = 0
  let failed = 0
  const cpu = process.cpuUsage()
  const wall = Date.now()
  await new Promise<void>((resolve) => {
    const next = (): void => {
      if (started >= pushes) return
      const request = requests[started++ % requests.length]
      client.dispatchPush(request, (outcome) => {
        if (outcome.kind !== 'delivered') failed++
        if (++finished === pushes) resolve()
        else next()
      })
    }
    for (let i = 0; i < CONNECTIONS; i++) next()
  })
  const used = process.cpuUsage(cpu)
  const seconds = (Date.now() - wall) / 1000
  await client.close()
  if (failed > 0) throw new Error(`${http1}: ${failed} pushes not delivered`)
  return { cpuUs: (used.user + used.system) / pushes, rate: pushes / seconds }
}

const results: Record<string, Array<{ cpuUs: number; rate: number }>> = { herald: [], undici: [] }
await round('herald') // warm-up: JIT, the push service's first connections
for (let i = 0; i < ROUNDS; i++) {
  for (const http1 of ['undici', 'herald'] as const) results[http1].push(await round(http1))
}
const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]
console.log(`HTTP/1.1 push client, ${pushes} pushes per round, ${CONNECTIONS} connections, push service answering after 50 ms (median of ${ROUNDS} rounds in turn):`)
for (const [name, rounds] of Object.entries(results)) {
  const cpu = rounds.map((r) => r.cpuUs)
  console.log(`  ${name.padEnd(7)} ${median([...cpu]).toFixed(1).padStart(6)} µs CPU per push (rounds ${Math.min(...cpu).toFixed(1)}-${Math.max(...cpu).toFixed(1)}), ${Math.round(median(rounds.map((r) => r.rate)))} pushes/s`)
}
await service.close()
