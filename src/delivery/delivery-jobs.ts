// Delivery's part of the worker role: the fan-out job handlers and what they
// share (connection pools to push services, encryption threads, VAPID
// tokens). src/worker.ts registers them with the job worker.
import type { AppContext } from '../platform/context.ts'
import type { JobHandlers } from '../platform/jobs/worker.ts'
import { EncryptPool } from './encrypt-pool.ts'
import { fanoutHandlers, giveUpOnBroadcast } from './fanout.ts'
import { deferredPushHandlers } from './deferred-pushes.ts'
import { experimentJobHandlers } from '../experiments/experiments.service.ts'
import { PushClient } from './push-client.ts'
import { VapidTokenCache } from './vapid.ts'
import { PushMetrics } from './push-metrics.ts'

export interface DeliveryJobs {
  handlers: JobHandlers
  /** A fan-out job failed its last attempt: its broadcast ends failed. */
  giveUp(payload: unknown, err: unknown): Promise<void>
  /** Starts the encryption threads before the first push needs them. */
  warm(): void
  close(): Promise<void>
}

export function createDeliveryJobs(ctx: AppContext): DeliveryJobs {
  const { config } = ctx
  const pushClient = new PushClient({
    timeoutMs: config.pushTimeoutMs,
    connectionsPerOrigin: config.pushConnections,
    allowPrivateAddresses: config.allowPrivateEndpoints,
    http2: config.pushHttp2,
    http1: config.pushHttp1,
  })
  const encryptPool = new EncryptPool(config.encryptThreads, config.nativeCrypto)
  const fanoutDeps = {
    db: ctx.db,
    log: ctx.log,
    batchSize: config.fanoutBatchSize,
    publicUrl: config.publicUrl,
    retryBaseMs: config.pushRetryBaseMs,
    encryptPool,
    pushClient,
    vapidTokens: new VapidTokenCache(),
    vapidSubject: config.vapidSubject,
    pushMetrics: new PushMetrics(ctx.metrics, ctx.log),
  }
  // The A/B test's decision is part of its broadcast's fan-out: when it fails for good, so does the broadcast.
  const handlers = { ...fanoutHandlers(fanoutDeps), ...deferredPushHandlers(fanoutDeps), ...experimentJobHandlers(ctx.db) }
  return {
    handlers,
    giveUp: (payload, err) => giveUpOnBroadcast(ctx.db, payload, err),
    warm() {
      // Says whether the OpenSSL addon was built at install (docs/performance.md, issue 14).
      ctx.log.info({ encryption: encryptPool.implementation, threads: encryptPool.threads }, 'push encryption ready')
      encryptPool.warm()
    },
    async close() {
      await encryptPool.close()
      await pushClient.close()
    },
  }
}
