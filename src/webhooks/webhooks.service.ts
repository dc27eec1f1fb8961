// Registering, listing, changing and removing a project's webhook endpoints,
// their delivery log and their secret's rotation.
import { randomBytes } from 'node:crypto'
import type { Config } from '../platform/config.ts'
import type { Database } from '../platform/db/database.ts'
import { AppError, invalidField } from '../platform/errors.ts'
import { newId } from '../platform/ids.ts'
import { checkWebhookUrl } from '../platform/outbound/url-policy.ts'
import { findProjectForUpdate } from '../projects/projects.store.ts'
import {
  MAX_WEBHOOKS_PER_PROJECT,
  DEFAULT_WEBHOOK_EVENTS,
  type CreatedWebhook,
  type CreateWebhookBody,
  type DeliveryAttemptList,
  type ListDeliveriesQuery,
  type ListWebhooksQuery,
  type RotatedSecret,
  type UpdateWebhookBody,
  type Webhook,
  type WebhookList,
} from './webhooks.schemas.ts'
import {
  countWebhooks,
  deleteWebhook,
  findWebhook,
  insertWebhook,
  listWebhooksPage,
  rotateWebhookSecret,
  updateWebhook,
  type WebhookRow,
} from './webhooks.store.ts'
import { readPage } from '../platform/paging.ts'
import { expireDeliveriesOnResume } from './webhook-deliveries.store.ts'
import { listAttemptsPage } from './webhook-attempts.store.ts'
import { retryWindowMs } from './retry-schedule.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'
import { maskWebhookUrl } from '../access/masking.ts'

/**
 * A webhook URL in the audit log is its host only: the path or query of a
 * chat service's incoming-webhook URL is itself a secret.
 */
export function urlHost(url: string): string | null {
  try {
    return new URL(url).host
  } catch {
    return null
  }
}

/** disabled_reason of an endpoint its owner disabled with PATCH { enabled: false }. */
export const DISABLED_BY_OWNER = 'disabled by the owner'
/** How long deliveries also carry the replaced secret's signature after a rotation. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 3_600_000

export const DEFAULT_PAGE_SIZE = 50

/** Standard Webhooks secret format: `whsec_` and the base64 of 32 random bytes (the HMAC-SHA256 key). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

/** Whether the caller may see webhook URLs whole (access.ts SEES_WEBHOOK_URLS); masked to the origin otherwise. */
export interface WebhookView { urls: boolean }

function webhookJson(row: WebhookRow, view: WebhookView): Webhook {
  return {
    id: row.id,
    url: view.urls ? row.url : maskWebhookUrl(row.url),
    events: row.events,
    status: row.status,
    created_at: row.created_at.getTime(),
    disabled_at: row.disabled_at ? row.disabled_at.getTime() : null,
    disabled_reason: row.status === 'disabled' ? row.disabled_reason : null,
  }
}

/** The project's webhook, or 404 webhook_not_found (another project's id included). */
export async function requireWebhook(db: Database, projectId: string, id: string): Promise<WebhookRow> {
  const row = await findWebhook(db, projectId, id)
  if (!row) throw new AppError('webhook_not_found', `No webhook ${id} in this project.`)
  return row
}

export async function getWebhook(db: Database, projectId: string, id: string, view: WebhookView): Promise<Webhook> {
  return webhookJson(await requireWebhook(db, projectId, id), view)
}

/**
 * PATCH: a new URL is judged as on create (before the transaction: it may
 * resolve DNS). Disabling leaves the pending deliveries waiting; enabling
 * gives up on those whose retry window passed meanwhile and wakes the
 * dispatchers for the rest.
 */
export async function changeWebhook(db: Database, config: Config, audit: AuditContext, projectId: string, id: string, body: UpdateWebhookBody, view: WebhookView): Promise<Webhook> {
  if (body.url !== undefined) {
    const refusal = await checkWebhookUrl(body.url, config)
    if (refusal) throw invalidField('url', refusal)
  }
  const row = await db.transaction(async (tx) => {
    const current = await findWebhook(tx, projectId, id, true)
    if (!current) throw new AppError('webhook_not_found', `No webhook ${id} in this project.`)
    if (body.enabled === true && current.status === 'disabled') await expireDeliveriesOnResume(tx, id, retryWindowMs(config.webhookRetryBaseMs))
    const fields = (['url', 'events', 'enabled'] as const).filter((field) => body[field] !== undefined)
    await recordAudit(tx, {
      projectId,
      context: audit,
      action: 'webhook.update',
      target: { type: 'webhook', id },
      details: { fields, ...(body.url !== undefined ? { host: urlHost(body.url) } : {}), ...(body.events !== undefined ? { events: body.events } : {}), ...(body.enabled !== undefined ? { enabled: body.enabled } : {}) },
    })
    return updateWebhook(tx, id, { url: body.url, events: body.events, enabled: body.enabled, disabledReason: DISABLED_BY_OWNER })
  })
  return webhookJson(row, view)
}

export async function listDeliveryAttempts(db: Database, projectId: string, id: string, query: ListDeliveriesQuery): Promise<DeliveryAttemptList> {
  await requireWebhook(db, projectId, id)
  const limit = query.limit ?? DEFAULT_PAGE_SIZE
  const { rows, next_cursor } = await readPage(limit, (n) => listAttemptsPage(db, id, n, query.cursor ?? null))
  return {
    deliveries: rows.map((row) => ({
      id: row.id,
      event_id: row.event_id,
      event_type: row.event_type,
      attempt: row.attempt,
      outcome: row.outcome,
      response_status: row.response_status,
      error: row.error,
      duration_ms: row.duration_ms,
      attempted_at: row.attempted_at.getTime(),
      next_attempt_at: row.next_attempt_at ? row.next_attempt_at.getTime() : null,
    })),
    next_cursor,
  }
}

export async function rotateSecret(db: Database, audit: AuditContext, projectId: string, id: string): Promise<RotatedSecret> {
  const secret = newWebhookSecret()
  const expiresAt = await db.transaction(async (tx) => {
    const expires = await rotateWebhookSecret(tx, projectId, id, secret, PREVIOUS_SECRET_TTL_MS)
    if (!expires) throw new AppError('webhook_not_found', `No webhook ${id} in this project.`)
    // That it was rotated, never a secret.
    await recordAudit(tx, { projectId, context: audit, action: 'webhook.rotate_secret', target: { type: 'webhook', id } })
    return expires
  })
  return { secret, previous_secret_expires_at: expiresAt.getTime() }
}

export async function createWebhook(db: Database, config: Config, audit: AuditContext, projectId: string, body: CreateWebhookBody): Promise<CreatedWebhook> {
  const refusal = await checkWebhookUrl(body.url, config)
  if (refusal) throw invalidField('url', refusal)
  const events = body.events ?? [...DEFAULT_WEBHOOK_EVENTS]
  const row = await db.transaction(async (tx) => {
    // Locking the project row makes count-then-insert safe against two creates at once.
    await findProjectForUpdate(tx, projectId)
    if ((await countWebhooks(tx, projectId)) >= MAX_WEBHOOKS_PER_PROJECT) {
      throw new AppError(
        'webhook_limit_reached',
        `A project can have at most ${MAX_WEBHOOKS_PER_PROJECT} webhook endpoints; delete one first.`,
        { limit: MAX_WEBHOOKS_PER_PROJECT },
      )
    }
    const row = await insertWebhook(tx, { id: newId('whk'), project_id: projectId, url: body.url, events, secret: newWebhookSecret() })
    await recordAudit(tx, { projectId, context: audit, action: 'webhook.create', target: { type: 'webhook', id: row.id }, details: { host: urlHost(body.url), events } })
    return row
  })
  return { id: row.id, url: row.url, events: row.events, secret: row.secret }
}

export async function listWebhooks(db: Database, projectId: string, query: ListWebhooksQuery, view: WebhookView): Promise<WebhookList> {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE
  const { rows, next_cursor } = await readPage(limit, (n) => listWebhooksPage(db, projectId, n, query.cursor ?? null))
  return { webhooks: rows.map((row) => webhookJson(row, view)), next_cursor }
}

export async function removeWebhook(db: Database, audit: AuditContext, projectId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    if (!(await deleteWebhook(tx, projectId, id))) throw new AppError('webhook_not_found', `No webhook ${id} in this project.`)
    await recordAudit(tx, { projectId, context: audit, action: 'webhook.delete', target: { type: 'webhook', id } })
  })
}
