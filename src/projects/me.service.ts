// What a project's own API key may read about its project: never a secret
// (no VAPID private key, no key hashes).
import type { Queryable } from '../platform/db/database.ts'
import type { AuthedProject } from '../platform/http/auth.ts'
import type { MeResponse } from './me.schemas.ts'
import { projectUsage } from './usage.store.ts'

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
    },
  }
}
