// The worker role in one place (beside app.ts, the API role): the job worker
// with the job kinds each domain registers, and the webhook dispatcher, both
// on the one polling loop of platform/jobs. `herald serve --role worker|all`
// starts one.
import { setFlagsFromString } from 'node:v8'
import type { AppContext } from './platform/context.ts'
import { JobWorker } from './platform/jobs/worker.ts'
import { BROADCAST_PAYLOAD_VERSION } from './broadcasts/payload-version.ts'
import { createDeliveryJobs } from './delivery/delivery-jobs.ts'
import { createWebhookWorker } from './webhooks/webhook-worker.ts'
import { idempotencyJobHandlers } from './broadcasts/idempotency-prune.ts'
import { pushCountsJobHandlers } from './frequency-caps/push-counts-prune.ts'
import { auditJobHandlers } from './audit/audit-prune.ts'
import { healthJobHandlers } from './subscribers/health-expiry.ts'
import type { WebhookDispatcher } from './webhooks/webhook-dispatcher.ts'
import { waitingJobs } from './platform/jobs/backlog.ts'
import { waitingWebhookDeliveries } from './webhooks/webhook-backlog.ts'

export interface BackgroundWorker {
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

export function createWorker(ctx: AppContext): BackgroundWorker {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
  const { config } = ctx
  const delivery = createDeliveryJobs(ctx)
  const webhooks = createWebhookWorker(ctx)
  // Every domain's job kinds, each with its handler.
  const handlers = {
    ...delivery.handlers, ...idempotencyJobHandlers(ctx.db), ...pushCountsJobHandlers(ctx.db),
    ...auditJobHandlers(ctx.db, config.auditRetentionDays), ...healthJobHandlers(ctx.db),
  }
  const worker = new JobWorker(ctx.db, handlers, {
    // Version 2 (issue 24): fan-out renders personalized broadcasts, and plans local-time waves
    // (delivery/waves.ts); a worker of 0.2.0 leaves such jobs to this release.
    payloadVersions: { fire_broadcast: BROADCAST_PAYLOAD_VERSION, fanout_broadcast: BROADCAST_PAYLOAD_VERSION, push_batch: BROADCAST_PAYLOAD_VERSION, push_retry: BROADCAST_PAYLOAD_VERSION, decide_experiment: BROADCAST_PAYLOAD_VERSION },
    concurrency: config.workerConcurrency,
    pollIntervalMs: config.schedulerIntervalMs,
    leaseMs: config.jobLeaseMs,
    onError: (err, job) => ctx.log.warn({ err, job_id: job.id, kind: job.kind }, 'job failed'),
    log: ctx.log,
    metrics: ctx.metrics,
    onGiveUp: async (job, err) => {
      ctx.log.error({ err, job_id: job.id, kind: job.kind }, 'job failed its last attempt')
      if (job.kind in delivery.handlers) await delivery.giveUp(job.payload, err)
    },
  })
  // Read from the database at each scrape of a process that runs a worker (the same numbers in each: aggregate with max).
  ctx.metrics.addBacklog('jobs', 'Jobs by kind', 'kind', () => waitingJobs(ctx.db))
  ctx.metrics.addBacklog('webhook_deliveries', 'Webhook deliveries', null, () => waitingWebhookDeliveries(ctx.db))
  return {
    worker,
    webhooks: webhooks.dispatcher,
    async start() {
      delivery.warm()
      await worker.start()
      await webhooks.dispatcher.start()
    },
    async stop() {
      await Promise.all([worker.stop(), webhooks.dispatcher.stop()])
      await delivery.close()
      await webhooks.close()
    },
  }
}
