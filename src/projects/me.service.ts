// What a project's own API key may read about its project: never a secret
// (no VAPID private key, no key hashes).
import type { Config } from '../platform/config.ts'
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError, invalidField } from '../platform/errors.ts'
import type { AuthedProject } from './project-auth.ts'
import { resolveDefaultIcon } from './admin.service.ts'
import type { MeResponse, UpdateMeBody } from './me.schemas.ts'
import { updateProject, type ProjectPatch } from './projects.store.ts'
import type { FrequencyCapRule } from '../frequency-caps/caps.schemas.ts'
import { projectUsage } from './usage.store.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'

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
      frequency_caps: project.frequency_caps ?? [],
      usage,
    },
  }
}

/** Two rules on one window would be one rule with the smaller max: refused, naming the second. */
function checkFrequencyCaps(caps: FrequencyCapRule[] | null): void {
  const seen = new Set<string>()
  caps?.forEach((rule, i) => {
    if (seen.has(rule.per)) throw invalidField(`frequency_caps.${i}.per`, `another rule already has the window ${rule.per}; give each window once`)
    seen.add(rule.per)
  })
}

/**
 * PATCH /v1/me: the project's default icon, with the same checks and hosting
 * as the operator's PATCH /admin/v1/projects/:id (a data URL is stored first,
 * so a refused icon changes nothing), and its frequency caps. Each field left
 * out is left as it is; every check runs before anything is written.
 */
export async function updateOwnProject(db: Database, config: Config, audit: AuditContext, project: AuthedProject, body: UpdateMeBody): Promise<MeResponse> {
  if (body.frequency_caps !== undefined) checkFrequencyCaps(body.frequency_caps)
  const patch: ProjectPatch = {}
  if (body.default_icon !== undefined) patch.default_icon = body.default_icon === null ? null : await resolveDefaultIcon(db, config, body.default_icon)
  if (body.frequency_caps !== undefined) patch.frequency_caps = body.frequency_caps
  const row = await db.transaction(async (tx) => {
    const updated = await updateProject(tx, project.id, patch)
    if (!updated) throw new AppError('project_not_found')
    await recordAudit(tx, { projectId: project.id, context: audit, action: 'project.update', target: { type: 'project', id: project.id }, details: { fields: Object.keys(patch), ...patch } })
    return updated
  })
  return describeProject(db, { ...project, default_icon: row.default_icon, frequency_caps: row.frequency_caps })
}
