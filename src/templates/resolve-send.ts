// A send's notification as it will go out (issue 24): the fields given, or
// those of the template named by template_id, with the send's variables,
// defaults and languages. A send whose fields hold no variables and which has
// no languages is not personalized: fan-out sends it as before, one payload
// for everyone, and it costs what it did.
import type { Queryable } from '../platform/db/database.ts'
import { AppError, invalidField } from '../platform/errors.ts'
import type { NotificationInput, SendBody } from '../broadcasts/broadcasts.schemas.ts'
import { loadTemplate, fieldsOf } from './templates.service.ts'
import { canonicalLocalized, checkRenders, compileNotification, missingData, needsRendering, type CompiledNotification, type Personalization } from './personalization.ts'

export type ResolvedBody = SendBody & { notification: NotificationInput }

export interface ResolvedSend {
  /** The send with its notification filled in from the template. */
  body: ResolvedBody
  /** Stored on the broadcast; null when it is not personalized. */
  personalization: Personalization | null
  compiled: CompiledNotification | null
}

export async function resolveSend(q: Queryable, projectId: string, body: SendBody): Promise<ResolvedSend> {
  let notification = body.notification
  let defaults = body.defaults ?? {}
  let localized = canonicalLocalized(body.localized)
  if (body.template_id !== undefined) {
    if (notification !== undefined) throw invalidField('notification', 'leave it out when template_id is given: the template holds the notification')
    const template = await loadTemplate(q, projectId, body.template_id)
    notification = template.notification
    // The send's own defaults and languages override the template's, key by key.
    defaults = { ...template.defaults, ...defaults }
    localized = { ...template.localized, ...localized }
  }
  if (notification === undefined) throw invalidField('notification', 'is required unless template_id is given')
  const resolved: ResolvedBody = { ...body, notification }
  const fields = fieldsOf(notification)
  if (!needsRendering(fields, localized)) return { body: resolved, personalization: null, compiled: null }
  const personalization: Personalization = {
    template_id: body.template_id ?? null,
    data: body.data ?? {},
    defaults,
    localized,
    missing: body.missing ?? 'default',
    on_too_long: body.on_too_long ?? 'truncate',
  }
  const compiled = compileNotification(fields, personalization)
  if (personalization.missing === 'fail') {
    const missing = missingData(compiled)
    if (missing.length > 0) throw new AppError('missing_variable', `${missing.join(', ')}: used by the notification, not given in data and without a default; missing is "fail".`, { variables: missing })
  }
  checkRenders(compiled)
  return { body: resolved, personalization, compiled }
}
