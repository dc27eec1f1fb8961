// One webhook endpoint on the Settings page: its status (and why it is
// disabled), its delivery log, and what an owner does to debug it: send a
// test event, edit the URL and events, disable or enable, rotate the secret,
// delete. Every action goes through the /v1/webhooks routes and redraws the
// card from their answer.
import { del, patch, post } from '../api.js'
import { field, formatTime, h, replace } from '../dom.js'
import { confirmButton, errorBox, okBox, show, statusBadge } from '../ui.js'
import { attemptResult, deliveryLog } from './webhook-log.js'

// shown (issue 25) is listed, never ticked by default: it is opt-in (docs/funnel.md).
export const EVENTS = ['delivered', 'failed', 'clicked', 'dismissed', 'shown']

/** The event checkboxes of a form; `checked` lists the ones ticked. */
export function eventBoxes(idPrefix, checked) {
  return EVENTS.map((event) => h('input', { type: 'checkbox', name: 'events', value: event, checked: checked.includes(event), id: `${idPrefix}-${event}` }))
}

export function eventFieldset(legend, boxes) {
  return h('fieldset', { class: 'checks' }, h('legend', {}, legend),
    boxes.map((box) => h('label', { class: 'check', for: box.id }, box, ` ${box.value}`)))
}

function statusLine(w) {
  if (w.status === 'active') return h('p', { class: 'webhook-status' }, statusBadge('active'), ' Deliveries are sent as events happen.')
  return h('p', { class: 'webhook-status' }, statusBadge('disabled'), ' ',
    h('span', {}, `Since ${formatTime(w.disabled_at)}: ${w.disabled_reason ?? 'disabled'}. Nothing is sent; pending deliveries wait until it is enabled again.`))
}

function testMessage(result) {
  const how = attemptResult(result)
  return result.delivered
    ? okBox(`Test event delivered: ${how}.`)
    : errorBox(`Test event not delivered: ${how}. The attempt is in the log below.`)
}

function secretMessage(webhookId, rotated) {
  return h('div', { class: 'message ok secret', role: 'status' },
    h('p', {}, 'New signing secret, shown this once: copy it into your server’s configuration now.'),
    h('label', { for: `secret-${webhookId}` }, 'New signing secret'),
    h('input', { id: `secret-${webhookId}`, class: 'mono', readonly: true, value: rotated.secret, onfocus: (e) => e.target.select() }),
    h('p', { class: 'hint' }, `The old secret keeps signing deliveries too for 24 hours (until ${formatTime(rotated.previous_secret_expires_at)}), beside the new one, so your server can switch without losing an event.`))
}

/** The card of one webhook; onDeleted is called once it is gone. */
export function webhookCard(webhook, { onDeleted }) {
  let w = webhook
  const slot = h('div', { class: 'slot webhook-message' })
  const editSlot = h('div')
  const head = h('div')
  const log = deliveryLog(w)
  const card = h('article', { class: 'card webhook', 'data-webhook-id': w.id, 'aria-label': `Webhook ${w.url}` }, head, slot, editSlot, log.element)

  /** Runs an action with its button disabled; its error goes to the card's message slot. */
  async function act(button, action) {
    if (button) button.disabled = true
    show(slot, null)
    try {
      await action()
    } catch (error) {
      show(slot, errorBox(error))
    } finally {
      if (button) button.disabled = false
    }
  }

  function drawHead() {
    const enabled = w.status === 'active'
    replace(head,
      h('h3', { class: 'mono break' }, w.url),
      statusLine(w),
      h('p', { class: 'small' }, `Events: ${w.events.join(', ')}`),
      h('div', { class: 'webhook-actions' },
        h('button', { type: 'button', class: 'secondary', onclick: (e) => act(e.currentTarget, async () => {
          show(slot, h('p', { class: 'loading', role: 'status' }, 'Sending a test event…'))
          show(slot, testMessage(await post(`/v1/webhooks/${w.id}/test`)))
          await log.reload()
        }) }, 'Send test event'),
        h('button', { type: 'button', class: 'secondary', onclick: openEdit }, 'Edit'),
        h('button', { type: 'button', class: 'secondary', onclick: (e) => act(e.currentTarget, async () => {
          w = await patch(`/v1/webhooks/${w.id}`, { enabled: !enabled })
          drawHead()
          show(slot, okBox(enabled
            ? 'Webhook disabled: nothing is sent until you enable it again.'
            : 'Webhook enabled: deliveries resume, with those still within their retry window.'))
        }) }, enabled ? 'Disable' : 'Enable'),
        confirmButton('Rotate secret', 'Replace the signing secret?', () => act(null, async () => {
          show(slot, secretMessage(w.id, await post(`/v1/webhooks/${w.id}/rotate-secret`)))
          drawHead()
        }), { danger: false }),
        confirmButton('Delete', `Stop sending events to ${w.url}?`, () => act(null, async () => {
          await del(`/v1/webhooks/${w.id}`)
          onDeleted(w)
        })),
      ),
    )
  }

  function openEdit() {
    const url = h('input', { type: 'url', required: true, maxlength: '2048', value: w.url, autocomplete: 'off' })
    const boxes = eventBoxes(`edit-${w.id}`, w.events)
    const form = h('form', { class: 'inline-form edit-webhook', novalidate: true },
      field('New URL', url, 'HTTPS, on a public address; checked as when it was added.'),
      eventFieldset('Events to send', boxes),
      h('button', { type: 'submit' }, 'Save webhook'), ' ',
      h('button', { type: 'button', class: 'secondary', onclick: () => replace(editSlot) }, 'Cancel'),
    )
    form.addEventListener('submit', (event) => {
      event.preventDefault()
      act(form.querySelector('button[type=submit]'), async () => {
        const events = boxes.filter((b) => b.checked).map((b) => b.value)
        if (!events.length) throw new Error('Pick at least one event to send.')
        w = await patch(`/v1/webhooks/${w.id}`, { url: url.value.trim(), events })
        replace(editSlot)
        drawHead()
        show(slot, okBox('Webhook saved.'))
      })
    })
    replace(editSlot, form)
    url.focus()
  }

  drawHead()
  log.reload()
  return card
}
