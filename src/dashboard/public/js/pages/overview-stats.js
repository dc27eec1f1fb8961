// The overview's numbers over time (issue 25): audience growth and pushes over
// the last 30 days of the project's time zone, from GET /v1/stats, as charts
// with their numbers in tables for screen readers (series-chart.js).
import { h } from '../dom.js'
import { seriesChart } from '../series-chart.js'

/** The section, given GET /v1/stats?interval=day (the last 30 days by default). */
export function statsSection(stats) {
  const buckets = stats.buckets
  const total = (key) => new Intl.NumberFormat().format(stats.totals[key])
  return h('section', { 'aria-labelledby': 'trends-title' },
    h('h2', { id: 'trends-title' }, 'Last 30 days'),
    h('p', { class: 'hint', id: 'trends-summary' },
      `${total('gained')} subscribers gained, ${total('lost')} lost; ${total('sent')} pushes sent, ${total('delivered')} delivered, ${total('shown')} shown, ${total('clicked')} clicked. Days of ${stats.time_zone}.`),
    h('div', { class: 'charts' },
      seriesChart({
        id: 'audience-chart',
        title: 'Audience: subscribers gained, lost and active',
        buckets: buckets.map((b) => ({ start: b.start, gained: b.gained, lost: b.lost, active: b.active })),
        timeZone: stats.time_zone,
        bars: { up: { key: 'gained', label: 'gained', kind: 'gained' }, down: { key: 'lost', label: 'lost', kind: 'lost' } },
        rightLine: { key: 'active', label: 'active', kind: 'active' },
      }),
      seriesChart({
        id: 'pushes-chart',
        title: 'Pushes: sent, delivered, shown and clicked',
        buckets,
        timeZone: stats.time_zone,
        lines: [
          { key: 'sent', label: 'sent', kind: 'sent' },
          { key: 'delivered', label: 'delivered', kind: 'delivered' },
          { key: 'shown', label: 'shown', kind: 'shown' },
          { key: 'clicked', label: 'clicked', kind: 'clicked' },
        ],
      }),
    ),
    stats.stats_since > buckets[0].start
      ? h('p', { class: 'hint' }, 'Herald counts these numbers since the upgrade to 0.3.0 (or the project\'s creation): days before show nothing.')
      : null,
  )
}
