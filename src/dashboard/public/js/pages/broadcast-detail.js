// One broadcast's page: its counts climb live while it goes out
// (GET /v1/broadcasts/:id polled each second), with its progress (pending,
// retrying, failures by reason and push service, last error, next attempt).
// A pending or sending broadcast can be stopped, a scheduled one canceled, and
// any can be duplicated into a new draft.
import { del, get, post } from '../api.js'
import { append, formatNumber, formatRate, formatTime, h, replace } from '../dom.js'
import { confirmButton, errorBox, okBox, pageHeading, show, statusBadge } from '../ui.js'
import { progressDetails } from './broadcast-progress.js'
import { funnelSection } from './broadcast-funnel.js'
import { draftFromBroadcast, draftHasContent, loadDraft, saveDraft } from './compose-draft.js'
import { targetNamesGroups, targetText } from './target-text.js'
import { drawVariants } from './broadcast-variants.js'


/** Statuses after which nothing changes any more. */
const FINAL = new Set(['sent', 'failed', 'canceled'])
const POLL_MS = 1000
/**
 * After a stop, pushes already in flight are still counted as their batches
 * end, within the push timeout (HERALD_PUSH_TIMEOUT_MS, default 10 s): the page
 * keeps polling a stopped broadcast this long after it finished.
 */
const AFTER_STOP_MS = 15_000

function statusText(b) {
  const done = b.delivered + b.failed
  if (b.status === 'scheduled') return `Fires at ${formatTime(b.scheduled_at)}.`
  if (b.status === 'failed') return `Failed: ${b.failure_reason ?? 'unknown reason'}.`
  if (b.status === 'canceled') {
    if (b.started_at === null && done === 0) return 'Canceled before it fired.'
    return `Stopped: ${formatNumber(done)} of ${formatNumber(b.audience)} pushes sent; the other ${formatNumber(b.pending + b.retrying)} will not be.`
  }
  return `${formatNumber(done)} of ${formatNumber(b.audience)} pushes sent.`
}

/** Whether the page should look again: the broadcast may still change. */
function stillChanging(b) {
  if (!FINAL.has(b.status)) return true
  return b.status === 'canceled' && b.started_at !== null && b.finished_at !== null && Date.now() - b.finished_at < AFTER_STOP_MS
}

export async function renderDetail(view, session, id, flash) {
  let broadcast = await get(`/v1/broadcasts/${id}`)
  const groupNames = targetNamesGroups(broadcast.target) ? new Map((await get('/v1/groups')).groups.map((g) => [g.id, g.name])) : new Map()
  const slot = h('div', { class: 'slot' })
  const live = h('div', { id: 'broadcast-live', 'aria-live': 'polite' })
  const progressSlot = h('div')
  const funnelSlot = h('div')
  const actions = h('div', { class: 'form-actions' })
  const detailsSlot = h('div')
  const variantsSlot = h('section', { class: 'card', 'aria-labelledby': 'experiment-title' })
  let timer = null
  let left = false

  function count(label, value, key) {
    return h('div', { class: 'stat' }, h('span', { class: 'stat-value', 'data-count': key }, formatNumber(value)), h('span', { class: 'stat-label' }, label))
  }

  function cancelScheduled() {
    return confirmButton('Cancel broadcast', 'Cancel this scheduled broadcast? It will not be sent.', async () => {
      try {
        await del(`/v1/broadcasts/${id}`)
        show(slot, okBox('Broadcast canceled.'))
      } catch (error) {
        show(slot, errorBox(error))
      }
      replace(actions) // the question is answered: let draw() put the right buttons back
      await refresh()
    })
  }

  function stopSending() {
    return confirmButton('Stop broadcast', 'Stop this broadcast? Subscribers not pushed yet will not get it; pushes already delivered stay delivered.', async () => {
      try {
        await post(`/v1/broadcasts/${id}/stop`, {})
        show(slot, okBox('Broadcast stopped. Nothing more is pushed.'))
      } catch (error) {
        show(slot, errorBox(error))
      }
      replace(actions) // the question is answered: let draw() put the right buttons back
      await refresh()
      schedulePoll()
    })
  }

  function draw() {
    const b = broadcast
    const done = b.delivered + b.failed
    const progress = h('progress', { max: String(Math.max(1, b.audience)), value: String(done), id: 'delivery-progress', 'aria-label': 'Pushes sent' })
    const notStarted = b.status === 'scheduled' || (b.status === 'canceled' && b.started_at === null && done === 0)
    replace(live,
      h('p', { class: 'status-line' }, statusBadge(b.status), ' ', statusText(b)),
      notStarted ? null : progress,
      h('div', { class: 'stats' },
        count('audience', b.audience, 'audience'),
        count('delivered', b.delivered, 'delivered'),
        count('failed', b.failed, 'failed'),
        count('clicked', b.clicked, 'clicked'),
        count('dismissed', b.dismissed, 'dismissed'),
        h('div', { class: 'stat' }, h('span', { class: 'stat-value', 'data-count': 'ctr' }, formatRate(b.clicked, b.delivered)), h('span', { class: 'stat-label' }, 'click-through')),
      ),
    )
    replace(progressSlot, notStarted ? null : progressDetails(b))
    replace(funnelSlot, notStarted ? null : funnelSection(b))
    // Redrawn on every poll, so the buttons follow the status (a stopped one
    // loses Stop) – unless a confirmation question is open.
    if (!actions.querySelector('.confirm .question')) {
      replace(actions,
        b.status === 'scheduled' ? cancelScheduled() : null,
        b.status === 'pending' || b.status === 'sending' ? stopSending() : null)
    }
    replace(detailsSlot, details(b))
    drawVariants(variantsSlot, b, slot, refresh)
    variantsSlot.hidden = !b.experiment
  }

  function details(b) {
    const n = b.notification
    const row = (label, value) => [h('dt', {}, label), h('dd', {}, value)]
    return h('dl', { class: 'details', id: 'broadcast-details' },
      row('Id', h('span', { class: 'mono' }, b.id)),
      row('Body', n.body),
      row('Link', n.url),
      row('Icon', n.icon ? h('img', { src: n.icon, alt: 'Icon', width: '32', height: '32' }) : '—'),
      row('Image', n.image ? h('img', { src: n.image, alt: 'Image', class: 'thumb' }) : '—'),
      row('Buttons', n.actions?.length ? h('ul', { id: 'broadcast-actions' }, n.actions.map((a) => h('li', {}, `${a.title} (${a.action})${a.url ? ` → ${a.url}` : ''}`))) : '—'),
      h('dt', {}, 'Target'), h('dd', { id: 'broadcast-target' }, targetText(b.target, groupNames)),
      row('Time to live', `${formatNumber(b.ttl)} s`),
      row('Urgency', b.urgency),
      row('Topic', b.topic ?? '—'),
      row('Throttle', b.throttle_per_minute === null ? '—' : `${formatNumber(b.throttle_per_minute)} pushes a minute`),
      h('dt', {}, 'Local time'), h('dd', { id: 'broadcast-local-time' }, b.deliver_at_local
        ? `${b.deliver_at_local}${b.deliver_on ? ` on ${b.deliver_on}` : ' (the next time it comes)'}, each subscriber's time zone${b.skipped ? `; ${formatNumber(b.skipped)} skipped (their time had passed)` : ''}`
        : '—'),
      h('dt', {}, 'Waiting'), h('dd', { id: 'broadcast-waiting' }, b.waiting?.length
        ? h('ul', {}, b.waiting.map((w) => h('li', {}, `${formatNumber(w.count)} at ${formatTime(w.at)} (${w.reason === 'quiet_hours' ? 'held by quiet hours' : 'their local time'})`)))
        : '—'),
      row('Kind', b.class === 'transactional' ? 'transactional (never capped)' : `marketing (over a frequency cap: ${b.on_capped === 'defer' ? 'sent when the cap allows' : 'skipped'})`),
      row('Source', b.source),
      row('Created', formatTime(b.created_at)),
      row('Started', formatTime(b.started_at)),
      h('dt', {}, 'Finished'), h('dd', { id: 'finished-at' }, formatTime(b.finished_at)),
    )
  }

  async function refresh() {
    try {
      broadcast = await get(`/v1/broadcasts/${id}`)
      draw()
    } catch (error) {
      show(slot, errorBox(error))
    }
  }

  function schedulePoll() {
    clearTimeout(timer)
    // A scheduled broadcast is polled too, more slowly, so its firing shows.
    if (!left && stillChanging(broadcast)) timer = setTimeout(poll, broadcast.status === 'scheduled' ? 5 * POLL_MS : POLL_MS)
  }

  async function poll() {
    if (left) return
    await refresh()
    schedulePoll()
  }

  // Duplicate: the broadcast becomes the compose draft. A draft in progress
  // is only replaced after a second press.
  function openAsDraft() {
    saveDraft(session.me.id, draftFromBroadcast(broadcast))
    session.go('#/compose', 'A copy of the broadcast, as a new draft. Nothing is sent until you send it.')
  }
  const duplicate = draftHasContent(loadDraft(session.me.id))
    ? confirmButton('Duplicate', 'This replaces the draft you have in Compose.', async () => openAsDraft(), { danger: false })
    : h('button', { type: 'button', class: 'secondary', onclick: openAsDraft }, 'Duplicate')

  draw()
  append(view,
    pageHeading(broadcast.notification.title, h('span', { class: 'head-actions' }, duplicate, ' ', h('a', { href: '#/broadcasts' }, '← All broadcasts'))),
    flash ? okBox(flash) : null,
    slot,
    h('section', { class: 'card', 'aria-label': 'Delivery' }, live, funnelSlot, progressSlot, actions),
    variantsSlot,
    h('section', { class: 'card', 'aria-labelledby': 'content-title' },
      h('h2', { id: 'content-title' }, 'Content and options'),
      detailsSlot,
    ),
  )
  schedulePoll()
  return () => {
    left = true
    clearTimeout(timer)
  }
}
