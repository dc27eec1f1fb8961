// Plans and their numbers (api.md §8, decisions.md §2). A project's effective
// limits are its plan's numbers with its own `limits` overrides on top.

export const PLAN_NAMES = ['free', 'hobby', 'plus', 'pro', 'max'] as const
export type PlanName = (typeof PLAN_NAMES)[number]

export interface Limits {
  groups: number
  subscribers: number
  monthly_pushes: number
  requests_per_minute: number
}

export type LimitOverrides = Partial<Limits>

export const PLANS: Record<PlanName, Limits> = {
  free: { groups: 3, subscribers: 10_000, monthly_pushes: 100_000, requests_per_minute: 600 },
  hobby: { groups: 9, subscribers: 50_000, monthly_pushes: 1_000_000, requests_per_minute: 1_200 },
  plus: { groups: 27, subscribers: 250_000, monthly_pushes: 5_000_000, requests_per_minute: 3_000 },
  pro: { groups: 100, subscribers: 1_000_000, monthly_pushes: 25_000_000, requests_per_minute: 6_000 },
  max: { groups: 1000, subscribers: 10_000_000, monthly_pushes: 250_000_000, requests_per_minute: 12_000 },
}

export function effectiveLimits(plan: PlanName, overrides: LimitOverrides): Limits {
  const base = PLANS[plan]
  return {
    groups: overrides.groups ?? base.groups,
    subscribers: overrides.subscribers ?? base.subscribers,
    monthly_pushes: overrides.monthly_pushes ?? base.monthly_pushes,
    requests_per_minute: overrides.requests_per_minute ?? base.requests_per_minute,
  }
}

/** True when plan is at least `minimum` in the order Free < Hobby < Plus < Pro < Max. */
export function planAtLeast(plan: PlanName, minimum: PlanName): boolean {
  return PLAN_NAMES.indexOf(plan) >= PLAN_NAMES.indexOf(minimum)
}

/** The plan after `plan`, or null on the highest one. */
export function nextPlan(plan: PlanName): PlanName | null {
  return PLAN_NAMES[PLAN_NAMES.indexOf(plan) + 1] ?? null
}

/**
 * The sentence a plan-gate error ends with. Herald is self-hosted: there is no
 * upgrade page, and the project's owner (who holds only an API key) cannot
 * change the plan; the operator of the install can, with the CLI
 * (`herald projects update`, src/projects/cli.ts) or the operator API.
 */
export function howToLift(projectId: string, change: { plan: PlanName } | { limit: keyof Limits; plan: PlanName | null }): string {
  if (!('limit' in change)) {
    return `The operator of this Herald can change the project's plan: herald projects update ${projectId} --plan ${change.plan} (or PATCH /admin/v1/projects/${projectId} with {"plan":"${change.plan}"}).`
  }
  const orPlan = change.plan ? ` or --plan ${change.plan}` : ''
  return `The operator of this Herald can raise it: herald projects update ${projectId} --limit ${change.limit}=N${orPlan} (or PATCH /admin/v1/projects/${projectId}).`
}
