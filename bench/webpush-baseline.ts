// The baseline: the same fan-out done the way most projects do it, with the
// `web-push` package, a keep-alive agent and 50 pushes in flight.
import https from 'node:https'
import webpush from 'web-push'
import type { TestSubscription } from '../test/support/push-service.ts'
import type { BenchCert, BenchPushService } from './support.ts'

const IN_FLIGHT = 50

export interface BaselineResult {
  pushes: number
  pushesPerSecond: number
  failed: number
  seconds: number
  /** CPU of this process (every thread) per push, in µs: web-push's work and nothing else runs here meanwhile. */
  cpuPerPushMicros: number
}

export async function benchWebPush(options: {
  subscriptions: TestSubscription[]
  push: BenchPushService
  cert: BenchCert
  vapid: { publicKey: string; privateKey: string }
  payload: string
}): Promise<BaselineResult> {
  const agent = new https.Agent({ keepAlive: true, maxSockets: IN_FLIGHT, ca: options.cert.cert })
  await options.push.reset()
  let next = 0
  let failed = 0
  const cpuBefore = process.cpuUsage()
  const start = Date.now()
  const lane = async () => {
    while (next < options.subscriptions.length) {
      const subscription = options.subscriptions[next++]
      try {
        await webpush.sendNotification(subscription, options.payload, {
          TTL: 86400,
          agent,
          vapidDetails: { subject: 'mailto:bench@example.com', publicKey: options.vapid.publicKey, privateKey: options.vapid.privateKey },
        })
      } catch {
        failed++
      }
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane))
  const seconds = (Date.now() - start) / 1000
  const cpu = process.cpuUsage(cpuBefore)
  agent.destroy()
  const stats = await options.push.stats()
  return { pushes: stats.count, pushesPerSecond: stats.count / seconds, failed: failed + stats.rejectedCount, seconds, cpuPerPushMicros: (cpu.user + cpu.system) / Math.max(1, stats.count) }
}
