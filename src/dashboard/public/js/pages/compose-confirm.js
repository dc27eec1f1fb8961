// The step between "Send" and sending: what a dry run of the same request
// (POST /v1/send with "dry_run": true) says — the audience, by push service,
// the size of each push and the warnings — and the button that really sends.
// An audience of 0 needs a second, explicit press: a broadcast to nobody is
// almost always a wrong target.
import { formatNumber, formatTime, h, replace } from '../dom.js'
import { personalizationSummary } from './compose-personal.js'

const SERVICE_NAMES = { fcm: 'FCM', mozilla: 'Mozilla', apple: 'Apple', wns: 'Microsoft', other: 'other' }

function subscribers(n) {
  return `${formatNumber(n)} subscriber${n === 1 ? '' : 's'}`
}

/**
 * dryRun: the 200 answer. scheduled: whether the request has scheduled_at.
 * onSend(): sends for real (its errors are shown by the caller). onBack(): closes this.
 */
export function confirmation(dryRun, { scheduled, onSend, onBack }) {
  const { audience, warnings } = dryRun
  const verb = scheduled ? 'Schedule' : 'Send'
  const services = Object.entries(dryRun.by_push_service).filter(([, n]) => n > 0)
  const actions = h('div', { class: 'form-actions confirm-actions' })
  const back = () => h('button', { type: 'button', class: 'secondary', id: 'confirm-back', onclick: onBack }, 'Back to editing')

  async function send(button) {
    button.disabled = true
    try {
      await onSend()
    } finally {
      button.disabled = false
    }
  }

  function firstStep() {
    if (audience > 0) {
      const go = h('button', { type: 'button', id: 'confirm-send', onclick: () => send(go) },
        `${verb} ${scheduled ? 'for' : 'to'} ${subscribers(audience)}`)
      replace(actions, go, ' ', back())
      return
    }
    // Zero: the first press only asks again, in words.
    replace(actions,
      h('button', { type: 'button', class: 'danger', id: 'confirm-send', onclick: secondStep }, `${verb} to nobody…`), ' ', back())
  }

  function secondStep() {
    const yes = h('button', { type: 'button', class: 'danger', id: 'confirm-send-empty', onclick: () => send(yes) }, `Yes, ${verb.toLowerCase()} to 0 subscribers`)
    replace(actions,
      h('p', { class: 'question', id: 'confirm-empty-question' },
        scheduled
          ? 'Nobody is subscribed to this target now. Schedule it anyway? It reaches whoever is subscribed when it fires.'
          : 'Nobody will receive this broadcast. Send it anyway?'),
      yes, ' ', h('button', { type: 'button', class: 'secondary', onclick: () => {
        firstStep()
        actions.querySelector('#confirm-send').focus()
      } }, 'Cancel'))
    yes.focus()
  }

  firstStep()
  return h('section', { class: 'card confirmation', id: 'send-confirmation', 'aria-labelledby': 'confirm-title' },
    h('h2', { id: 'confirm-title', tabindex: '-1' }, `${verb} this broadcast?`),
    h('p', { id: 'confirm-audience' },
      audience === 0 ? 'Audience: nobody. ' : `Audience: ${subscribers(audience)}`,
      services.length ? ` (${services.map(([key, n]) => `${formatNumber(n)} ${SERVICE_NAMES[key] ?? key}`).join(', ')}).` : audience ? '.' : '',
      scheduled ? ' Counted now; it reaches whoever is subscribed when it fires.' : ''),
    waitingText(dryRun),
    h('p', { class: 'hint' }, `Each push is ${formatNumber(dryRun.payload_bytes)} bytes${dryRun.fetch ? ', a stub: the service worker fetches the notification from Herald' : ''}.`),
    personalizationSummary(dryRun.personalization),
    warnings.length
      ? h('div', { class: 'warnings' }, h('h3', {}, warnings.length === 1 ? 'One thing to check' : `${warnings.length} things to check`),
          h('ul', { id: 'confirm-warnings' }, warnings.map((w) => h('li', { 'data-warning': w.code }, w.message))))
      : h('p', { id: 'confirm-warnings' }, 'No warnings.'),
    actions,
  )
}

/** Local time and quiet hours (docs/timing.md): who would wait, until when; null when everyone gets it at once. */
function waitingText(dryRun) {
  const waiting = dryRun.waiting ?? []
  if (!waiting.length && !dryRun.skipped) return null
  const held = waiting.filter((w) => w.reason === 'quiet_hours').reduce((sum, w) => sum + w.count, 0)
  const local = waiting.filter((w) => w.reason === 'local_time').reduce((sum, w) => sum + w.count, 0)
  const parts = []
  if (local) parts.push(`${subscribers(local)} at their local time, from ${formatTime(waiting.find((w) => w.reason === 'local_time').at)}`)
  if (held) parts.push(`${subscribers(held)} held by quiet hours until they end`)
  if (dryRun.skipped) parts.push(`${subscribers(dryRun.skipped)} skipped: their time has passed`)
  return h('p', { id: 'confirm-waiting' }, `Waiting: ${parts.join('; ')}.`)
}
