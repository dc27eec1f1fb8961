// Compose: every field of POST /v1/send, a live preview of the notification,
// and the send itself (marked X-Herald-Source: dashboard). After sending, the
// broadcast's page shows its counts climbing.
import { get, post } from '../api.js'
import { append, field, h, readAsDataUrl } from '../dom.js'
import { onSubmit, pageHeading } from '../ui.js'

const PLAN_ORDER = ['free', 'hobby', 'plus', 'pro', 'max']
const atLeast = (plan, min) => PLAN_ORDER.indexOf(plan) >= PLAN_ORDER.indexOf(min)

/** A picked file or a typed URL: the file wins, as a data URL Herald then hosts. */
function mediaInput(label, name, hint) {
  const url = h('input', { name, type: 'text', inputmode: 'url', placeholder: 'https://…', autocomplete: 'off' })
  const file = h('input', { name: `${name}_file`, type: 'file', accept: 'image/png,image/jpeg,image/webp' })
  let dataUrl = null
  file.addEventListener('change', async () => {
    dataUrl = file.files[0] ? await readAsDataUrl(file.files[0]) : null
    url.dispatchEvent(new Event('input', { bubbles: true }))
  })
  return {
    nodes: [field(label, url, hint), field(`…or upload an ${name} file`, file)],
    value: () => dataUrl ?? (url.value.trim() || undefined),
  }
}

export async function render(view, session) {
  const me = session.me
  const { groups } = await get('/v1/groups')
  const slot = h('div', { class: 'slot', id: 'compose-message' })

  const title = h('input', { name: 'title', required: true, maxlength: '256', autocomplete: 'off' })
  const body = h('textarea', { name: 'body', required: true, maxlength: '2048', rows: '3' })
  const url = h('input', { name: 'url', type: 'text', maxlength: '2048', placeholder: '/', autocomplete: 'off' })
  const icon = mediaInput('Icon', 'icon', me.default_icon ? 'Square. Empty: the project’s default icon.' : 'Square, PNG/JPEG/WebP, at most 256 KB.')
  const image = mediaInput('Image', 'image', atLeast(me.plan, 'hobby') ? 'A large banner, at most 1 MB.' : 'Needs the Hobby plan or higher.')

  const targetType = h('select', { name: 'target' },
    h('option', { value: 'all' }, 'All active subscribers'),
    h('option', { value: 'user' }, 'One user (all their devices)'),
    h('option', { value: 'group', disabled: groups.length === 0 }, 'A group'))
  const externalId = h('input', { name: 'external_id', maxlength: '256', pattern: '[A-Za-z0-9_\\-]+', autocomplete: 'off' })
  const groupSelect = h('select', { name: 'group_id' }, groups.map((g) => h('option', { value: g.id }, `${g.name} (${g.member_count})`)))
  const userField = field('External id', externalId, 'Your user id: A-Z a-z 0-9 _ - only.')
  const groupField = field('Group', groupSelect)

  const ttl = h('input', { name: 'ttl', type: 'number', min: '0', max: '2419200', step: '1', value: '86400' })
  const urgency = h('select', { name: 'urgency' }, ['very-low', 'low', 'normal', 'high'].map((u) => h('option', { value: u, selected: u === 'normal' }, u)))
  const topic = h('input', { name: 'topic', maxlength: '32', pattern: '[A-Za-z0-9_\\-]+', autocomplete: 'off' })
  const schedule = h('input', { name: 'scheduled_at', type: 'datetime-local' })

  // The preview: roughly what a desktop browser shows.
  const pTitle = h('strong', { class: 'n-title' })
  const pBody = h('span', { class: 'n-body' })
  const pSite = h('span', { class: 'n-site' })
  const pIcon = h('img', { class: 'n-icon', alt: '', width: '48', height: '48' })
  const pImage = h('img', { class: 'n-image', alt: '' })
  const preview = h('div', { class: 'notification', id: 'preview', 'aria-label': 'Preview of the notification' },
    h('div', { class: 'n-row' }, pIcon, h('div', { class: 'n-text' }, pSite, pTitle, pBody)), pImage)

  function updatePreview() {
    pTitle.textContent = title.value || 'Title'
    pBody.textContent = body.value || 'Body text'
    let where = location.host
    try {
      where = new URL(url.value || '/', me.domain ? `https://${me.domain}` : location.origin).host
    } catch {
      // Not a URL yet: keep the default.
    }
    pSite.textContent = where
    const iconSrc = icon.value() ?? me.default_icon
    pIcon.hidden = !iconSrc
    if (iconSrc) pIcon.src = iconSrc
    const imageSrc = image.value()
    pImage.hidden = !imageSrc
    if (imageSrc) pImage.src = imageSrc
    userField.hidden = targetType.value !== 'user'
    groupField.hidden = targetType.value !== 'group'
    externalId.required = targetType.value === 'user'
  }

  const form = h('form', { class: 'compose', id: 'compose-form', novalidate: true },
    h('fieldset', { class: 'card' }, h('legend', {}, 'Notification'),
      field('Title', title, 'Up to 256 characters.'),
      field('Body', body, 'Up to 2048 characters.'),
      field('Link', url, 'Opened on click: a path on your site (/sale) or a full URL. Default /.'),
      icon.nodes, image.nodes,
    ),
    h('fieldset', { class: 'card' }, h('legend', {}, 'Audience'),
      field('Send to', targetType), userField, groupField),
    h('fieldset', { class: 'card' }, h('legend', {}, 'Delivery'),
      field('Time to live (seconds)', ttl, 'How long the push service keeps trying an offline device: 0 to 2419200 (4 weeks). Default 86400 (a day).'),
      field('Urgency', urgency),
      field('Topic (optional)', topic, 'A newer broadcast with the same topic replaces an undelivered older one. Up to 32 of A-Z a-z 0-9 _ -.'),
      field('Schedule (optional)', schedule, atLeast(me.plan, 'plus') ? 'Your local time, within 90 days. Empty: send now.' : 'Scheduling needs the Plus plan or higher. Empty: send now.'),
    ),
    slot,
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', id: 'send-button' }, 'Send')),
  )
  form.addEventListener('input', updatePreview)
  form.addEventListener('change', updatePreview)
  schedule.addEventListener('input', () => {
    form.querySelector('#send-button').textContent = schedule.value ? 'Schedule' : 'Send'
  })

  onSubmit(form, slot, async () => {
    const request = {
      target: targetType.value === 'user' ? { type: 'user', external_id: externalId.value.trim() }
        : targetType.value === 'group' ? { type: 'group', group_id: groupSelect.value }
          : { type: 'all' },
      notification: { title: title.value, body: body.value },
    }
    if (url.value.trim()) request.notification.url = url.value.trim()
    if (icon.value()) request.notification.icon = icon.value()
    if (image.value()) request.notification.image = image.value()
    if (ttl.value !== '') request.ttl = Number(ttl.value)
    if (urgency.value !== 'normal') request.urgency = urgency.value
    if (topic.value.trim()) request.topic = topic.value.trim()
    if (schedule.value) request.scheduled_at = new Date(schedule.value).getTime()
    const sent = await post('/v1/send', request, { headers: { 'X-Herald-Source': 'dashboard' } })
    session.go(`#/broadcasts/${sent.broadcast_id}`, sent.scheduled_at ? 'Broadcast scheduled.' : 'Broadcast sent. Counts update as it goes out.')
  })

  append(view, 
    pageHeading('Compose'),
    h('div', { class: 'compose-layout' },
      form,
      h('aside', { class: 'preview-pane', 'aria-labelledby': 'preview-title' },
        h('h2', { id: 'preview-title' }, 'Preview'), preview,
        h('p', { class: 'hint' }, 'Each browser and system draws notifications its own way; this is an approximation.')),
    ),
  )
  updatePreview()
}
