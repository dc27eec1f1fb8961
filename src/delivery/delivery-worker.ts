// The background side of Herald in one object: the job worker with the
// fan-out handlers and everything they share (connection pools, encryption
// threads, VAPID tokens). `herald serve --role worker|all` starts one.
import type { AppContext } from '../platform/context.ts'
import { JobWorker } from '../platform/jobs/worker.ts'
import { EncryptPool } from './encrypt-pool.ts'
import { fanoutHandlers, giveUpOnBroadcast } from './fanout.ts'
import { PushClient } from './push-client.ts'
import { VapidTokenCache } from './vapid.ts'

export interface DeliveryWorker {
  worker: JobWorker
  start(): Promise<void>
  stop(): Promise<void>
}

export function createDeliveryWorker(ctx: AppContext): DeliveryWorker {
  const { config } = ctx
  const pushClient = new PushClient({
    timeoutMs: config.pushTimeoutMs,
    connectionsPerOrigin: config.pushConnections,
    allowPrivateAddresses: config.allowPrivateEndpoints,
    http2: config.pushHttp2,
  })
  const encryptPool = new EncryptPool(config.encryptThreads ?? undefined)
  const handlers = fanoutHandlers({
    db: ctx.db,
    log: ctx.log,
    batchSize: config.fanoutBatchSize,
    retryBaseMs: config.pushRetryBaseMs,
    encryptPool,
    pushClient,
    vapidTokens: new VapidTokenCache(),
    vapidSubject: config.vapidSubject,
  })
  const worker = new JobWorker(ctx.db, handlers, {
    concurrency: config.workerConcurrency,
    pollIntervalMs: config.schedulerIntervalMs,
    leaseMs: config.jobLeaseMs,
    onError: (err, job) => ctx.log.warn({ err, job_id: job.id, kind: job.kind }, 'job failed'),
    onGiveUp: async (job, err) => {
      ctx.log.error({ err, job_id: job.id, kind: job.kind }, 'job failed its last attempt')
      await giveUpOnBroadcast(ctx.db, job.payload, err)
    },
  })
  return {
    worker,
    async start() {
      encryptPool.warm()
      await worker.start()
    },
    async stop() {
      await worker.stop()
      await encryptPool.close()
      await pushClient.close()
    },
  }
}
