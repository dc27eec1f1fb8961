// The Webhooks section of the Settings page: one card per endpoint (status,
// delivery log, actions: webhook-card.js) and the form that adds one, whose
// signing secret is shown once.
import { get, post } from '../api.js'
import { field, h, replace } from '../dom.js'
import { okBox, onSubmit, show } from '../ui.js'
import { eventBoxes, eventFieldset, webhookCard } from './webhook-card.js'

export async function webhooksSection() {
  const slot = h('div', { class: 'slot', id: 'webhook-message' })
  const list = h('div', { class: 'webhook-list' })

  async function reload() {
    // At most 10 endpoints a project (MAX_WEBHOOKS_PER_PROJECT): one page holds them all.
    const { webhooks } = await get('/v1/webhooks?limit=100')
    replace(list, webhooks.length
      ? webhooks.map((w) => webhookCard(w, { onDeleted: async () => {
        await reload()
        show(slot, okBox('Webhook deleted.'))
      } }))
      : h('p', { class: 'empty' }, 'No webhooks. Add one to receive delivered, failed, clicked and dismissed events on your server.'))
  }

  const url = h('input', { name: 'url', type: 'url', required: true, maxlength: '2048', placeholder: 'https://example.com/herald-events', autocomplete: 'off' })
  const boxes = eventBoxes('event', ['delivered', 'failed', 'clicked', 'dismissed'])
  const form = h('form', { class: 'inline-form', id: 'add-webhook', novalidate: true },
    h('h3', {}, 'Add a webhook'),
    field('Endpoint URL', url, 'HTTPS, on a public address. Deliveries are signed (Standard Webhooks) with the secret shown once below.'),
    eventFieldset('Events', boxes),
    h('button', { type: 'submit' }, 'Add webhook'),
  )
  onSubmit(form, slot, async () => {
    const events = boxes.filter((b) => b.checked).map((b) => b.value)
    const created = await post('/v1/webhooks', { url: url.value.trim(), events })
    url.value = ''
    await reload()
    show(slot, h('div', { class: 'message ok secret', role: 'status' },
      h('p', {}, 'Webhook added. Its signing secret is shown this once: copy it into your server’s configuration now.'),
      h('label', { for: 'webhook-secret' }, 'Signing secret'),
      h('input', { id: 'webhook-secret', class: 'mono', readonly: true, value: created.secret, onfocus: (e) => e.target.select() })))
  })

  await reload()
  return h('section', { class: 'card', 'aria-labelledby': 'webhooks-title' },
    h('h2', { id: 'webhooks-title' }, 'Webhooks'),
    h('p', { class: 'hint' }, 'Each endpoint shows its status and its delivery attempts of the last 7 days, newest first.'),
    slot, list, form)
}
