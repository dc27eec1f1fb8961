// The compose form's action buttons (notification.actions, at most 2): each
// a text, an id (what clicks on it are counted under) and an optional link.
// A button with nothing typed is left out of the send.
import { h } from '../dom.js'
import { checkedField } from './compose-fields.js'
import * as limits from './compose-limits.js'

function buttonFields(n) {
  const i = n - 1
  return {
    title: checkedField(`Button ${n} text`, h('input', { name: `action_${n}_title`, autocomplete: 'off' }), { max: limits.ACTION_TITLE_MAX }),
    action: checkedField(`Button ${n} id`, h('input', { name: `action_${n}_id`, autocomplete: 'off' }),
      { hint: 'Clicks on the button are counted under this id. A-Z a-z 0-9 _ - only.' }),
    url: checkedField(`Button ${n} opens (optional)`, h('input', { name: `action_${n}_url`, autocomplete: 'off', placeholder: '/' }),
      { hint: 'A path on your site (/sale) or a full URL. Default: the notification’s link.' }),
    paths: { [`notification.actions.${i}.title`]: 'title', [`notification.actions.${i}.action`]: 'action', [`notification.actions.${i}.url`]: 'url' },
  }
}

export function actionInputs() {
  const buttons = Array.from({ length: limits.MAX_ACTIONS }, (_, i) => buttonFields(i + 1))
  const typed = (b) => ({ title: b.title.control.value.trim(), action: b.action.control.value.trim(), url: b.url.control.value.trim() })

  return {
    nodes: buttons.map((b) => h('div', { class: 'action-fields' }, b.title.node, b.action.node, b.url.node)),
    /** API path → field, for the server's refusals. */
    fields: Object.fromEntries(buttons.flatMap((b) => Object.entries(b.paths).map(([path, key]) => [path, b[key]]))),
    /** Runs the checks into the fields; returns the errors. */
    check() {
      const errors = []
      const ids = new Set()
      buttons.forEach((b, i) => {
        const value = typed(b)
        b.title.count(limits.chars(value.title))
        const [titleError, idError, linkError] = limits.checkAction(i + 1, value)
        const sameId = !idError && value.action && ids.has(value.action) ? `Button ${i + 1} id: the other button has this id already; each must be unique.` : null
        if (value.action) ids.add(value.action)
        b.title.setError(titleError)
        b.action.setError(idError ?? sameId)
        b.url.setError(linkError)
        errors.push(...[titleError, idError ?? sameId, linkError].filter(Boolean))
      })
      return errors
    },
    /** notification.actions as sent, or undefined when no button is typed. */
    value() {
      const actions = buttons.map(typed).filter((a) => a.title || a.action || a.url)
        .map((a) => (a.url ? a : { title: a.title, action: a.action }))
      return actions.length ? actions : undefined
    },
    /** [{ title, action, url }] as typed, for the draft. */
    state: () => buttons.map((b) => ({ title: b.title.control.value, action: b.action.control.value, url: b.url.control.value })),
    restore(saved) {
      const list = Array.isArray(saved) ? saved : []
      const text = (x) => (typeof x === 'string' ? x : '')
      buttons.forEach((b, i) => {
        b.title.control.value = text(list[i]?.title)
        b.action.control.value = text(list[i]?.action)
        b.url.control.value = text(list[i]?.url)
      })
    },
    /** The buttons' texts, for the preview. */
    titles: () => buttons.map((b) => b.title.control.value.trim()).filter(Boolean),
  }
}
