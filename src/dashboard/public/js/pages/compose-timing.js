// Compose's timing (issue 24, docs/timing.md): the schedule's date and time
// read in this browser's time zone, in the project's default zone, or in
// each subscriber's own (local-time delivery: deliver_at_local and
// deliver_on, with what to do where that time has passed), and whether the
// project's quiet hours may hold the pushes.
import { field, h } from '../dom.js'

/** The offset of a zone from UTC at an instant, in ms (Intl's parts; no library in the page). */
function offsetMs(timeZone, at) {
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-US', {
    timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
  }).formatToParts(new Date(at)).map((p) => [p.type, p.value]))
  const wall = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second))
  return wall - Math.floor(at / 1000) * 1000
}

/**
 * "YYYY-MM-DDTHH:MM" read as a wall clock in timeZone → Unix ms. A time the
 * clocks skip lands after the jump, a time they show twice on the earlier,
 * as Herald's own rule (docs/timing.md).
 */
export function wallClockIn(value, timeZone) {
  const [date, time] = value.split('T')
  const [y, m, d] = date.split('-').map(Number)
  const [hh, mm] = time.split(':').map(Number)
  const naive = Date.UTC(y, m - 1, d, hh, mm)
  const before = offsetMs(timeZone, naive - 86_400_000)
  const after = offsetMs(timeZone, naive + 86_400_000)
  const valid = [naive - before, naive - after].filter((at) => offsetMs(timeZone, at) === naive - at)
  return valid.length ? Math.min(...valid) : Math.max(naive - before, naive - after)
}

export const BROWSER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone

/** The controls: which zone the schedule is in, what to do where it has passed, quiet hours. */
export function timingInputs(me) {
  const zone = h('select', { name: 'schedule_zone', id: 'schedule-zone' },
    h('option', { value: 'browser' }, `Your time zone (${BROWSER_ZONE})`),
    h('option', { value: 'project' }, `The project's time zone (${me.default_timezone})`),
    h('option', { value: 'subscriber' }, "Each subscriber's time zone (local-time delivery)"))
  const past = h('select', { name: 'past', id: 'schedule-past' },
    h('option', { value: 'next_day' }, 'Send the next day at that time'),
    h('option', { value: 'now' }, 'Send at once'),
    h('option', { value: 'skip' }, 'Skip them'))
  const pastField = field('Where that time has already passed', past)
  const ignoreQuiet = h('input', { type: 'checkbox', name: 'ignore_quiet_hours', id: 'ignore-quiet-hours' })
  const quiet = me.quiet_hours
  const quietNode = quiet
    ? h('label', { class: 'check' }, ignoreQuiet, ` Send during quiet hours too (${quiet.start} to ${quiet.end}, each subscriber's time); urgency high always does.`)
    : null
  return {
    nodes: [field('Time zone of the schedule', zone, "Each subscriber's: every subscriber gets it when their own clock shows this date and time (the project's zone for those without one)."), pastField, quietNode],
    update() {
      pastField.hidden = zone.value !== 'subscriber'
    },
    /** Sets the request's timing fields from the schedule's value ("" = now). */
    apply(request, value) {
      if (ignoreQuiet.checked) request.ignore_quiet_hours = true
      if (!value) return
      if (zone.value === 'subscriber') {
        request.deliver_at_local = value.slice(11, 16)
        request.deliver_on = value.slice(0, 10)
        if (past.value !== 'next_day') request.past = past.value
      } else {
        request.scheduled_at = zone.value === 'project' ? wallClockIn(value, me.default_timezone) : new Date(value).getTime()
      }
    },
    /** The schedule's instant for the form's own checks; null for local-time delivery (each zone differs). */
    instant(value) {
      if (!value || zone.value === 'subscriber') return null
      return zone.value === 'project' ? wallClockIn(value, me.default_timezone) : new Date(value).getTime()
    },
    mode: () => zone.value,
    state: () => ({ zone: zone.value, past: past.value, ignore_quiet_hours: ignoreQuiet.checked }),
    restore(d) {
      if (['browser', 'project', 'subscriber'].includes(d?.zone)) zone.value = d.zone
      if (['next_day', 'now', 'skip'].includes(d?.past)) past.value = d.past
      ignoreQuiet.checked = d?.ignore_quiet_hours === true
    },
  }
}
