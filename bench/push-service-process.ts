// The benchmark's push service in a process of its own, driven over IPC, so
// that its work is not counted in the sender's process (it still shares the
// machine's two cores, as a real sender shares nothing with FCM).
import { startPushService, type TestSubscription } from '../test/support/push-service.ts'

export type PushServiceRequest =
  | { type: 'create'; n: number; sharedKeys?: boolean }
  | { type: 'stats' }
  | { type: 'count' }
  | { type: 'reset' }
  | { type: 'close' }

const delayMs = Number(process.env.BENCH_PUSH_DELAY_MS ?? 50)
const verifySample = Number(process.env.BENCH_PUSH_VERIFY_SAMPLE ?? 0.01)
const tls = process.env.BENCH_TLS_KEY ? { key: process.env.BENCH_TLS_KEY, cert: process.env.BENCH_TLS_CERT! } : undefined
const service = await startPushService({ delayMs, verifySample, recordArrivals: true, tls })

function reply(message: unknown): void {
  process.send!(message)
}

process.on('message', async (request: PushServiceRequest) => {
  switch (request.type) {
    case 'create': {
      const subscriptions: TestSubscription[] = []
      for (let i = 0; i < request.n; i++) subscriptions.push(service.createSubscription({ sharedKeys: request.sharedKeys }))
      reply({ type: 'created', subscriptions })
      break
    }
    case 'stats':
      reply({
        type: 'stats',
        count: service.count,
        requests: service.requests,
        verified: service.received.length,
        distinct: service.distinct,
        rejected: service.rejected.slice(0, 5),
        rejectedCount: service.rejected.length,
        arrivals: service.arrivals,
      })
      break
    case 'count':
      // Polled while a fan-out runs: the count alone, not a million arrival times each time.
      reply({ type: 'count', count: service.count, rejectedCount: service.rejected.length, rejected: service.rejected.slice(0, 5) })
      break
    case 'reset':
      service.reset()
      reply({ type: 'reset' })
      break
    case 'close':
      await service.close()
      process.exit(0)
  }
})
reply({ type: 'ready', url: service.url })
