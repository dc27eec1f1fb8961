// Saved templates (issue 24): checked with the same compiler a send uses, so
// a template that is stored is one a send can render; written with their
// audit entry in one transaction.
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { isId, newId } from '../platform/ids.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'
import { isUniqueViolation } from '../groups/groups.store.ts'
import type { Localized, NotificationInput, VariableDefaults } from '../broadcasts/broadcasts.schemas.ts'
import * as store from './templates.store.ts'
import type { CreateTemplateBody, TemplateView, UpdateTemplateBody } from './templates.schemas.ts'
import { allVariables, canonicalLocalized, compileNotification, type CompiledNotification, type NotificationFields } from './personalization.ts'

function notFound(id: string): AppError {
  return new AppError('template_not_found', `No template ${id} in this project.`)
}

function nameTaken(name: string): AppError {
  return new AppError('template_name_taken', `Another template in this project is named "${name}".`)
}

export function fieldsOf(notification: NotificationInput): NotificationFields {
  return {
    title: notification.title,
    body: notification.body,
    url: notification.url ?? '/',
    icon: notification.icon ?? null,
    image: notification.image ?? null,
    actions: notification.actions ?? [],
  }
}

/**
 * Compiles a template's content as a send would (template_invalid naming the
 * field). A template's icon and image are HTTPS URLs: a data: URL is stored
 * once per send, not kept in a template.
 */
function compileTemplate(notification: NotificationInput, defaults: VariableDefaults, localized: Localized): CompiledNotification {
  for (const kind of ['icon', 'image'] as const) {
    const value = notification[kind]
    if (value !== undefined && !/^https:\/\/[^\s]+$/i.test(value)) {
      throw new AppError('template_invalid', `notification.${kind}: a template's ${kind} is an https:// URL (upload a data: URL with a send instead).`, { field: `notification.${kind}` })
    }
  }
  return compileNotification(fieldsOf(notification), { template_id: null, data: {}, defaults, localized, missing: 'default', on_too_long: 'truncate' })
}

function toView(row: store.TemplateRow): TemplateView {
  const compiled = compileTemplate(row.notification, row.defaults, row.localized)
  return {
    id: row.id,
    name: row.name,
    notification: row.notification,
    defaults: row.defaults,
    localized: row.localized,
    variables: allVariables(compiled),
    created_at: row.created_at.getTime(),
    updated_at: row.updated_at.getTime(),
  }
}

/** The template, or 404 template_not_found (a malformed id or another project's template included). */
export async function loadTemplate(q: Queryable, projectId: string, id: string): Promise<store.TemplateRow> {
  const row = isId('tpl', id) ? await store.findTemplate(q, projectId, id) : null
  if (!row) throw notFound(id)
  return row
}

export async function listTemplates(db: Database, projectId: string): Promise<TemplateView[]> {
  return (await store.listTemplates(db, projectId)).map(toView)
}

export async function getTemplate(db: Database, projectId: string, id: string): Promise<TemplateView> {
  return toView(await loadTemplate(db, projectId, id))
}

export async function createTemplate(db: Database, audit: AuditContext, projectId: string, body: CreateTemplateBody): Promise<TemplateView> {
  const defaults = body.defaults ?? {}
  const localized = canonicalLocalized(body.localized)
  compileTemplate(body.notification, defaults, localized)
  const id = newId('tpl')
  try {
    await db.transaction(async (tx) => {
      await store.insertTemplate(tx, { id, project_id: projectId, name: body.name, notification: body.notification, defaults, localized })
      await recordAudit(tx, { projectId, context: audit, action: 'template.create', target: { type: 'template', id }, details: { name: body.name } })
    })
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken(body.name)
    throw err
  }
  return getTemplate(db, projectId, id)
}

export async function updateTemplate(db: Database, audit: AuditContext, projectId: string, id: string, body: UpdateTemplateBody): Promise<TemplateView> {
  const current = await loadTemplate(db, projectId, id)
  const localized = body.localized === undefined ? undefined : canonicalLocalized(body.localized)
  compileTemplate(body.notification ?? current.notification, body.defaults ?? current.defaults, localized ?? current.localized)
  const fields = Object.keys(body).sort()
  try {
    await db.transaction(async (tx) => {
      if (!(await store.updateTemplate(tx, projectId, id, { ...body, localized }))) throw notFound(id)
      await recordAudit(tx, { projectId, context: audit, action: 'template.update', target: { type: 'template', id }, details: { fields } })
    })
  } catch (err) {
    if (isUniqueViolation(err) && body.name !== undefined) throw nameTaken(body.name)
    throw err
  }
  return getTemplate(db, projectId, id)
}

export async function deleteTemplate(db: Database, audit: AuditContext, projectId: string, id: string): Promise<void> {
  if (!isId('tpl', id)) throw notFound(id)
  await db.transaction(async (tx) => {
    if (!(await store.deleteTemplate(tx, projectId, id))) throw notFound(id)
    await recordAudit(tx, { projectId, context: audit, action: 'template.delete', target: { type: 'template', id } })
  })
}
