// Overview: subscribers by status and the health of the active ones (issue
// 23), audience and pushes over the last 30 days (issue 25), pushes this
// month against the cap, and the latest broadcasts.
import { get } from '../api.js'
import { append, formatNumber, formatRate, h, shortTime } from '../dom.js'
import { okBox, pageHeading, statusBadge, table } from '../ui.js'
import { setupChecklist } from './setup-checklist.js'
import { testDevicesCard } from './test-devices.js'
import { statsSection } from './overview-stats.js'

export async function render(view, session, { flash }) {
  const [me, counts, health, recent, stats] = await Promise.all([
    session.refreshMe(),
    get('/v1/subscribers/counts'),
    get('/v1/subscribers/health'),
    get('/v1/broadcasts?limit=5'),
    get('/v1/stats?interval=day'),
  ])
  const [checklist, testDevices] = await Promise.all([setupChecklist(session), testDevicesCard(session)])
  const used = me.usage.pushes_this_month
  const cap = me.limits.monthly_pushes
  const share = cap > 0 ? Math.min(100, (100 * used) / cap) : 100
  // Each health count opens the subscribers list filtered to that health.
  const healthStat = (label, value, id) => h('a', { class: 'stat', id, href: '#/subscribers', onclick: () => { session.subscriberFilter = { health: label } } }, h('span', { class: 'stat-value' }, formatNumber(value)), h('span', { class: 'stat-label' }, label))
  const stat = (label, value, id) => h('div', { class: 'stat', id }, h('span', { class: 'stat-value' }, formatNumber(value)), h('span', { class: 'stat-label' }, label))

  append(view, 
    pageHeading('Overview', h('a', { class: 'button', href: '#/compose' }, 'New broadcast')),
    flash ? okBox(flash) : null,
    checklist,
    testDevices,
    h('section', { 'aria-labelledby': 'subs-title' },
      h('h2', { id: 'subs-title' }, 'Subscribers'),
      h('div', { class: 'stats' },
        stat('active', counts.active, 'count-active'),
        stat('unsubscribed', counts.unsubscribed, 'count-unsubscribed'),
        stat('expired', counts.expired, 'count-expired'),
      ),
      h('p', { class: 'hint' }, `Your ${me.plan} plan allows ${formatNumber(me.limits.subscribers)} active subscribers.`),
    ),
    h('section', { 'aria-labelledby': 'health-title' },
      h('h2', { id: 'health-title' }, 'Audience health'),
      h('div', { class: 'stats' },
        healthStat('active', health.active, 'health-active'),
        healthStat('dormant', health.dormant, 'health-dormant'),
        healthStat('failing', health.failing, 'health-failing'),
      ),
      h('p', { class: 'hint' }, 'Of the active subscribers: failing, their last push failed; dormant, no click and no visit in 30 days. Apple accepts pushes even for dead subscriptions, so only clicks tell. Expiry rules are in Settings.'),
    ),
    statsSection(stats),
    h('section', { 'aria-labelledby': 'pushes-title' },
      h('h2', { id: 'pushes-title' }, 'Pushes this month'),
      h('p', { id: 'pushes-usage' }, `${formatNumber(used)} of ${formatNumber(cap)} (${share.toFixed(share < 10 ? 1 : 0)}%)`),
      h('div', { class: 'bar', role: 'progressbar', 'aria-valuemin': '0', 'aria-valuemax': String(cap), 'aria-valuenow': String(used), 'aria-labelledby': 'pushes-title' },
        h('div', { class: `bar-fill${share >= 90 ? ' warn' : ''}`, style: null, 'data-share': share.toFixed(1) })),
      h('p', { class: 'hint' }, 'Counted in UTC calendar months. A send that would go over the cap is refused.'),
    ),
    h('section', { 'aria-labelledby': 'recent-title' },
      h('h2', { id: 'recent-title' }, 'Recent broadcasts'),
      table('Recent broadcasts', ['Title', 'Status', { label: 'Audience', num: true }, { label: 'Delivered', num: true }, { label: 'Click-through', num: true }, 'Created'],
        recent.broadcasts.map((b) => h('tr', {},
          h('td', {}, h('a', { href: `#/broadcasts/${b.id}` }, b.notification.title)),
          h('td', {}, statusBadge(b.status)),
          h('td', { class: 'num' }, formatNumber(b.audience)),
          h('td', { class: 'num' }, formatNumber(b.delivered)),
          h('td', { class: 'num' }, formatRate(b.clicked, b.delivered)),
          h('td', { class: 'when' }, shortTime(b.created_at)),
        )),
        { emptyText: 'No broadcasts yet. Compose your first one.' }),
      recent.broadcasts.length ? h('p', {}, h('a', { href: '#/broadcasts' }, 'All broadcasts')) : null,
    ),
  )
  // No inline styles under the CSP: the bar's width is set through the CSSOM.
  const fill = view.querySelector('.bar-fill')
  fill.style.width = `${share}%`
}
