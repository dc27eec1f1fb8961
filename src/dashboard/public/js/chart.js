// A small hand-drawn SVG bar chart: pushes delivered per day, with the clicks
// of the same day drawn over them. No library: thirty rectangles.
import { h, svg } from './dom.js'

const DAY = 24 * 60 * 60 * 1000

function dayStart(ms) {
  const d = new Date(ms)
  return new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime()
}

/** Delivered and clicked per local day over the last `days` days, from the broadcasts given. */
export function dailyTotals(broadcasts, days = 14, now = Date.now()) {
  const first = dayStart(now) - (days - 1) * DAY
  const buckets = Array.from({ length: days }, (_, i) => ({ day: first + i * DAY, delivered: 0, clicked: 0 }))
  for (const b of broadcasts) {
    const when = b.started_at ?? b.created_at
    const index = Math.round((dayStart(when) - first) / DAY)
    if (index < 0 || index >= days) continue
    buckets[index].delivered += b.delivered
    buckets[index].clicked += b.clicked
  }
  return buckets
}

export function deliveryChart(buckets) {
  const width = 640
  const height = 200
  const pad = { top: 12, right: 8, bottom: 28, left: 44 }
  const max = Math.max(1, ...buckets.map((b) => b.delivered))
  const plotW = width - pad.left - pad.right
  const plotH = height - pad.top - pad.bottom
  const slot = plotW / buckets.length
  const y = (v) => pad.top + plotH - (v / max) * plotH
  const label = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' })
  const total = buckets.reduce((n, b) => n + b.delivered, 0)
  const clicks = buckets.reduce((n, b) => n + b.clicked, 0)

  const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, class: 'chart', role: 'img', 'aria-labelledby': 'chart-title chart-desc' },
    svg('title', { id: 'chart-title' }, `Pushes delivered per day, last ${buckets.length} days`),
    svg('desc', { id: 'chart-desc' }, `${total} delivered and ${clicks} clicked in total.`),
    svg('line', { x1: pad.left, x2: width - pad.right, y1: y(0), y2: y(0), class: 'axis' }),
    svg('line', { x1: pad.left, x2: width - pad.right, y1: y(max), y2: y(max), class: 'grid' }),
    svg('text', { x: pad.left - 6, y: y(max) + 4, class: 'tick', 'text-anchor': 'end' }, String(max)),
    svg('text', { x: pad.left - 6, y: y(0) + 4, class: 'tick', 'text-anchor': 'end' }, '0'),
    buckets.map((b, i) => {
      const x = pad.left + i * slot + slot * 0.15
      const w = slot * 0.7
      return svg('g', {},
        svg('rect', { x, width: w, y: y(b.delivered), height: y(0) - y(b.delivered), class: 'bar-delivered' },
          svg('title', {}, `${label.format(b.day)}: ${b.delivered} delivered, ${b.clicked} clicked`)),
        b.clicked ? svg('rect', { x: x + w * 0.25, width: w * 0.5, y: y(b.clicked), height: y(0) - y(b.clicked), class: 'bar-clicked' }) : null,
        i % 2 === buckets.length % 2 ? null : svg('text', { x: x + w / 2, y: height - 8, class: 'tick', 'text-anchor': 'middle' }, label.format(b.day)),
      )
    }),
  )
  return h('figure', { class: 'chart-figure' }, chart,
    h('figcaption', {}, h('span', { class: 'key key-delivered' }), ' delivered ', h('span', { class: 'key key-clicked' }), ' clicked'))
}
