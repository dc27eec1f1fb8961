// What a project's own API key may read about its project: never a secret
// (no VAPID private key, no key hashes).
import type { Config } from '../platform/config.ts'
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import type { AuthedProject } from './project-auth.ts'
import { resolveDefaultIcon } from './admin.service.ts'
import type { MeResponse, UpdateMeBody } from './me.schemas.ts'
import { updateProject } from './projects.store.ts'
import { projectUsage } from './usage.store.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'
import { EXPIRY_FIELDS, expiryDetails } from './expiry-settings.ts'

export async function describeProject(q: Queryable, project: AuthedProject): Promise<MeResponse> {
  const usage = await projectUsage(q, project.id)
  // Fields picked one by one: a column added to projects later stays private until listed here.
  return {
    project: {
      id: project.id,
      name: project.name,
      domain: project.domain,
      vapid_public: project.vapid_public,
      plan: project.plan,
      default_icon: project.default_icon,
      limits: project.effectiveLimits,
      usage,
      expire_after_failures: project.expire_after_failures,
      expire_after_days_without_delivery: project.expire_after_days_without_delivery,
    },
  }
}

/**
 * PATCH /v1/me: the project's default icon, with the same checks and hosting
 * as the operator's PATCH /admin/v1/projects/:id (a data URL is stored first,
 * so a refused icon changes nothing), and its expiry rules.
 */
export async function updateOwnProject(db: Database, config: Config, audit: AuditContext, project: AuthedProject, body: UpdateMeBody): Promise<MeResponse> {
  const defaultIcon = body.default_icon === undefined || body.default_icon === null ? body.default_icon : await resolveDefaultIcon(db, config, body.default_icon)
  const rules = { expire_after_failures: body.expire_after_failures, expire_after_days_without_delivery: body.expire_after_days_without_delivery }
  const row = await db.transaction(async (tx) => {
    const updated = await updateProject(tx, project.id, { default_icon: defaultIcon, ...rules })
    if (!updated) throw new AppError('project_not_found')
    const fields = (['default_icon', ...EXPIRY_FIELDS] as const).filter((field) => body[field] !== undefined)
    const values = { ...(defaultIcon !== undefined ? { default_icon: defaultIcon } : {}), ...expiryDetails(body) }
    await recordAudit(tx, { projectId: project.id, context: audit, action: 'project.update', target: { type: 'project', id: project.id }, details: { fields, ...values } })
    return updated
  })
  return describeProject(db, { ...project, ...row, effectiveLimits: project.effectiveLimits })
}
