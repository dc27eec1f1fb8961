// A broadcast's progress in words, from the fields GET /v1/broadcasts/:id
// gives (decisions.md "Broadcast progress and stop"): what is left, what waits
// for a retry, why pushes failed, how each push service did, the last error
// and when the next retry comes.
import { formatNumber, formatTime, h } from '../dom.js'

const PUSH_SERVICES = [
  ['fcm', 'FCM (Chrome, Edge, Android)'],
  ['mozilla', 'Mozilla (Firefox)'],
  ['apple', 'Apple (Safari)'],
  ['wns', 'Microsoft (WNS)'],
  ['other', 'Other push service'],
]
const SERVICE_NAMES = new Map(PUSH_SERVICES)

/** last_error.reason in words (the codes are listed in decisions.md). */
const REASONS = {
  gone: 'the subscription no longer exists (unsubscribed or expired)',
  rejected: 'the push service refused the push',
  payload_too_large: 'the push was too large for the push service',
  rate_limited: 'the push service asked Herald to slow down',
  server_error: 'the push service had an error of its own',
  timeout: 'the push service did not answer in time',
  network_error: 'the connection to the push service failed',
  private_address: 'the endpoint points to a private address, so nothing was sent',
  invalid_subscription: 'the subscription’s keys or endpoint cannot be used, so nothing was sent',
  vapid_key: 'the project’s VAPID key cannot sign pushes',
  vapid_key_mismatch: 'the push service says the VAPID key is not the one the subscription was made with',
}

const FAILURES = [
  ['gone', 'gone', 'the subscription no longer exists'],
  ['rejected', 'rejected', 'the push service refused it'],
  ['unreachable', 'unreachable', 'no answer, or only errors, until the retries ran out'],
  ['skipped', 'skipped', 'sent nothing: a variable without a value, a field too long or a link that broke the rules (docs/templates.md)'],
  // Shown only when some were (most projects have no frequency caps).
  ['capped', 'capped', 'never sent: a frequency cap of the project would have been exceeded', true],
  // Shown only when some were: a push service refused the VAPID key (docs/vapid-keys.md).
  ['vapid_key_mismatch', 'key mismatch', 'the push service says the VAPID key is not the one the subscription was made with', true],
]

export function lastErrorText(error) {
  if (!error) return 'None.'
  const service = SERVICE_NAMES.get(error.push_service) ?? error.push_service
  const answered = error.status === null ? `${service}: ` : `${service} answered ${error.status}: `
  return `${answered}${REASONS[error.reason] ?? error.reason} (${formatTime(error.at)}).`
}

export function nextAttemptText(at, now = Date.now()) {
  if (at === null || at === undefined) return 'None queued.'
  const seconds = Math.round((at - now) / 1000)
  return `${formatTime(at)} (${seconds > 0 ? `in ${formatNumber(seconds)} s` : 'due now'}).`
}

/** The part of the delivery card under the main counts. */
export function progressDetails(b) {
  const stat = (label, value, key) =>
    h('div', { class: 'stat' }, h('span', { class: 'stat-value', 'data-count': key }, formatNumber(value)), h('span', { class: 'stat-label' }, label))
  const services = PUSH_SERVICES.filter(([key]) => {
    const c = b.by_push_service[key]
    return c.delivered + c.failed + c.retrying > 0
  })
  return h('div', { class: 'progress-details', id: 'broadcast-progress' },
    h('div', { class: 'stats' },
      // Once stopped (or failed) nothing more is sent: pending then holds every push that will not be, retries canceled included.
      stat(b.status === 'canceled' || b.status === 'failed' ? 'not sent' : 'not yet attempted', b.pending, 'pending'),
      stat('waiting for a retry', b.retrying, 'retrying'),
    ),
    h('p', { class: 'failures', id: 'broadcast-failures' }, 'Failed by reason: ',
      FAILURES.filter(([key, , , onlyIfAny]) => !onlyIfAny || b.failures[key] > 0).map(([key, label, why], i) => [
        i ? ', ' : '',
        h('span', { 'data-failure': key, title: why }, `${formatNumber(b.failures[key] ?? 0)} ${label}`),
      ]), '.'),
    services.length
      ? h('div', { class: 'table-wrap by-service' }, h('table', { id: 'by-push-service' },
          h('caption', { class: 'visually-hidden' }, 'By push service'),
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Push service'),
            ['Delivered', 'Failed', 'Retrying'].map((label) => h('th', { scope: 'col', class: 'num' }, label)))),
          h('tbody', {}, services.map(([key, name]) => {
            const c = b.by_push_service[key]
            return h('tr', { 'data-push-service': key }, h('td', {}, name),
              h('td', { class: 'num' }, formatNumber(c.delivered)), h('td', { class: 'num' }, formatNumber(c.failed)), h('td', { class: 'num' }, formatNumber(c.retrying)))
          })),
        ))
      : null,
    h('dl', { class: 'details progress-words' },
      h('dt', {}, 'Last error'), h('dd', { id: 'last-error' }, lastErrorText(b.last_error)),
      h('dt', {}, 'Next attempt'), h('dd', { id: 'next-attempt' }, nextAttemptText(b.next_attempt_at)),
    ),
  )
}
