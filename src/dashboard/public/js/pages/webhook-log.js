// A webhook's delivery log (GET /v1/webhooks/:id/deliveries): its attempts,
// newest first, a page at a time by cursor. Real deliveries and test events
// alike, so an owner sees why an endpoint fails and when the next try comes.
import { get, query } from '../api.js'
import { append, h, replace, shortTime } from '../dom.js'
import { errorBox, statusBadge } from '../ui.js'

/** 20 rows keep a card short; older ones are a click away. */
const PAGE_SIZE = 20

/** What the endpoint said, or why it said nothing, and how long it took. */
export function attemptResult(attempt) {
  const answer = attempt.response_status !== null
    ? `HTTP ${attempt.response_status}`
    : `no answer: ${attempt.error ?? 'unknown error'}`
  return `${answer} · ${attempt.duration_ms} ms`
}

function nextAttempt(attempt) {
  if (attempt.next_attempt_at !== null) return shortTime(attempt.next_attempt_at)
  // A retry waits without a time while the endpoint is disabled (webhooks.schemas.ts).
  if (attempt.outcome === 'retrying') return h('span', { class: 'muted' }, 'when enabled')
  return h('span', { class: 'muted' }, '—')
}

// Time and Result first: on a phone they are what shows without scrolling.
function row(attempt) {
  return h('tr', { 'data-attempt-id': attempt.id },
    h('td', { class: 'when' }, shortTime(attempt.attempted_at)),
    h('td', {}, statusBadge(attempt.outcome), ' ', h('span', { class: 'attempt-result' }, attemptResult(attempt))),
    h('td', {}, attempt.event_type, h('br'), h('span', { class: 'mono small muted event-id' }, attempt.event_id)),
    h('td', { class: 'num' }, String(attempt.attempt)),
    h('td', { class: 'when' }, nextAttempt(attempt)),
  )
}

/**
 * The log of one webhook: returns { element, reload }. reload() starts again
 * from the newest attempt (after a test event, or on Refresh).
 */
export function deliveryLog(webhook) {
  const body = h('div', { class: 'log-body' })
  const element = h('div', { class: 'delivery-log' },
    h('div', { class: 'log-head' },
      h('h4', {}, 'Delivery log'),
      h('button', { type: 'button', class: 'secondary small', onclick: () => reload() }, 'Refresh log'),
    ),
    body,
  )

  async function loadPage(cursor) {
    return get(`/v1/webhooks/${webhook.id}/deliveries${query({ limit: PAGE_SIZE, cursor })}`)
  }

  function olderButton(cursor, tbody) {
    if (!cursor) return null
    const button = h('button', { type: 'button', class: 'secondary small', onclick: async () => {
      button.disabled = true
      try {
        const page = await loadPage(cursor)
        append(tbody, page.deliveries.map(row))
        button.replaceWith(olderButton(page.next_cursor, tbody) ?? '')
      } catch (error) {
        button.disabled = false
        button.after(errorBox(error))
      }
    } }, 'Older attempts')
    return button
  }

  async function reload() {
    try {
      const page = await loadPage(null)
      if (!page.deliveries.length) {
        replace(body, h('p', { class: 'empty' }, 'No attempts in the last 7 days. Press Test to send one now.'))
        return
      }
      const tbody = h('tbody', {}, page.deliveries.map(row))
      replace(body,
        h('div', { class: 'table-wrap' },
          h('table', { class: 'log-table' },
            h('caption', { class: 'visually-hidden' }, `Delivery attempts to ${webhook.url}, newest first`),
            h('thead', {}, h('tr', {}, ['Time', 'Result', 'Event', 'Attempt', 'Next attempt'].map((label) => h('th', { scope: 'col' }, label)))),
            tbody,
          )),
        h('div', { class: 'pager' }, olderButton(page.next_cursor, tbody)),
      )
    } catch (error) {
      replace(body, errorBox(error))
    }
  }

  return { element, reload }
}
