// A project's subscription expiry rules (issue 23, migration 0025,
// docs/subscription-health.md): the same two fields in PATCH /v1/me, the
// operator's PATCH /admin/v1/projects/:id and both answers. Off (null) by default.
import { Type } from 'typebox'

/** The bounds of migration 0025's checks. */
export const EXPIRE_AFTER_FAILURES_MAX = 1000
export const EXPIRE_AFTER_DAYS_MAX = 3650

const failuresDescription =
  'Expire a subscriber once this many pushes to it in a row have failed (1-1000), counted at each failure; null (the default) turns the rule off. A 404 or 410 (gone) expires it at once whatever this is.'
const daysDescription =
  'Expire a subscriber whose pushes fail and that has accepted none for this many days (1-3650, counted from its last accepted push, or from when it subscribed); checked every hour. null (the default) turns the rule off. Never expires a subscriber that is simply not sent anything.'

const failures = Type.Integer({ minimum: 1, maximum: EXPIRE_AFTER_FAILURES_MAX })
const days = Type.Integer({ minimum: 1, maximum: EXPIRE_AFTER_DAYS_MAX })

/** The rules as a project shows them. */
export const ExpiryRules = {
  expire_after_failures: Type.Union([failures, Type.Null()], { description: failuresDescription }),
  expire_after_days_without_delivery: Type.Union([days, Type.Null()], { description: daysDescription }),
}

/** The rules as a PATCH changes them: a number sets one, null turns it off, absence keeps it. */
export const ExpiryRulesPatch = {
  expire_after_failures: Type.Optional(ExpiryRules.expire_after_failures),
  expire_after_days_without_delivery: Type.Optional(ExpiryRules.expire_after_days_without_delivery),
}

export const EXPIRY_FIELDS = ['expire_after_failures', 'expire_after_days_without_delivery'] as const

/** The rules a PATCH set, for its audit entry's details (the values, which are not personal). */
export function expiryDetails(body: Partial<Record<(typeof EXPIRY_FIELDS)[number], number | null>>): Record<string, number | null> {
  const details: Record<string, number | null> = {}
  for (const field of EXPIRY_FIELDS) if (body[field] !== undefined) details[field] = body[field]
  return details
}
