// Webhooks' part of the worker role: the dispatcher and its own connection
// pool (customer endpoints never share connections or slots with fan-out).
import type { AppContext } from '../platform/context.ts'
import { OutboundClient } from '../platform/outbound/http-client.ts'
import { WebhookDispatcher } from './webhook-dispatcher.ts'

export interface WebhookWorker {
  dispatcher: WebhookDispatcher
  close(): Promise<void>
}

export function createWebhookWorker(ctx: AppContext): WebhookWorker {
  const { config } = ctx
  const client = new OutboundClient({
    timeoutMs: config.webhookTimeoutMs,
    // Several customers' endpoints can share a host; the dispatcher bounds each
    // endpoint, so the pool must not make them queue behind one another.
    connectionsPerOrigin: config.webhookConcurrency,
    allowPrivateAddresses: config.allowPrivateEndpoints,
  })
  const dispatcher = new WebhookDispatcher({
    db: ctx.db,
    log: ctx.log,
    client,
    concurrency: config.webhookConcurrency,
    perEndpoint: config.webhookEndpointConcurrency,
    // A request ends within its timeout; the margin covers recording its outcome.
    leaseMs: config.webhookTimeoutMs + config.jobLeaseMs,
    pollIntervalMs: config.schedulerIntervalMs,
    retryBaseMs: config.webhookRetryBaseMs,
    disableAfterMs: config.webhookDisableAfterMs,
    metrics: ctx.metrics,
  })
  return { dispatcher, close: () => client.close() }
}
