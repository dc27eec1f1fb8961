// The background side of Herald in one object: the job worker with the
// fan-out handlers and everything they share (connection pools, encryption
// threads, VAPID tokens), and the webhook dispatcher beside it (its own loop
// and connections, so customer endpoints never slow fan-out).
// `herald serve --role worker|all` starts one.
import { setFlagsFromString } from 'node:v8'
import type { AppContext } from '../platform/context.ts'
import { JobWorker } from '../platform/jobs/worker.ts'
import { OutboundClient } from '../platform/outbound/http-client.ts'
import { WebhookDispatcher } from '../webhooks/webhook-dispatcher.ts'
import { EncryptPool } from './encrypt-pool.ts'
import { fanoutHandlers, giveUpOnBroadcast } from './fanout.ts'
import { PushClient } from './push-client.ts'
import { VapidTokenCache } from './vapid.ts'

export interface DeliveryWorker {
  worker: JobWorker
  webhooks: WebhookDispatcher
  start(): Promise<void>
  stop(): Promise<void>
}

/**
 * How far V8 lets the heap grow past what the last full collection kept, in
 * percent (V8's own factor is up to 4x). A fan-out keeps ~40 MB alive but
 * makes garbage fast, and with V8's default the heap swelled to ~155 MB
 * between collections. Side by side at 50,000 subscribers, default / 50% / 25%
 * gave 259 / 244 / 234 MB peak at the same pushes/s (docs/performance.md).
 * V8 reads this flag at each collection, so setting it here works without a
 * command-line flag.
 */
const HEAP_GROWING_PERCENT = 25

export function createDeliveryWorker(ctx: AppContext): DeliveryWorker {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
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
  const webhookClient = new OutboundClient({
    timeoutMs: config.webhookTimeoutMs,
    // Several customers' endpoints can share a host; the dispatcher bounds each
    // endpoint, so the pool must not make them queue behind one another.
    connectionsPerOrigin: config.webhookConcurrency,
    allowPrivateAddresses: config.allowPrivateEndpoints,
  })
  const webhooks = new WebhookDispatcher({
    db: ctx.db,
    log: ctx.log,
    client: webhookClient,
    concurrency: config.webhookConcurrency,
    perEndpoint: config.webhookEndpointConcurrency,
    // A request ends within its timeout; the margin covers recording its outcome.
    leaseMs: config.webhookTimeoutMs + config.jobLeaseMs,
    pollIntervalMs: config.schedulerIntervalMs,
    retryBaseMs: config.webhookRetryBaseMs,
    disableAfterMs: config.webhookDisableAfterMs,
  })
  return {
    worker,
    webhooks,
    async start() {
      encryptPool.warm()
      await worker.start()
      await webhooks.start()
    },
    async stop() {
      await Promise.all([worker.stop(), webhooks.stop()])
      await encryptPool.close()
      await pushClient.close()
      await webhookClient.close()
    },
  }
}
