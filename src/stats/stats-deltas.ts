// What a fan-out batch and a batch of beacons add to the hourly rollup
// (stats.store.ts addStats): a pass over what the batch recorded, no query.
import type { FailReason } from '../broadcasts/broadcasts.schemas.ts'
import { failedColumn, isCountedReason, type StatsCounter, type StatsDelta } from './stats.store.ts'

/** Failures of pushes never handed to a push service: not sent. */
const NEVER_SENT: ReadonlySet<string> = new Set(['capped', 'skipped'])

/** A fan-out batch's outcomes: delivered, failed by reason, and sent (both, less those never sent). */
export function batchStats(projectId: string, outcomes: { delivered: unknown[]; failed: Array<{ reason: FailReason }> }): StatsDelta {
  const counts: StatsDelta['counts'] = {}
  let neverSent = 0
  for (const f of outcomes.failed) {
    if (isCountedReason(f.reason)) {
      const column = failedColumn(f.reason)
      counts[column] = (counts[column] ?? 0) + 1
    }
    if (NEVER_SENT.has(f.reason)) neverSent++
  }
  counts.sent = outcomes.delivered.length + outcomes.failed.length - neverSent
  counts.delivered = outcomes.delivered.length
  counts.failed = outcomes.failed.length
  return { project_id: projectId, counts }
}

const BEACON_COUNTERS: ReadonlySet<string> = new Set<StatsCounter>(['shown', 'clicked', 'dismissed'])

/**
 * A batch of beacon events, counted per type: every type that has a counter
 * (shown, clicked, dismissed) is counted, whatever the beacon route accepts
 * today, so a new beacon type rolls up as soon as it is recorded.
 */
export function beaconStats(events: Array<{ project_id: string; type: string }>): StatsDelta[] {
  const byProject = new Map<string, StatsDelta>()
  for (const event of events) {
    if (!BEACON_COUNTERS.has(event.type)) continue
    let delta = byProject.get(event.project_id)
    if (!delta) byProject.set(event.project_id, (delta = { project_id: event.project_id, counts: {} }))
    const counter = event.type as StatsCounter
    delta.counts[counter] = (delta.counts[counter] ?? 0) + 1
  }
  return [...byProject.values()]
}
