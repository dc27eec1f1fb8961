// The two questions a beacon asks before it is written (does the project
// exist, and is the broadcast that project's), answered from small bounded
// caches: the beacon route is open to anyone, and a flood of made-up ids must
// not cost the database a query each (lookup-cache.ts). The write itself
// checks the broadcast again in SQL, so a stale answer here never records a
// wrong event; it can only drop a beacon for a project created within
// PROJECT_TTL_MS of a look-up that did not find it.
import type { Database } from '../platform/db/database.ts'
import { effectiveLimits, type Limits } from '../projects/plans.ts'
import { findBeaconProjects, findBroadcastsOfProjects } from './events.store.ts'
import { LookupCache } from './lookup-cache.ts'

/** A project as the beacon route needs it: its id and its rate limit. */
export interface BeaconProject {
  id: string
  effectiveLimits: Limits
}

/** Projects remembered at most: a few hundred bytes each. "Not found" answers are kept apart, as many again at most. */
export const PROJECT_CACHE_ENTRIES = 10_000
/** A change of plan or limits reaches the beacon route within this long; so does a project created after a miss. */
export const PROJECT_TTL_MS = 10_000
/** (project, broadcast) "found" answers remembered at most, and as many "not found" apart: about 200 bytes each. */
export const BROADCAST_CACHE_ENTRIES = 50_000
/** A broadcast never changes project, so a "yes" can be kept longer than a "no". */
export const BROADCAST_FOUND_TTL_MS = 60_000
export const BROADCAST_MISSING_TTL_MS = 10_000
/** Distinct ids never found before waiting for one look-up query at most; past it, new ones are dropped unasked. */
export const MAX_PENDING_LOOKUPS = 1_000

export class BeaconLookups {
  readonly projects: LookupCache<BeaconProject>
  /** (project, broadcast) → the ids of the broadcast's action buttons. */
  readonly broadcasts: LookupCache<string[]>

  constructor(db: Database) {
    this.projects = new LookupCache({
      async load(ids) {
        const rows = await findBeaconProjects(db, ids)
        return new Map(rows.map((row) => [row.id, { id: row.id, effectiveLimits: effectiveLimits(row.plan, row.limits) }]))
      },
      maxEntries: PROJECT_CACHE_ENTRIES,
      foundTtlMs: PROJECT_TTL_MS,
      missingTtlMs: PROJECT_TTL_MS,
      maxPending: MAX_PENDING_LOOKUPS,
    })
    this.broadcasts = new LookupCache({
      async load(keys) {
        const pairs = keys.map((key) => {
          const [project_id, broadcast_id] = key.split(' ')
          return { project_id, broadcast_id }
        })
        const rows = await findBroadcastsOfProjects(db, pairs)
        return new Map(rows.map((row) => [broadcastKey(row.project_id, row.broadcast_id), row.action_ids]))
      },
      maxEntries: BROADCAST_CACHE_ENTRIES,
      foundTtlMs: BROADCAST_FOUND_TTL_MS,
      missingTtlMs: BROADCAST_MISSING_TTL_MS,
      maxPending: MAX_PENDING_LOOKUPS,
    })
  }

  /** The project, or null when there is none with that id. */
  project(id: string): Promise<BeaconProject | null> {
    return this.projects.get(id)
  }

  /** True when the broadcast exists and is the project's. */
  async isProjectsBroadcast(projectId: string, broadcastId: string): Promise<boolean> {
    return (await this.broadcasts.get(broadcastKey(projectId, broadcastId))) !== null
  }

  /** The ids of the broadcast's action buttons, or null when it is not the project's (a broadcast never changes them). */
  broadcastActions(projectId: string, broadcastId: string): Promise<string[] | null> {
    return this.broadcasts.get(broadcastKey(projectId, broadcastId))
  }
}

/** Ids never contain a space (they are checked well formed before any look-up). */
function broadcastKey(projectId: string, broadcastId: string): string {
  return `${projectId} ${broadcastId}`
}
