// The local-time rules of docs/timing.md as pure functions (issue 24): wall
// clock to instant across DST changes (America/New_York on 2026-03-08 and
// 2026-11-01, Europe/Paris on 2026-03-29 and 2026-10-25), quiet hours that
// wrap midnight, and each `past` mode. The clock is an argument: no waiting.
import { describe, expect, it } from 'vitest'
import { afterQuietHours, canonicalZone, dueIn, inQuietHours, instantOf, secondsOfDay } from './local-time.ts'

const at = (iso: string) => Date.parse(iso)
const hm = (time: string) => secondsOfDay(time)

describe('IANA zone names', () => {
  it('takes IANA names (canonical case) and refuses offsets, abbreviations-looking junk and made-up names', () => {
    expect(canonicalZone('Europe/Paris')).toBe('Europe/Paris')
    expect(canonicalZone('europe/paris')).toBe('Europe/Paris')
    expect(canonicalZone('UTC')).toBe('UTC')
    expect(canonicalZone('utc')).toBe('UTC')
    // An alias stays as written (the runtime lists Asia/Calcutta).
    expect(canonicalZone('Asia/Kolkata')).toBe('Asia/Kolkata')
    expect(canonicalZone('+02:00')).toBeNull()
    expect(canonicalZone('Mars/Olympus_Mons')).toBeNull()
    expect(canonicalZone('')).toBeNull()
    expect(canonicalZone('A'.repeat(65))).toBeNull()
  })
})

describe('wall clock to instant (the DST rule)', () => {
  it('a normal day: the offset of that day', () => {
    expect(instantOf('America/New_York', { year: 2026, month: 1, day: 15 }, hm('09:00'))).toBe(at('2026-01-15T14:00:00Z'))
    expect(instantOf('America/New_York', { year: 2026, month: 7, day: 15 }, hm('09:00'))).toBe(at('2026-07-15T13:00:00Z'))
    expect(instantOf('Asia/Kolkata', { year: 2026, month: 7, day: 15 }, hm('09:00'))).toBe(at('2026-07-15T03:30:00Z'))
  })

  it('a time the clocks skip (spring forward) is the first instant after the jump', () => {
    // New York, 2026-03-08: 02:00 EST becomes 03:00 EDT at 07:00 UTC.
    expect(instantOf('America/New_York', { year: 2026, month: 3, day: 8 }, hm('02:30'))).toBe(at('2026-03-08T07:00:00Z'))
    expect(instantOf('America/New_York', { year: 2026, month: 3, day: 8 }, hm('03:00'))).toBe(at('2026-03-08T07:00:00Z'))
    expect(instantOf('America/New_York', { year: 2026, month: 3, day: 8 }, hm('01:59'))).toBe(at('2026-03-08T06:59:00Z'))
    // Paris, 2026-03-29: 02:00 CET becomes 03:00 CEST at 01:00 UTC.
    expect(instantOf('Europe/Paris', { year: 2026, month: 3, day: 29 }, hm('02:30'))).toBe(at('2026-03-29T01:00:00Z'))
  })

  it('a time that happens twice (fall back) is the earlier', () => {
    // New York, 2026-11-01: 02:00 EDT becomes 01:00 EST at 06:00 UTC; 01:30 happens at 05:30 and 06:30 UTC.
    expect(instantOf('America/New_York', { year: 2026, month: 11, day: 1 }, hm('01:30'))).toBe(at('2026-11-01T05:30:00Z'))
    expect(instantOf('America/New_York', { year: 2026, month: 11, day: 1 }, hm('09:00'))).toBe(at('2026-11-01T14:00:00Z'))
    // Paris, 2026-10-25: 02:30 happens at 00:30 and 01:30 UTC.
    expect(instantOf('Europe/Paris', { year: 2026, month: 10, day: 25 }, hm('02:30'))).toBe(at('2026-10-25T00:30:00Z'))
  })
})

describe('local-time delivery (dueIn)', () => {
  const nineOnThe8th = { deliver_at_local: '09:00', deliver_on: '2026-03-08' }

  it('with a date: 09:00 on that date in each zone, DST of that very day included', () => {
    const now = at('2026-03-07T12:00:00Z')
    // New York springs forward that morning: 09:00 is EDT (UTC-4).
    expect(dueIn('America/New_York', nineOnThe8th, null, now)).toEqual({ at: at('2026-03-08T13:00:00Z'), reason: 'local_time' })
    expect(dueIn('Europe/Paris', nineOnThe8th, null, now)).toEqual({ at: at('2026-03-08T08:00:00Z'), reason: 'local_time' })
  })

  it('past modes, for a zone where the time has passed and one where it has not', () => {
    // 10:00 UTC on the 8th: 09:00 has passed in Paris (08:00 UTC), not in New York (13:00 UTC).
    const now = at('2026-03-08T10:00:00Z')
    expect(dueIn('Europe/Paris', { ...nineOnThe8th, past: 'next_day' }, null, now)).toEqual({ at: at('2026-03-09T08:00:00Z'), reason: 'local_time' })
    expect(dueIn('Europe/Paris', nineOnThe8th, null, now)).toEqual({ at: at('2026-03-09T08:00:00Z'), reason: 'local_time' })
    expect(dueIn('Europe/Paris', { ...nineOnThe8th, past: 'now' }, null, now)).toEqual({ at: now, reason: 'now' })
    expect(dueIn('Europe/Paris', { ...nineOnThe8th, past: 'skip' }, null, now)).toBeNull()
    for (const past of ['next_day', 'now', 'skip'] as const) {
      expect(dueIn('America/New_York', { ...nineOnThe8th, past }, null, now)).toEqual({ at: at('2026-03-08T13:00:00Z'), reason: 'local_time' })
    }
  })

  it('without a date: the next time the clocks show it, today or tomorrow', () => {
    const now = at('2026-06-01T10:00:00Z')
    expect(dueIn('America/New_York', { deliver_at_local: '09:00' }, null, now)).toEqual({ at: at('2026-06-01T13:00:00Z'), reason: 'local_time' })
    expect(dueIn('Europe/Paris', { deliver_at_local: '09:00' }, null, now)).toEqual({ at: at('2026-06-02T07:00:00Z'), reason: 'local_time' })
    // Across a fall back: from the evening of 2026-10-31 in New York, 09:00 comes on 2026-11-01 in EST.
    expect(dueIn('America/New_York', { deliver_at_local: '09:00' }, null, at('2026-11-01T01:00:00Z'))).toEqual({ at: at('2026-11-01T14:00:00Z'), reason: 'local_time' })
  })

  it('no local time and no quiet hours: now', () => {
    const now = at('2026-06-01T10:00:00Z')
    expect(dueIn('Europe/Paris', null, null, now)).toEqual({ at: now, reason: 'now' })
  })
})

describe('quiet hours', () => {
  const night = { start: '22:00', end: '08:00' }
  const lunch = { start: '12:00', end: '14:00' }

  it('a window that wraps midnight holds both sides of midnight, and not its end', () => {
    expect(inQuietHours(night, hm('23:30'))).toBe(true)
    expect(inQuietHours(night, hm('00:00'))).toBe(true)
    expect(inQuietHours(night, hm('07:59:59'))).toBe(true)
    expect(inQuietHours(night, hm('08:00'))).toBe(false)
    expect(inQuietHours(night, hm('21:59'))).toBe(false)
    expect(inQuietHours(night, hm('22:00'))).toBe(true)
    expect(inQuietHours(lunch, hm('13:00'))).toBe(true)
    expect(inQuietHours(lunch, hm('23:00'))).toBe(false)
  })

  it('a push held before midnight goes at the end on the next day, one held after midnight the same day', () => {
    // 23:30 in Paris (CEST) on 2026-06-01 → 08:00 on 2026-06-02.
    expect(afterQuietHours(night, 'Europe/Paris', at('2026-06-01T21:30:00Z'))).toBe(at('2026-06-02T06:00:00Z'))
    // 05:30 in Paris → 08:00 the same day.
    expect(afterQuietHours(night, 'Europe/Paris', at('2026-06-01T03:30:00Z'))).toBe(at('2026-06-01T06:00:00Z'))
    // Outside: unchanged.
    expect(afterQuietHours(night, 'Europe/Paris', at('2026-06-01T10:00:00Z'))).toBe(at('2026-06-01T10:00:00Z'))
    // A window that does not wrap ends the same day.
    expect(afterQuietHours(lunch, 'Europe/Paris', at('2026-06-01T10:30:00Z'))).toBe(at('2026-06-01T12:00:00Z'))
  })

  it('the end of a night that spans a DST change is the end by the new clocks', () => {
    // 23:00 EST on 2026-03-07 in New York; the night ends 08:00 EDT on the 8th = 12:00 UTC, not 13:00.
    expect(afterQuietHours(night, 'America/New_York', at('2026-03-08T04:00:00Z'))).toBe(at('2026-03-08T12:00:00Z'))
    // And across the fall back: 08:00 EST on 2026-11-01 = 13:00 UTC.
    expect(afterQuietHours(night, 'America/New_York', at('2026-11-01T03:00:00Z'))).toBe(at('2026-11-01T13:00:00Z'))
  })

  it('a local-time delivery inside the window is held to its end; quiet hours alone hold a send made at night', () => {
    const now = at('2026-06-01T10:00:00Z')
    expect(dueIn('Europe/Paris', { deliver_at_local: '23:00', deliver_on: '2026-06-01' }, night, now)).toEqual({ at: at('2026-06-02T06:00:00Z'), reason: 'quiet_hours' })
    // 01:00 in Tokyo is 16:00 UTC: held to 08:00 Tokyo = 23:00 UTC.
    expect(dueIn('Asia/Tokyo', null, night, at('2026-06-01T16:00:00Z'))).toEqual({ at: at('2026-06-01T23:00:00Z'), reason: 'quiet_hours' })
    expect(dueIn('Europe/Paris', null, night, now)).toEqual({ at: now, reason: 'now' })
  })
})
