// Compose: every field of POST /v1/send, a live preview of the notification,
// and the send itself (marked X-Herald-Source: dashboard). Limits are checked
// as the owner types (compose-limits.js); "Send" first asks Herald for a dry
// run and shows its audience and warnings (compose-confirm.js); only the
// button there sends. The form is kept as a draft per project
// (compose-draft.js) until a send succeeds. After sending, the broadcast's page
// shows its counts climbing.
import { get, post } from '../api.js'
import { append, field, h, replace } from '../dom.js'
import { confirmButton, errorBox, okBox, onSubmit, pageHeading, show } from '../ui.js'
import { confirmation } from './compose-confirm.js'
import { clearDraft, loadDraft, saveDraft } from './compose-draft.js'
import { sendTestButton } from './test-devices.js'
import { actionInputs } from './compose-actions.js'
import { checkedField, mediaInput, showServerErrors } from './compose-fields.js'
import { segmentInput } from './compose-segment.js'
import { personalInputs } from './compose-personal.js'
import * as limits from './compose-limits.js'
import { timingInputs } from './compose-timing.js'

const SOURCE = { headers: { 'X-Herald-Source': 'dashboard' } }

export async function render(view, session, { flash } = {}) {
  const me = session.me
  if (!session.can('broadcasts:send')) {
    replace(view, pageHeading('Compose'), h('p', { id: 'cannot-send' }, 'Your role in this project does not allow sending. An owner can change it on the Members page.'))
    return
  }
  const [{ groups }, { templates }] = await Promise.all([get('/v1/groups'), get('/v1/templates')])
  const slot = h('div', { class: 'slot', id: 'compose-message' })
  const confirmSlot = h('div', { id: 'confirm-slot' })
  const draftNote = h('p', { class: 'hint', id: 'draft-note', 'aria-live': 'polite' })

  const title = checkedField('Title', h('input', { name: 'title', required: true, autocomplete: 'off' }), { max: limits.TITLE_MAX, hint: 'Browsers show about the first 50 characters.' })
  const body = checkedField('Body', h('textarea', { name: 'body', required: true, rows: '3' }), { max: limits.BODY_MAX, hint: 'Browsers show about the first 120 characters.' })
  const url = checkedField('Link', h('input', { name: 'url', type: 'text', placeholder: '/', autocomplete: 'off' }), { hint: 'Opened on click: a path on your site (/sale) or a full URL. Default /.' })
  const onChange = () => form.dispatchEvent(new Event('input'))
  const icon = mediaInput('Icon', 'icon', {
    hint: me.default_icon ? 'Square, PNG/JPEG/WebP, at most 256 KB. Empty: the project’s default icon.' : 'Square, PNG/JPEG/WebP, at most 256 KB.',
    maxBytes: limits.ICON_BYTES, square: true, onChange,
  })
  const image = mediaInput('Image', 'image', {
    hint: limits.atLeast(me.plan, 'hobby') ? 'A large banner, PNG/JPEG/WebP, at most 1 MB.' : 'Needs the Hobby plan or higher.',
    maxBytes: limits.IMAGE_BYTES, square: false, onChange,
  })

  const targetType = h('select', { name: 'target' },
    h('option', { value: 'all' }, 'All active subscribers'),
    h('option', { value: 'user' }, 'One user (all their devices)'),
    h('option', { value: 'group', disabled: groups.length === 0 }, 'A group'),
    h('option', { value: 'segment' }, 'A segment (a filter)'))
  const externalId = checkedField('External id', h('input', { name: 'external_id', autocomplete: 'off' }), { hint: 'Your user id: A-Z a-z 0-9 _ - only.' })
  const groupSelect = h('select', { name: 'group_id' }, groups.map((g) => h('option', { value: g.id }, `${g.name} (${g.member_count})`)))
  const groupField = checkedField('Group', groupSelect)
  const segment = segmentInput(new Map(groups.map((g) => [g.id, g.name])), groups)
  const actions = actionInputs()
  const personal = personalInputs({
    templates,
    canSave: session.can('templates:write'),
    onUse(template) {
      const n = template.notification
      title.control.value = n.title
      body.control.value = n.body
      url.control.value = n.url ?? ''
      icon.restore(n.icon ?? '', null)
      image.restore(n.image ?? '', null)
      actions.restore(n.actions ?? [])
    },
    current: () => buildRequest().notification,
    onChange: () => form.dispatchEvent(new Event('input')),
  })

  const ttl = checkedField('Time to live (seconds)', h('input', { name: 'ttl', type: 'number', min: '0', max: String(limits.TTL_MAX), step: '1', value: '86400' }),
    { hint: 'How long the push service keeps trying an offline device: 0 to 2419200 (4 weeks). Default 86400 (a day).' })
  const urgency = h('select', { name: 'urgency' }, ['very-low', 'low', 'normal', 'high'].map((u) => h('option', { value: u, selected: u === 'normal' }, u)))
  const topic = checkedField('Topic (optional)', h('input', { name: 'topic', autocomplete: 'off' }),
    { max: limits.TOPIC_MAX, hint: 'A newer broadcast with the same topic replaces an undelivered older one. A-Z a-z 0-9 _ - only.' })
  const throttle = checkedField('Pushes per minute (optional)', h('input', { name: 'throttle_per_minute', type: 'number', min: String(limits.THROTTLE_MIN), max: String(limits.THROTTLE_MAX), step: '1' }),
    { hint: `Spreads the sending (and the clicks on your site): ${limits.THROTTLE_MIN} to ${limits.THROTTLE_MAX}. Empty: as fast as Herald goes.` })
  // Frequency caps (docs/frequency-caps.md): only marketing sends are capped; on_capped says what happens over a cap.
  const sendClass = h('select', { name: 'class', id: 'compose-class' },
    h('option', { value: 'marketing' }, 'Marketing (frequency caps apply)'),
    h('option', { value: 'transactional' }, 'Transactional (never capped, still counted)'))
  const onCapped = h('select', { name: 'on_capped', id: 'compose-on-capped' },
    h('option', { value: 'skip' }, 'Skip them'),
    h('option', { value: 'defer' }, 'Send when their cap allows'))
  const capsHint = (me.frequency_caps ?? []).length
    ? `This project caps pushes per subscriber: ${me.frequency_caps.map((c) => `${c.max} per ${c.per}`).join(', ')}.`
    : 'This project has no frequency caps (Settings): nothing is capped.'
  const onCappedField = field('Subscribers over a cap', onCapped)
  const schedule = checkedField('Schedule (optional)', h('input', { name: 'scheduled_at', type: 'datetime-local' }),
    { hint: limits.atLeast(me.plan, 'plus') ? 'A date and time within 90 days, in the time zone chosen below. Empty: send now.' : 'Scheduling needs the Plus plan or higher. Empty: send now.' })
  const timing = timingInputs(me)

  /** API path → field, for the checks here and for the server's refusals. */
  const fields = {
    'notification.title': title, 'notification.body': body, 'notification.url': url,
    'notification.icon': icon.fields.url, 'notification.image': image.fields.url,
    'target.external_id': externalId, 'target.group_id': groupField,
    'target.filter': segment.field, ...actions.fields, ...personal.fields,
    ttl, topic, throttle_per_minute: throttle, scheduled_at: schedule,
    deliver_at_local: schedule, deliver_on: schedule, past: schedule,
  }

  // The preview: roughly what a desktop browser shows.
  const pTitle = h('strong', { class: 'n-title' })
  const pBody = h('span', { class: 'n-body' })
  const pSite = h('span', { class: 'n-site' })
  const pIcon = h('img', { class: 'n-icon', alt: '', width: '48', height: '48' })
  const pImage = h('img', { class: 'n-image', alt: '' })
  const pActions = h('div', { class: 'n-actions' })
  const preview = h('div', { class: 'notification', id: 'preview', 'aria-label': 'Preview of the notification' },
    h('div', { class: 'n-row' }, pIcon, h('div', { class: 'n-text' }, pSite, pTitle, pBody)), pImage, pActions)

  function updatePreview() {
    pTitle.textContent = title.control.value || 'Title'
    pBody.textContent = body.control.value || 'Body text'
    let where = location.host
    try {
      where = new URL(url.control.value || '/', me.domain ? `https://${me.domain}` : location.origin).host
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
    replace(pActions, actions.titles().map((t) => h('span', { class: 'n-action' }, t)))
    onCappedField.hidden = sendClass.value !== 'marketing'
    externalId.node.hidden = targetType.value !== 'user'
    groupField.node.hidden = targetType.value !== 'group'
    segment.field.node.hidden = targetType.value !== 'segment'
    submit.textContent = schedule.control.value ? 'Schedule' : 'Send'
    timing.update()
  }

  /** Runs every limit into its field; returns the errors. Empty required fields are left to the server's answer. */
  function runChecks() {
    const v = (f) => f.control.value
    title.count(limits.chars(v(title)))
    body.count(limits.chars(v(body)))
    topic.count(limits.chars(v(topic).trim()))
    const pairs = [
      [title, limits.checkTitle(v(title))],
      [body, limits.checkBody(v(body))],
      [url, limits.checkLink(v(url).trim())],
      [externalId, targetType.value === 'user' ? limits.checkExternalId(v(externalId).trim()) : null],
      [segment.field, targetType.value === 'segment' ? segment.check() : null],
      [ttl, limits.checkTtl(v(ttl))],
      [throttle, limits.checkThrottle(v(throttle).trim())],
      [topic, limits.checkTopic(v(topic).trim())],
      [schedule, timing.mode() === 'subscriber' ? limits.checkLocalSchedule(v(schedule), me.plan) : limits.checkSchedule(timing.instant(v(schedule)), me.plan)],
    ]
    for (const [f, error] of pairs) f.setError(error)
    const errors = pairs.map(([, error]) => error).filter(Boolean)
    errors.push(...actions.check())
    errors.push(...personal.check())
    errors.push(...icon.check())
    const imageErrors = image.check()
    if (image.value() && !limits.atLeast(me.plan, 'hobby') && !imageErrors.length) {
      const gate = 'Image: needs the Hobby plan or higher.'
      image.fields.url.setError(gate)
      imageErrors.push(gate)
    }
    errors.push(...imageErrors)
    return errors
  }

  function buildRequest() {
    const request = {
      target: targetType.value === 'user' ? { type: 'user', external_id: externalId.control.value.trim() }
        : targetType.value === 'group' ? { type: 'group', group_id: groupSelect.value }
          : targetType.value === 'segment' ? { type: 'segment', filter: segment.value() }
            : { type: 'all' },
      notification: { title: title.control.value, body: body.control.value },
    }
    if (url.control.value.trim()) request.notification.url = url.control.value.trim()
    if (icon.value()) request.notification.icon = icon.value()
    if (image.value()) request.notification.image = image.value()
    if (actions.value()) request.notification.actions = actions.value()
    if (ttl.control.value !== '') request.ttl = Number(ttl.control.value)
    if (urgency.value !== 'normal') request.urgency = urgency.value
    if (topic.control.value.trim()) request.topic = topic.control.value.trim()
    if (throttle.control.value.trim()) request.throttle_per_minute = Number(throttle.control.value.trim())
    timing.apply(request, schedule.control.value)
    if (sendClass.value === 'transactional') request.class = 'transactional'
    else if (onCapped.value === 'defer') request.on_capped = 'defer'
    return personal.apply(request)
  }

  function draftState() {
    const i = icon.state()
    const m = image.state()
    return {
      title: title.control.value, body: body.control.value, url: url.control.value,
      icon_url: i.url, icon_file: i.file, image_url: m.url, image_file: m.file,
      target: targetType.value, external_id: externalId.control.value, group_id: groupSelect.value, filter: segment.field.control.value,
      actions: actions.state(), ttl: ttl.control.value, urgency: urgency.value, topic: topic.control.value,
      throttle: throttle.control.value, schedule: schedule.control.value, personal: personal.state(), timing: timing.state(),
      class: sendClass.value, on_capped: onCapped.value,
    }
  }

  function restore(d) {
    const text = (x) => (typeof x === 'string' ? x : '')
    title.control.value = text(d.title)
    body.control.value = text(d.body)
    url.control.value = text(d.url)
    icon.restore(text(d.icon_url), d.icon_file)
    image.restore(text(d.image_url), d.image_file)
    if (['all', 'user', 'group', 'segment'].includes(d.target)) targetType.value = d.target
    segment.field.control.value = text(d.filter)
    actions.restore(d.actions)
    externalId.control.value = text(d.external_id)
    if (groups.some((g) => g.id === d.group_id)) groupSelect.value = d.group_id
    if (d.ttl !== undefined) ttl.control.value = text(d.ttl)
    if (['very-low', 'low', 'normal', 'high'].includes(d.urgency)) urgency.value = d.urgency
    topic.control.value = text(d.topic)
    throttle.control.value = text(d.throttle)
    schedule.control.value = text(d.schedule)
    personal.restore(d.personal)
    timing.restore(d.timing)
    if (['marketing', 'transactional'].includes(d.class)) sendClass.value = d.class
    if (['skip', 'defer'].includes(d.on_capped)) onCapped.value = d.on_capped
  }

  /** What "Send a test to me" sends: the draft's title, body and link (a URL icon too), or, without a title and body, Herald's test message. */
  function testDraft() {
    const t = title.control.value.trim()
    const b = body.control.value.trim()
    if (!t || !b) return null
    const iconUrl = icon.state().url
    return { title: t, body: b, ...(url.control.value.trim() ? { url: url.control.value.trim() } : {}), ...(/^https:/.test(iconUrl ?? '') ? { icon: iconUrl } : {}) }
  }

  function closeConfirmation() {
    replace(confirmSlot)
    submit.hidden = false
  }

  const submit = h('button', { type: 'submit', id: 'send-button' }, 'Send')
  const discard = confirmButton('Discard draft', 'Clear every field?', async () => {
    clearDraft(me.id)
    session.go('#/compose', 'Draft discarded.')
  }, { danger: false })
  const form = h('form', { class: 'compose', id: 'compose-form', novalidate: true },
    h('fieldset', { class: 'card' }, h('legend', {}, 'Notification'),
      title.node, body.node, url.node, icon.nodes, image.nodes),
    h('fieldset', { class: 'card', id: 'compose-actions' }, h('legend', {}, 'Action buttons (optional)'), actions.nodes),
    personal.nodes,
    h('fieldset', { class: 'card' }, h('legend', {}, 'Audience'),
      field('Send to', targetType), externalId.node, groupField.node, segment.field.node),
    h('fieldset', { class: 'card' }, h('legend', {}, 'Delivery'),
      ttl.node, field('Urgency', urgency), topic.node, throttle.node, schedule.node, timing.nodes,
      field('Kind of message', sendClass, capsHint), onCappedField),
    slot,
    h('div', { class: 'form-actions' }, submit, ' ', discard, ' ', sendTestButton(session, testDraft, slot)),
    draftNote,
    confirmSlot,
  )

  form.addEventListener('input', () => {
    // What the confirmation showed no longer matches the form.
    if (confirmSlot.firstChild) closeConfirmation()
    updatePreview()
    runChecks()
    const kept = saveDraft(me.id, draftState())
    draftNote.textContent = kept ? 'Draft saved in this browser.' : 'Draft saved in this browser, without the picked files (too large to keep): pick them again after leaving this page.'
  })
  form.addEventListener('change', () => form.dispatchEvent(new Event('input')))

  onSubmit(form, slot, async () => {
    closeConfirmation()
    const problems = runChecks()
    if (problems.length) {
      form.querySelector('[aria-invalid="true"]')?.focus()
      const summary = problems.length === 1 ? 'Fix this before sending:' : `Fix these ${problems.length} things before sending:`
      throw Object.assign(new Error(summary), { issues: problems.map((message) => ({ message })) })
    }
    const request = buildRequest()
    let dryRun
    try {
      dryRun = await post('/v1/send', { ...request, dry_run: true }, SOURCE)
    } catch (error) {
      showServerErrors(error, fields)?.control.focus()
      throw error
    }
    submit.hidden = true
    replace(confirmSlot, confirmation(dryRun, {
      scheduled: request.scheduled_at !== undefined || request.deliver_at_local !== undefined,
      onBack: () => {
        closeConfirmation()
        submit.focus()
      },
      onSend: async () => {
        let sent
        try {
          sent = await post('/v1/send', request, SOURCE)
        } catch (error) {
          closeConfirmation()
          show(slot, errorBox(error))
          showServerErrors(error, fields)?.control.focus()
          return
        }
        clearDraft(me.id)
        session.go(`#/broadcasts/${sent.broadcast_id}`, sent.scheduled_at ? 'Broadcast scheduled.'
          : request.deliver_at_local ? "Broadcast planned: each subscriber gets it at their local time." : 'Broadcast sent. Counts update as it goes out.')
      },
    }))
    confirmSlot.querySelector('h2').focus()
  })

  const draft = loadDraft(me.id)
  if (draft) restore(draft)
  append(view,
    pageHeading('Compose'),
    flash ? okBox(flash) : draft ? okBox('Your draft is back: it is kept in this browser until you send it.') : null,
    h('div', { class: 'compose-layout' },
      form,
      h('aside', { class: 'preview-pane', 'aria-labelledby': 'preview-title' },
        h('h2', { id: 'preview-title' }, 'Preview'), preview,
        h('p', { class: 'hint' }, 'Each browser and system draws notifications its own way; this is an approximation.')),
    ),
  )
  updatePreview()
  runChecks()
}
