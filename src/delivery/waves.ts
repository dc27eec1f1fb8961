// Local-time delivery and quiet hours at fan-out (issue 24, docs/timing.md).
// When a broadcast starts, its audience is counted by zone (the subscriber's,
// or the project's default); each zone's due instant is computed once
// (broadcasts/local-time.ts dueIn: a few hundred zones at most, whatever the
// audience), and zones due at the same instant form a wave. Each wave is a
// chain of push_batch jobs like an ordinary fan-out, narrowed to its zones,
// whose first job is due at the wave's instant: durable, so a crash or a
// restart loses no wave, and a stop ends them all (each job reads the status).
// A broadcast whose whole audience is due now, and that skips nobody, is sent
// in one ordinary chain, as before.
import type { Queryable } from '../platform/db/database.ts'
import { audienceByZone, type AudienceTarget, type ZoneFilter } from '../broadcasts/audience.store.ts'
import { canonicalZone, dueIn, type QuietHours, type Timing } from '../broadcasts/local-time.ts'
import type { NewWave } from '../broadcasts/waves.store.ts'


export interface WavePlan {
  waves: Array<NewWave & { filter: ZoneFilter }>
  /** Subscribers not pushed at all (past: "skip"). */
  skipped: number
  /** Subscribers the waves will push. */
  audience: number
}

/** What planning needs of the broadcast and its project. */
export interface WaveInputs {
  project_id: string
  target: AudienceTarget
  urgency: string
  timing: Timing | null
  default_timezone: string
  quiet_hours: QuietHours | null
}

/** Whether the project's quiet hours hold this broadcast: not a high-urgency send, nor one that says to ignore them. */
export function quietHoursFor(inputs: Pick<WaveInputs, 'urgency' | 'timing' | 'quiet_hours'>): QuietHours | null {
  if (!inputs.quiet_hours || inputs.urgency === 'high' || inputs.timing?.ignore_quiet_hours) return null
  return inputs.quiet_hours
}

/**
 * The waves of a broadcast judged at `now`, or null when it goes out in one
 * ordinary chain (no local time, no quiet hours that apply, or every zone
 * due now and none skipped).
 */
export async function planWaves(q: Queryable, inputs: WaveInputs, now: number): Promise<WavePlan | null> {
  const quiet = quietHoursFor(inputs)
  if (!inputs.timing?.deliver_at_local && !quiet) return null
  const defaultZone = canonicalZone(inputs.default_timezone) ?? 'UTC'
  const zones = await audienceByZone(q, inputs.project_id, inputs.target, defaultZone)
  const byDue = new Map<string, NewWave>()
  let skipped = 0
  for (const { zone, count } of zones) {
    // A zone this runtime no longer knows (stored by an older tz database) is timed as the default.
    const due = dueIn(canonicalZone(zone) ? zone : defaultZone, inputs.timing, quiet, now)
    if (!due) {
      skipped += count
      continue
    }
    const at = due.reason === 'now' ? now : due.at
    const key = `${at}:${due.reason}`
    const wave = byDue.get(key) ?? { wave: 0, at, reason: due.reason, zones: [], planned: 0 }
    wave.zones.push(zone)
    wave.planned += count
    byDue.set(key, wave)
  }
  const waves = [...byDue.values()].sort((a, b) => a.at - b.at)
  if (skipped === 0 && waves.length === 1 && waves[0].reason === 'now') return null
  return {
    waves: waves.map((w, i) => ({ ...w, wave: i + 1, filter: { zones: w.zones, default_zone: defaultZone } })),
    skipped,
    audience: waves.reduce((sum, w) => sum + w.planned, 0),
  }
}
