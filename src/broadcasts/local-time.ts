// Local time (issue 24, docs/timing.md): IANA zone names, wall-clock times
// turned into instants with a fixed rule at DST changes, and the instant a
// subscriber's push is due given a send's local-time delivery and the
// project's quiet hours. Pure functions of their arguments (the clock is a
// parameter), so fan-out and its tests share them.
import { IANAZone } from 'luxon'

/** Longest zone name accepted ("America/Argentina/ComodRivadavia" is 32). */
export const TIMEZONE_MAX = 64

/** "HH:MM" or "HH:MM:SS", 00:00 to 23:59:59. */
export const LOCAL_TIME_PATTERN = '^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$'
/** A calendar date, YYYY-MM-DD. */
export const LOCAL_DATE_PATTERN = '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$'

export const PAST_MODES = ['next_day', 'now', 'skip'] as const
export type PastMode = (typeof PAST_MODES)[number]

/** The runtime's zone names by lower case, to give a name its usual spelling ("europe/paris" → "Europe/Paris"). */
let spellings: Map<string, string> | null = null

/**
 * The zone's name as Herald stores it, or null when it is no IANA zone
 * (offsets such as "+02:00" and made-up names included). A name the runtime
 * lists gets its spelling; another valid one (an alias such as Asia/Kolkata,
 * which the runtime lists as Asia/Calcutta) is kept as given, never swapped
 * for a name the customer did not write.
 */
export function canonicalZone(name: string): string | null {
  if (name.length === 0 || name.length > TIMEZONE_MAX || !IANAZone.isValidZone(name)) return null
  spellings ??= new Map(['UTC', ...Intl.supportedValuesOf('timeZone')].map((zone) => [zone.toLowerCase(), zone]))
  return spellings.get(name.toLowerCase()) ?? name
}

/** A wall-clock date and time, seconds of the day from midnight. */
export interface LocalDate {
  year: number
  month: number
  day: number
}

/** Seconds since midnight of "HH:MM[:SS]" (checked by LOCAL_TIME_PATTERN first). */
export function secondsOfDay(time: string): number {
  const [h, m, s] = time.split(':').map(Number)
  return h * 3600 + m * 60 + (s ?? 0)
}

export function parseDate(date: string): LocalDate {
  const [year, month, day] = date.split('-').map(Number)
  return { year, month, day }
}

/** The zone's offset from UTC at an instant, in ms. */
function offsetMs(zone: string, at: number): number {
  return IANAZone.create(zone).offset(at) * 60_000
}

/** The local date and seconds of the day at an instant in a zone. */
export function localAt(zone: string, at: number): { date: LocalDate; seconds: number } {
  const wall = new Date(at + offsetMs(zone, at))
  return {
    date: { year: wall.getUTCFullYear(), month: wall.getUTCMonth() + 1, day: wall.getUTCDate() },
    seconds: wall.getUTCHours() * 3600 + wall.getUTCMinutes() * 60 + wall.getUTCSeconds(),
  }
}

/** The date n days after date (n may be negative). */
export function addDays(date: LocalDate, n: number): LocalDate {
  const d = new Date(Date.UTC(date.year, date.month - 1, date.day + n))
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() }
}

/**
 * The instant a wall-clock date and time happens in a zone. The DST rule:
 * - a time that does not exist (the clocks jump over it, spring forward)
 *   is the first instant after the jump: 02:30 on 2026-03-08 in
 *   America/New_York is 03:00 EDT (07:00 UTC);
 * - a time that happens twice (the clocks go back, fall back) is the
 *   earlier: 01:30 on 2026-11-01 in America/New_York is 01:30 EDT (05:30
 *   UTC), not 01:30 EST.
 */
export function instantOf(zone: string, date: LocalDate, seconds: number): number {
  const naive = Date.UTC(date.year, date.month - 1, date.day) + seconds * 1000
  // The offsets in force a day either side: no zone changes twice within two days.
  const before = offsetMs(zone, naive - 86_400_000)
  const after = offsetMs(zone, naive + 86_400_000)
  const valid = [naive - before, naive - after].filter((at) => offsetMs(zone, at) === naive - at)
  if (valid.length > 0) return Math.min(...valid)
  // In the gap: the jump happens between these two instants; find it to the millisecond.
  let lo = Math.min(naive - before, naive - after)
  let hi = Math.max(naive - before, naive - after)
  const first = offsetMs(zone, lo)
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2)
    if (offsetMs(zone, mid) === first) lo = mid
    else hi = mid
  }
  return hi
}

/** A send's local-time delivery, as stored on the broadcast (broadcasts.timing). */
export interface Timing {
  deliver_at_local?: string
  deliver_on?: string
  past?: PastMode
  ignore_quiet_hours?: boolean
}

/** A project's quiet hours: local times, start included, end excluded; start after end wraps midnight. */
export interface QuietHours {
  start: string
  end: string
}

/** True when the local time of day (seconds) lies in the window. */
export function inQuietHours(quiet: QuietHours, seconds: number): boolean {
  const start = secondsOfDay(quiet.start)
  const end = secondsOfDay(quiet.end)
  return start < end ? seconds >= start && seconds < end : seconds >= start || seconds < end
}

/** When a push due at `at` in `zone` may go: `at`, or the end of the quiet hours it falls in. */
export function afterQuietHours(quiet: QuietHours, zone: string, at: number): number {
  const local = localAt(zone, at)
  if (!inQuietHours(quiet, local.seconds)) return at
  const end = secondsOfDay(quiet.end)
  // A window wrapping midnight ends the next day when `at` is before midnight.
  const endDate = local.seconds >= end ? addDays(local.date, 1) : local.date
  return instantOf(zone, endDate, end)
}

/** When one zone's pushes are due, and why they wait; null when they are skipped (past: "skip"). */
export interface ZoneDue {
  at: number
  reason: 'now' | 'local_time' | 'quiet_hours'
}

/**
 * When a broadcast's pushes to subscribers in `zone` are due, judged at `now`:
 * - deliver_at_local with deliver_on: that date and time in the zone; if it
 *   has passed, by `past`: "next_day" (default) the same time on the first
 *   later day where it lies ahead, "now" at once, "skip" not at all (null);
 * - deliver_at_local alone: the next time the zone's clocks show it (today
 *   if still ahead, else tomorrow);
 * - neither: now.
 * Then, with quiet hours (null when they do not apply to the send), a due
 * time inside them moves to their end.
 */
export function dueIn(zone: string, timing: Timing | null, quiet: QuietHours | null, now: number): ZoneDue | null {
  let at = now
  let reason: ZoneDue['reason'] = 'now'
  if (timing?.deliver_at_local !== undefined) {
    const seconds = secondsOfDay(timing.deliver_at_local)
    if (timing.deliver_on !== undefined) {
      let date = parseDate(timing.deliver_on)
      at = instantOf(zone, date, seconds)
      if (at <= now) {
        const past = timing.past ?? 'next_day'
        if (past === 'skip') return null
        if (past === 'now') at = now
        else {
          // deliver_on lies at most a couple of days back (send.service.ts checks): a few steps at most.
          while (at <= now) {
            date = addDays(date, 1)
            at = instantOf(zone, date, seconds)
          }
        }
      }
    } else {
      const today = localAt(zone, now).date
      at = instantOf(zone, today, seconds)
      if (at <= now) at = instantOf(zone, addDays(today, 1), seconds)
    }
    if (at > now) reason = 'local_time'
  }
  if (quiet) {
    const released = afterQuietHours(quiet, zone, at)
    if (released > at) return { at: released, reason: 'quiet_hours' }
  }
  return { at, reason }
}
