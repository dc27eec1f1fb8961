// Time series from GET /v1/stats drawn as SVG (issue 25): lines over the
// buckets, optionally bars up and down around zero (gained and lost), each
// chart with a table of its numbers beside it that only screen readers see.
// Hand-drawn, like chart.js: a few dozen points per series need no library,
// and SVG needs no inline style or script under the CSP (docs/dependencies.md).
import { h, svg } from './dom.js'

const WIDTH = 640
const HEIGHT = 220
const PAD = { top: 14, right: 52, bottom: 28, left: 52 }
const integer = new Intl.NumberFormat()

/** The highest value of the series over the buckets, rounded up to a readable number (at least 1). */
function niceMax(values) {
  const max = Math.max(1, ...values)
  const step = 10 ** Math.floor(Math.log10(max))
  return Math.ceil(max / step) * step
}

/**
 * seriesChart({ id, title, buckets, timeZone, lines: [{ key, label, kind }], bars?: { up: { key, label, kind }, down: { key, label, kind } }, rightLine?: { key, label, kind } })
 * - lines: polylines on the left scale (from 0)
 * - bars: two bar series on the left scale, `up` above zero and `down` below it
 * - rightLine: one polyline on its own scale, labelled on the right (active subscribers beside daily gains)
 * A null value (active before counting started) leaves a gap in its line.
 */
export function seriesChart({ id, title, buckets, timeZone, lines = [], bars = null, rightLine = null }) {
  const day = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone })
  const plotW = WIDTH - PAD.left - PAD.right
  const plotH = HEIGHT - PAD.top - PAD.bottom
  const slot = plotW / Math.max(1, buckets.length)
  const xAt = (i) => PAD.left + slot * (i + 0.5)

  const up = bars ? buckets.map((b) => b[bars.up.key]) : []
  const down = bars ? buckets.map((b) => b[bars.down.key]) : []
  const top = niceMax([...lines.flatMap((l) => buckets.map((b) => b[l.key] ?? 0)), ...up])
  const bottom = bars ? niceMax(down) * (down.some((v) => v > 0) ? 1 : 0) : 0
  // The left scale spans -bottom (lost) to top; zero sits where they meet.
  const yLeft = (v) => PAD.top + plotH * ((top - v) / (top + bottom || 1))
  const rightMax = rightLine ? niceMax(buckets.map((b) => b[rightLine.key] ?? 0)) : 1
  const yRight = (v) => PAD.top + plotH * (1 - v / rightMax)

  const polyline = (values, y, kind) => {
    // Runs of non-null points, each one polyline: a gap where a value is unknown.
    const runs = []
    let run = []
    values.forEach((v, i) => {
      if (v === null || v === undefined) { if (run.length) runs.push(run); run = []; return }
      run.push(`${xAt(i).toFixed(1)},${y(v).toFixed(1)}`)
    })
    if (run.length) runs.push(run)
    return runs.map((points) => points.length === 1
      ? svg('circle', { cx: points[0].split(',')[0], cy: points[0].split(',')[1], r: 3, class: `series series-${kind}` })
      : svg('polyline', { points: points.join(' '), class: `series series-${kind}` }))
  }

  const every = Math.max(1, Math.ceil(buckets.length / 6))
  const chart = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: 'chart series-chart', role: 'img', 'aria-label': `${title}, chart; the numbers are in the table that follows.` },
    svg('line', { x1: PAD.left, x2: WIDTH - PAD.right, y1: yLeft(0), y2: yLeft(0), class: 'axis' }),
    svg('line', { x1: PAD.left, x2: WIDTH - PAD.right, y1: yLeft(top), y2: yLeft(top), class: 'grid' }),
    svg('text', { x: PAD.left - 6, y: yLeft(top) + 4, class: 'tick', 'text-anchor': 'end' }, integer.format(top)),
    svg('text', { x: PAD.left - 6, y: yLeft(0) + 4, class: 'tick', 'text-anchor': 'end' }, '0'),
    bottom ? svg('text', { x: PAD.left - 6, y: yLeft(-bottom) + 4, class: 'tick', 'text-anchor': 'end' }, `−${integer.format(bottom)}`) : null,
    rightLine ? svg('text', { x: WIDTH - PAD.right + 6, y: yRight(rightMax) + 4, class: `tick tick-${rightLine.kind}`, 'text-anchor': 'start' }, integer.format(rightMax)) : null,
    rightLine ? svg('text', { x: WIDTH - PAD.right + 6, y: yRight(0) + 4, class: `tick tick-${rightLine.kind}`, 'text-anchor': 'start' }, '0') : null,
    bars ? buckets.map((b, i) => {
      const w = slot * 0.6
      const x = xAt(i) - w / 2
      return svg('g', {},
        b[bars.up.key] > 0 ? svg('rect', { x, width: w, y: yLeft(b[bars.up.key]), height: yLeft(0) - yLeft(b[bars.up.key]), class: `sbar sbar-${bars.up.kind}` }) : null,
        b[bars.down.key] > 0 ? svg('rect', { x, width: w, y: yLeft(0), height: yLeft(-b[bars.down.key]) - yLeft(0), class: `sbar sbar-${bars.down.kind}` }) : null,
      )
    }) : null,
    lines.map((l) => polyline(buckets.map((b) => b[l.key]), yLeft, l.kind)),
    rightLine ? polyline(buckets.map((b) => b[rightLine.key]), yRight, rightLine.kind) : null,
    buckets.map((b, i) => ((buckets.length - 1 - i) % every === 0
      ? svg('text', { x: xAt(i), y: HEIGHT - 8, class: 'tick', 'text-anchor': 'middle' }, day.format(b.start))
      : null)),
  )

  const keys = [...(bars ? [bars.up, bars.down] : []), ...lines, ...(rightLine ? [{ ...rightLine, label: `${rightLine.label} (right scale)` }] : [])]
  const columns = [...(bars ? [bars.up, bars.down] : []), ...lines, ...(rightLine ? [rightLine] : [])]
  // In a hidden box: a table is as wide as its content whatever its own width says.
  const numbers = h('div', { class: 'visually-hidden' }, h('table', { id: `${id}-numbers` },
    h('caption', {}, `${title}, by day`),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Day'), columns.map((c) => h('th', { scope: 'col' }, c.label)))),
    h('tbody', {}, buckets.map((b) => h('tr', {},
      h('th', { scope: 'row' }, day.format(b.start)),
      columns.map((c) => h('td', {}, b[c.key] === null ? 'not counted yet' : integer.format(b[c.key]))),
    ))),
  ))
  return h('figure', { class: 'chart-figure', id },
    chart,
    h('figcaption', {}, keys.map((k) => [h('span', { class: `key key-${k.kind}`, 'aria-hidden': 'true' }), ` ${k.label} `])),
    numbers,
  )
}
