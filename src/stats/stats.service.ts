// GET /v1/stats (issue 25, docs/stats.md): the buckets of the project's time
// zone (hours, or days that follow its DST changes), the sums of the hourly
// rollup in each, and the active subscribers at the end of each: the active
// count now, less the net changes counted after the bucket.
import type { Database } from '../platform/db/database.ts'
import { AppError } from '../platform/errors.ts'
import { addDays, canonicalZone, instantOf, localAt } from '../broadcasts/local-time.ts'
import { findTimingSettings } from '../projects/timing-settings.store.ts'
import { COUNTED_FAIL_REASONS, failedColumn, readStats, type StatsBucketRow } from './stats.store.ts'
import { MAX_STATS_BUCKETS, type StatsBucket, type StatsInterval, type StatsQuery, type StatsResponse } from './stats.schemas.ts'

const HOUR = 3_600_000
const DAY = 86_400_000

const rangeError = (message: string) => new AppError('invalid_stats_range', message, { max_buckets: MAX_STATS_BUCKETS })

/**
 * The buckets' starts and ends covering [from, to): local hours (instants an
 * hour apart from the local hour that holds from: a whole hour of the zone
 * even where its offset is not whole hours) or local days (midnight to
 * midnight, 23 to 25 hours).
 */
export function statsBuckets(zone: string, interval: StatsInterval, from: number, to: number): { starts: number[]; ends: number[] } {
  if (to <= from) throw rangeError('to must be after from.')
  // Checked before any bucket is made: a range of centuries must not build a million of them first.
  if ((to - from) / (interval === 'hour' ? HOUR : DAY) > MAX_STATS_BUCKETS) {
    throw rangeError(`At most ${MAX_STATS_BUCKETS} buckets: ${interval === 'hour' ? `${Math.floor(MAX_STATS_BUCKETS / 24)} days of hours` : `${MAX_STATS_BUCKETS} days`}. Ask for a shorter range or a longer interval.`)
  }
  const starts: number[] = []
  if (interval === 'hour') {
    const local = localAt(zone, from)
    for (let at = from - (local.seconds % 3600) * 1000 - (from % 1000); at < to; at += HOUR) starts.push(at)
  } else {
    let date = localAt(zone, from).date
    for (let at = instantOf(zone, date, 0); at < to; date = addDays(date, 1), at = instantOf(zone, date, 0)) starts.push(at)
  }
  if (starts.length > MAX_STATS_BUCKETS) throw rangeError(`At most ${MAX_STATS_BUCKETS} buckets; this range has ${starts.length}.`)
  const last = starts[starts.length - 1]
  const ends = [...starts.slice(1), interval === 'hour' ? last + HOUR : instantOf(zone, addDays(localAt(zone, last).date, 1), 0)]
  return { starts, ends }
}

function numbers(row: StatsBucketRow) {
  const failedByReason: Record<string, number> = Object.fromEntries(COUNTED_FAIL_REASONS.map((r) => [r, row[failedColumn(r)]]))
  const gained = { subscribe: row.gained_subscribe, import: row.gained_import, migrated: row.gained_migrated }
  const lost = { unsubscribed: row.lost_unsubscribed, expired: row.lost_expired, erased: row.lost_erased }
  return {
    sent: row.sent,
    delivered: row.delivered,
    shown: row.shown,
    clicked: row.clicked,
    dismissed: row.dismissed,
    failed: row.failed,
    failed_by_reason: failedByReason,
    gained: gained.subscribe + gained.import + gained.migrated,
    gained_by_source: gained,
    lost: lost.unsubscribed + lost.expired + lost.erased,
    lost_by_reason: lost,
  }
}

type Numbers = ReturnType<typeof numbers>

function addUp(all: Numbers[]): Numbers {
  const sum = (pick: (n: Numbers) => number) => all.reduce((s, n) => s + pick(n), 0)
  const failedByReason: Record<string, number> = {}
  for (const n of all) for (const [reason, v] of Object.entries(n.failed_by_reason)) failedByReason[reason] = (failedByReason[reason] ?? 0) + v
  return {
    sent: sum((n) => n.sent),
    delivered: sum((n) => n.delivered),
    shown: sum((n) => n.shown),
    clicked: sum((n) => n.clicked),
    dismissed: sum((n) => n.dismissed),
    failed: sum((n) => n.failed),
    failed_by_reason: failedByReason,
    gained: sum((n) => n.gained),
    gained_by_source: { subscribe: sum((n) => n.gained_by_source.subscribe), import: sum((n) => n.gained_by_source.import), migrated: sum((n) => n.gained_by_source.migrated) },
    lost: sum((n) => n.lost),
    lost_by_reason: { unsubscribed: sum((n) => n.lost_by_reason.unsubscribed), expired: sum((n) => n.lost_by_reason.expired), erased: sum((n) => n.lost_by_reason.erased) },
  }
}

export async function getStats(db: Database, projectId: string, query: StatsQuery, now = Date.now()): Promise<StatsResponse> {
  const interval = query.interval ?? 'day'
  const to = query.to ?? now
  // Default: the bucket holding the millisecond before to and the 23 hours or 29 days before it.
  const from = query.from ?? Math.max(0, to - 1 - (interval === 'hour' ? 23 * HOUR : 29 * DAY))
  const settings = await findTimingSettings(db, projectId)
  if (!settings) throw new AppError('project_not_found')
  const zone = canonicalZone(settings.default_timezone) ?? 'UTC'
  const { starts, ends } = statsBuckets(zone, interval, from, to)
  const read = await readStats(db, projectId, interval, zone, starts.map((s) => new Date(s)), ends.map((e) => new Date(e)))
  if (!read) throw new AppError('project_not_found')
  const since = read.stats_since.getTime()
  const bucketNumbers = read.buckets.map(numbers)
  // Walking back from the last bucket: the active count at its end is today's
  // less what changed after it.
  const buckets: StatsBucket[] = new Array(starts.length)
  let active = read.active_now - read.net_after
  for (let i = starts.length - 1; i >= 0; i--) {
    const n = bucketNumbers[i]
    buckets[i] = { start: starts[i], end: ends[i], ...n, active: ends[i] < since || starts[i] > now ? null : Math.max(0, active) }
    active -= n.gained - n.lost
  }
  return { interval, time_zone: zone, from: starts[0], to: ends[ends.length - 1], stats_since: since, buckets, totals: addUp(bucketNumbers) }
}
