// Broadcasts: the history with audience, outcomes and click-through rate, a
// chart over time, and one broadcast's page whose counts climb live while it
// goes out (GET /v1/broadcasts/:id polled each second); scheduled ones can be
// canceled there.
import { del, get, query } from '../api.js'
import { deliveryChart, dailyTotals } from '../chart.js'
import { append, formatNumber, formatRate, formatTime, h, replace, shortTime } from '../dom.js'
import { confirmButton, errorBox, okBox, pageHeading, show, statusBadge, table } from '../ui.js'

/** Statuses after which nothing changes any more. */
const FINAL = new Set(['sent', 'failed', 'canceled'])
const POLL_MS = 1000

export async function render(view, session, { id, detail, flash }) {
  if (detail) return renderDetail(view, session, id, flash)
  return renderList(view, flash)
}

/** A target in words; a deleted group is named by its id. */
function targetText(target, groupNames = new Map()) {
  if (target.type === 'user') return `user ${target.external_id}`
  if (target.type === 'group') return `group ${groupNames.get(target.group_id) ?? target.group_id}`
  return 'all'
}

async function renderList(view, flash) {
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
      h('td', {}, targetText(b.target, groupNames)),
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
  )
}

async function renderDetail(view, session, id, flash) {
  let broadcast = await get(`/v1/broadcasts/${id}`)
  const groupNames = broadcast.target.type === 'group' ? new Map((await get('/v1/groups')).groups.map((g) => [g.id, g.name])) : new Map()
  const slot = h('div', { class: 'slot' })
  const live = h('div', { id: 'broadcast-live', 'aria-live': 'polite' })
  const actions = h('div', { class: 'form-actions' })
  let timer = null
  let stopped = false

  function count(label, value, key) {
    return h('div', { class: 'stat' }, h('span', { class: 'stat-value', 'data-count': key }, formatNumber(value)), h('span', { class: 'stat-label' }, label))
  }

  function draw() {
    const b = broadcast
    const done = b.delivered + b.failed
    const progress = h('progress', { max: String(Math.max(1, b.audience)), value: String(done), id: 'delivery-progress', 'aria-label': 'Pushes sent' })
    replace(live, 
      h('p', { class: 'status-line' }, statusBadge(b.status), ' ',
        b.status === 'scheduled' ? `Fires at ${formatTime(b.scheduled_at)}.`
          : b.status === 'canceled' ? 'Canceled before it fired.'
            : b.status === 'failed' ? `Failed: ${b.failure_reason ?? 'unknown reason'}.`
              : `${formatNumber(done)} of ${formatNumber(b.audience)} pushes sent.`),
      b.status === 'scheduled' || b.status === 'canceled' ? null : progress,
      h('div', { class: 'stats' },
        count('audience', b.audience, 'audience'),
        count('delivered', b.delivered, 'delivered'),
        count('failed', b.failed, 'failed'),
        count('clicked', b.clicked, 'clicked'),
        count('dismissed', b.dismissed, 'dismissed'),
        h('div', { class: 'stat' }, h('span', { class: 'stat-value', 'data-count': 'ctr' }, formatRate(b.clicked, b.delivered)), h('span', { class: 'stat-label' }, 'click-through')),
      ),
    )
    replace(actions, b.status === 'scheduled'
      ? confirmButton('Cancel broadcast', 'Cancel this scheduled broadcast? It will not be sent.', async () => {
          try {
            await del(`/v1/broadcasts/${id}`)
            show(slot, okBox('Broadcast canceled.'))
            await refresh()
          } catch (error) {
            show(slot, errorBox(error))
            await refresh()
          }
        })
      : '')
  }

  async function refresh() {
    try {
      broadcast = await get(`/v1/broadcasts/${id}`)
      draw()
    } catch (error) {
      show(slot, errorBox(error))
    }
  }

  async function poll() {
    if (stopped) return
    await refresh()
    // A scheduled broadcast is polled too, more slowly, so its firing shows.
    if (!stopped && !FINAL.has(broadcast.status)) timer = setTimeout(poll, broadcast.status === 'scheduled' ? 5 * POLL_MS : POLL_MS)
  }

  const n = broadcast.notification
  const t = broadcast.target
  const row = (label, value) => [h('dt', {}, label), h('dd', {}, value)]
  draw()
  append(view, 
    pageHeading(n.title, h('a', { href: '#/broadcasts' }, '← All broadcasts')),
    flash ? okBox(flash) : null,
    slot,
    h('section', { class: 'card', 'aria-label': 'Delivery' }, live, actions),
    h('section', { class: 'card', 'aria-labelledby': 'content-title' },
      h('h2', { id: 'content-title' }, 'Content and options'),
      h('dl', { class: 'details' },
        row('Id', h('span', { class: 'mono' }, broadcast.id)),
        row('Body', n.body),
        row('Link', n.url),
        row('Icon', n.icon ? h('img', { src: n.icon, alt: 'Icon', width: '32', height: '32' }) : '—'),
        row('Image', n.image ? h('img', { src: n.image, alt: 'Image', class: 'thumb' }) : '—'),
        row('Target', targetText(t, groupNames)),
        row('Time to live', `${formatNumber(broadcast.ttl)} s`),
        row('Urgency', broadcast.urgency),
        row('Topic', broadcast.topic ?? '—'),
        row('Source', broadcast.source),
        row('Created', formatTime(broadcast.created_at)),
        row('Started', formatTime(broadcast.started_at)),
        row('Finished', formatTime(broadcast.finished_at)),
      ),
    ),
  )
  if (!FINAL.has(broadcast.status)) timer = setTimeout(poll, POLL_MS)
  return () => {
    stopped = true
    clearTimeout(timer)
  }
}
