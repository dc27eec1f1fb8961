// Registering, listing and removing a project's webhook endpoints.
import { randomBytes } from 'node:crypto'
import type { Config } from '../platform/config.ts'
import type { Database } from '../platform/db/database.ts'
import { AppError, invalidField } from '../platform/errors.ts'
import { newId } from '../platform/ids.ts'
import { checkWebhookUrl } from '../platform/outbound/url-policy.ts'
import { findProjectForUpdate } from '../projects/projects.store.ts'
import {
  MAX_WEBHOOKS_PER_PROJECT,
  WEBHOOK_EVENTS,
  type CreatedWebhook,
  type CreateWebhookBody,
  type ListWebhooksQuery,
  type Webhook,
  type WebhookList,
} from './webhooks.schemas.ts'
import { countWebhooks, deleteWebhook, insertWebhook, listWebhooksPage, type WebhookRow } from './webhooks.store.ts'

export const DEFAULT_PAGE_SIZE = 50

/** Standard Webhooks secret format: `whsec_` and the base64 of 32 random bytes (the HMAC-SHA256 key). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

function webhookJson(row: WebhookRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    status: row.status,
    created_at: row.created_at.getTime(),
    disabled_at: row.disabled_at ? row.disabled_at.getTime() : null,
  }
}

export async function createWebhook(db: Database, config: Config, projectId: string, body: CreateWebhookBody): Promise<CreatedWebhook> {
  const refusal = await checkWebhookUrl(body.url, config)
  if (refusal) throw invalidField('url', refusal)
  const events = body.events ?? [...WEBHOOK_EVENTS]
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
    return insertWebhook(tx, { id: newId('whk'), project_id: projectId, url: body.url, events, secret: newWebhookSecret() })
  })
  return { id: row.id, url: row.url, events: row.events, secret: row.secret }
}

export async function listWebhooks(db: Database, projectId: string, query: ListWebhooksQuery): Promise<WebhookList> {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE
  // One row more than asked tells whether another page follows.
  const rows = await listWebhooksPage(db, projectId, limit + 1, query.cursor ?? null)
  const page = rows.slice(0, limit)
  return { webhooks: page.map(webhookJson), next_cursor: rows.length > limit ? page[page.length - 1].id : null }
}

export async function removeWebhook(db: Database, projectId: string, id: string): Promise<void> {
  if (!(await deleteWebhook(db, projectId, id))) throw new AppError('webhook_not_found', `No webhook ${id} in this project.`)
}
