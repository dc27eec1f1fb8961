// Broadcasts: the history with audience, outcomes and click-through rate, and
// a chart over time. One broadcast's page is in broadcast-detail.js.
import { get, query } from '../api.js'
import { deliveryChart, dailyTotals } from '../chart.js'
import { append, formatNumber, formatRate, h, replace, shortTime } from '../dom.js'
import { errorBox, okBox, pageHeading, show, statusBadge, table } from '../ui.js'
import { renderDetail } from './broadcast-detail.js'
import { targetText } from './target-text.js'
import { exportCard } from './broadcasts-export.js'

export async function render(view, session, { id, detail, flash }) {
  if (detail) return renderDetail(view, session, id, flash)
  return renderList(view, session, flash)
}

async function renderList(view, session, flash) {
  const [first, { groups }] = await Promise.all([get('/v1/broadcasts?limit=100'), get('/v1/groups')])
  const groupNames = new Map(groups.map((g) => [g.id, g.name]))
  const all = [...first.broadcasts]
  let cursor = first.next_cursor
  const tableSlot = h('div')
  const chartSlot = h('div')
  const slot = h('div', { class: 'slot' })

  function row(b) {
    return h('tr', { 'data-broadcast-id': b.id },
      h('td', {}, h('a', { href: `#/broadcasts/${b.id}` }, b.notification.title)),
      h('td', {}, statusBadge(b.status), b.source === 'dashboard' ? h('span', { class: 'muted small' }, ' dashboard') : null),
      h('td', { class: 'target' }, targetText(b.target, groupNames)),
      h('td', { class: 'num' }, formatNumber(b.audience)),
      h('td', { class: 'num' }, formatNumber(b.delivered)),
      h('td', { class: 'num' }, formatNumber(b.failed)),
      h('td', { class: 'num' }, formatNumber(b.clicked)),
      h('td', { class: 'num' }, formatNumber(b.dismissed)),
      h('td', { class: 'num' }, formatRate(b.clicked, b.delivered)),
      h('td', { class: 'when' }, shortTime(b.scheduled_at && b.status === 'scheduled' ? b.scheduled_at : b.created_at)),
    )
  }

  function draw() {
    replace(chartSlot, deliveryChart(dailyTotals(all)))
    replace(tableSlot, 
      table('Broadcasts', ['Title', 'Status', 'Target', ...['Audience', 'Delivered', 'Failed', 'Clicked', 'Dismissed', 'Click-through'].map((label) => ({ label, num: true })), 'When'],
        all.map(row), { emptyText: 'No broadcasts yet.' }),
      cursor ? h('div', { class: 'pager' }, h('button', { type: 'button', class: 'secondary', onclick: more }, 'Show older broadcasts')) : null,
    )
  }

  async function more() {
    try {
      const page = await get(`/v1/broadcasts${query({ limit: 100, cursor })}`)
      all.push(...page.broadcasts)
      cursor = page.next_cursor
      draw()
    } catch (error) {
      show(slot, errorBox(error))
    }
  }

  draw()
  append(view, 
    pageHeading('Broadcasts', h('a', { class: 'button', href: '#/compose' }, 'New broadcast')),
    flash ? okBox(flash) : null,
    slot,
    h('section', { 'aria-labelledby': 'chart-heading' }, h('h2', { id: 'chart-heading' }, 'Delivered per day'), chartSlot),
    h('section', { 'aria-labelledby': 'history-heading' }, h('h2', { id: 'history-heading' }, 'History'), tableSlot),
    exportCard(session),
  )
}
