// The beacons' part of an A/B test (docs/experiments.md): clicks, dismissals
// and shown beacons that name a variant count on it. The beacon writer
// (events/events.service.ts) passes only the events it recorded, whose
// broadcast it checked is the beacon's project's; addVariantCounts changes
// only a variant the broadcast has. So a forged beacon moves at most the
// counts of a variant of a broadcast of the project it names, as a real one
// would.
import type { VariantDelta } from './experiments.store.ts'

interface VariantEvent {
  id: string
  broadcast_id: string
  type: string
  variant: string | null
}

/** The engagement of the recorded events, by broadcast and variant. */
export function engagementByVariant(events: VariantEvent[], recorded: Set<string>): VariantDelta[] {
  const deltas: VariantDelta[] = []
  for (const e of events) {
    if (!e.variant || !recorded.has(e.id)) continue
    // "shown" beacons come with the shown helper's change (issue 25); counted here once the events take them.
    const field = e.type === 'clicked' ? 'clicked' : e.type === 'dismissed' ? 'dismissed' : e.type === 'shown' ? 'shown' : null
    if (field) deltas.push({ broadcast_id: e.broadcast_id, key: e.variant, [field]: 1 })
  }
  return deltas
}
