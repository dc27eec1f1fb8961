// A broadcast's funnel (issue 25, docs/funnel.md) as the shared bar table:
// audience → sent → delivered → shown → clicked (and each action button),
// dismissed, each row with its number and its rate, so a screen reader reads
// the table and a phone shows the bars at full width. Pushes Safari showed by
// itself (Declarative Web Push) cannot report shown: a row of their own, and
// the shown rate is over the others.
import { barTable } from '../bars.js'
import { formatNumber, h } from '../dom.js'

/** A rate of the API (0..1, or null when its denominator is 0) as a percentage. */
function percent(rate) {
  return rate === null || rate === undefined ? '—' : `${(100 * rate).toFixed(1)}%`
}

export function funnelSection(b) {
  const f = b.funnel
  const rows = [
    { label: 'Audience', value: f.audience, kind: 'muted' },
    { label: 'Sent', value: f.sent },
    { label: 'Delivered', value: f.delivered, note: `${percent(f.rates.delivered)} of sent` },
  ]
  if (f.cannot_report_shown > 0) {
    rows.push({ label: 'Shown by Safari itself (cannot report shown)', value: f.cannot_report_shown, kind: 'muted', note: 'not counted as not shown' })
  }
  rows.push(
    { label: 'Shown', value: f.shown, note: `${percent(f.rates.shown)} of delivered${f.cannot_report_shown > 0 ? ' that can report' : ''}` },
    { label: 'Clicked', value: f.clicked, kind: 'strong', note: `${percent(f.rates.click_through)} of delivered, ${percent(f.rates.click_through_shown)} of shown` },
  )
  for (const action of b.notification.actions ?? []) {
    rows.push({ label: `“${action.title}” button`, value: f.clicked_by_action[action.action] ?? 0, kind: 'strong' })
  }
  rows.push({ label: 'Dismissed', value: f.dismissed, kind: 'warn' })
  return h('div', { class: 'funnel', id: 'broadcast-funnel' },
    barTable({ id: 'funnel-table', caption: 'Funnel', rows, max: Math.max(f.audience, f.sent, f.delivered), format: formatNumber }),
    f.cannot_report_shown > 0
      ? h('p', { class: 'hint' }, `${formatNumber(f.cannot_report_shown)} pushes went to Safari, which shows them without Herald's service worker: they cannot report being shown, so the shown rate leaves them out.`)
      : null,
  )
}
