// Horizontal bars that are also a table of their numbers: the funnel of a
// broadcast, variants side by side. Each row is a label, a bar and the value
// (with an optional note, e.g. a rate), so a screen reader reads the table and
// a phone shows the bars at full width. No library: a table and widths set
// through the CSSOM (the CSP allows no inline style attributes).
import { h } from './dom.js'

/**
 * barTable({ id, caption, rows: [{ label, value, note?, kind? }], max?, format? })
 * - max: the value of a full bar (default: the largest value, at least 1)
 * - kind: a class suffix for the bar's colour (bar-kind-<kind>)
 * - format: how a value is written (default: the locale's integer format)
 */
export function barTable({ id, caption, rows, max, format = (v) => new Intl.NumberFormat().format(v), valueLabel = 'Count' }) {
  const full = Math.max(1, max ?? Math.max(0, ...rows.map((r) => r.value)))
  const body = rows.map((row) => {
    const fill = h('span', { class: `hbar-fill bar-kind-${row.kind ?? 'default'}` })
    fill.style.width = `${Math.min(100, (100 * Math.max(0, row.value)) / full)}%`
    return h('tr', {},
      h('th', { scope: 'row' }, row.label),
      h('td', { class: 'hbar-cell', 'aria-hidden': 'true' }, h('span', { class: 'hbar' }, fill)),
      h('td', { class: 'num' }, format(row.value), row.note ? h('span', { class: 'hbar-note' }, ` ${row.note}`) : null),
    )
  })
  return h('table', { class: 'hbars', id },
    h('caption', {}, caption),
    h('thead', { class: 'visually-hidden' }, h('tr', {}, h('th', { scope: 'col' }, 'Step'), h('td', {}), h('th', { scope: 'col' }, valueLabel))),
    h('tbody', {}, body),
  )
}
