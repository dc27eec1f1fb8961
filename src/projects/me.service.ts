// What a project's own API key may read about its project: never a secret
// (no VAPID private key, no key hashes).
import type { Config } from '../platform/config.ts'
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError, invalidField } from '../platform/errors.ts'
import type { AuthedProject } from './project-auth.ts'
import { resolveDefaultIcon } from './admin.service.ts'
import type { MeResponse, UpdateMeBody } from './me.schemas.ts'
import { updateProject } from './projects.store.ts'
import { findTimingSettings, updateTimingSettings, type TimingSettings } from './timing-settings.store.ts'
import { canonicalZone, secondsOfDay } from '../broadcasts/local-time.ts'
import type { FrequencyCapRule } from '../frequency-caps/caps.schemas.ts'
import { projectUsage } from './usage.store.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'
import { EXPIRY_FIELDS, expiryDetails } from './expiry-settings.ts'

export async function describeProject(q: Queryable, project: AuthedProject): Promise<MeResponse> {
  const usage = await projectUsage(q, project.id)
  const timing = await findTimingSettings(q, project.id)
  // Fields picked one by one: a column added to projects later stays private until listed here.
  return {
    project: {
      id: project.id,
      name: project.name,
      domain: project.domain,
      vapid_public: project.vapid_public,
      plan: project.plan,
      default_icon: project.default_icon,
      default_timezone: timing?.default_timezone ?? 'UTC',
      quiet_hours: timing?.quiet_hours ?? null,
      limits: project.effectiveLimits,
      frequency_caps: project.frequency_caps ?? [],
      usage,
      expire_after_failures: project.expire_after_failures,
      expire_after_days_without_delivery: project.expire_after_days_without_delivery,
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
 * so a refused icon changes nothing), its expiry rules, its default time zone,
 * its quiet hours (docs/timing.md) and its frequency caps. Every field is checked before
 * anything is written.
 */
export async function updateOwnProject(db: Database, config: Config, audit: AuditContext, project: AuthedProject, body: UpdateMeBody): Promise<MeResponse> {
  const timing = checkTimingSettings(body)
  if (body.frequency_caps !== undefined) checkFrequencyCaps(body.frequency_caps)
  const defaultIcon = body.default_icon === undefined || body.default_icon === null ? body.default_icon : await resolveDefaultIcon(db, config, body.default_icon)
  const rules = { expire_after_failures: body.expire_after_failures, expire_after_days_without_delivery: body.expire_after_days_without_delivery }
  const row = await db.transaction(async (tx) => {
    const updated = await updateProject(tx, project.id, { default_icon: defaultIcon, ...rules, frequency_caps: body.frequency_caps })
    if (!updated) throw new AppError('project_not_found')
    if (timing.default_timezone !== undefined || timing.quiet_hours !== undefined) await updateTimingSettings(tx, project.id, timing)
    const fields = (['default_icon', ...EXPIRY_FIELDS, 'default_timezone', 'quiet_hours', 'frequency_caps'] as const).filter((field) => body[field] !== undefined)
    const details = {
      fields,
      ...(defaultIcon !== undefined ? { default_icon: defaultIcon } : {}),
      ...expiryDetails(body),
      ...(timing.default_timezone !== undefined ? { default_timezone: timing.default_timezone } : {}),
      ...(timing.quiet_hours !== undefined ? { quiet_hours: timing.quiet_hours } : {}),
      ...(body.frequency_caps !== undefined ? { frequency_caps: body.frequency_caps } : {}),
    }
    await recordAudit(tx, { projectId: project.id, context: audit, action: 'project.update', target: { type: 'project', id: project.id }, details })
    return updated
  })
  return describeProject(db, { ...project, ...row, effectiveLimits: project.effectiveLimits })
}

/** default_timezone an IANA zone (canonical), quiet hours a window of some length: 400 naming the field otherwise. */
function checkTimingSettings(body: UpdateMeBody): Partial<TimingSettings> {
  const settings: Partial<TimingSettings> = {}
  if (body.default_timezone !== undefined) {
    const zone = canonicalZone(body.default_timezone)
    if (!zone) throw invalidField('default_timezone', `"${body.default_timezone}" is not an IANA time zone name (such as Europe/Paris or America/New_York)`)
    settings.default_timezone = zone
  }
  if (body.quiet_hours !== undefined) {
    if (body.quiet_hours !== null && secondsOfDay(body.quiet_hours.start) === secondsOfDay(body.quiet_hours.end)) {
      throw invalidField('quiet_hours.end', 'must differ from start (an empty window and a whole day look the same)')
    }
    settings.quiet_hours = body.quiet_hours
  }
  return settings
}
