// Building DOM without innerHTML: every value from the API becomes a text
// node, so a group called "<img onerror=…>" is shown, never run.

/**
 * h('a', { href: '#/groups', class: 'x', onclick: fn }, 'text', child, [more])
 * Attributes: on* take functions; true sets a boolean attribute; false, null
 * and undefined leave it out.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === false || value === null || value === undefined) continue
    if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value)
    else if (name === 'value' && 'value' in el) el.value = value
    else if (name === 'checked' || name === 'selected') el[name] = Boolean(value)
    else el.setAttribute(name, value === true ? '' : String(value))
  }
  append(el, children)
  return el
}

/** Appends children, flattening arrays and leaving out null, undefined and false (Element.append would write "null"). */
export function append(parent, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)))
  }
  return parent
}

/** SVG elements need their namespace. */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag)
  for (const [name, value] of Object.entries(attrs)) if (value !== null && value !== undefined) el.setAttribute(name, String(value))
  append(el, children)
  return el
}

/** Replaces an element's children, with append's rules. */
export function replace(el, ...children) {
  el.replaceChildren()
  return append(el, children)
}

// Times show their zone (issue 24): this browser's, named after the time ("2:05 PM UTC").
const dateTime = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short' })
const integer = new Intl.NumberFormat()

export function formatTime(ms) {
  return ms === null || ms === undefined ? '—' : dateTime.format(new Date(ms))
}

const thisYear = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' })
const otherYear = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric' })

/** For table cells: 'Nov 23, 11:35 AM' this year, 'Nov 23, 2025' before; the full time in the title. */
export function shortTime(ms) {
  if (ms === null || ms === undefined) return '—'
  const date = new Date(ms)
  const text = date.getFullYear() === new Date().getFullYear() ? thisYear.format(date) : otherYear.format(date)
  return h('time', { datetime: date.toISOString(), title: dateTime.format(date) }, text)
}

/** A time in a given IANA zone, with that zone's short name ("Mar 8, 2026, 9:00 AM EDT"). */
export function formatTimeIn(ms, timeZone) {
  if (ms === null || ms === undefined) return '—'
  try {
    return new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short', timeZone }).format(new Date(ms))
  } catch {
    return formatTime(ms)
  }
}

export function formatNumber(n) {
  return integer.format(n)
}

/** Click-through rate: clicks per delivered push; a dash before anything was delivered. */
export function formatRate(clicked, delivered) {
  if (!delivered) return '—'
  return `${((100 * clicked) / delivered).toFixed(1)}%`
}

/** <label> + control + optional hint, wired by id for screen readers. */
let nextId = 0
export function field(labelText, control, hint) {
  const id = control.id || `f${++nextId}`
  control.id = id
  const hintEl = hint ? h('small', { class: 'hint', id: `${id}-hint` }, hint) : null
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id)
  return h('div', { class: 'field' }, h('label', { for: id }, labelText), control, hintEl)
}

/** A file picked from disk as a data: URL (icons and images Herald then hosts). */
export function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader()
    reader.onload = () => resolve(String(reader.result))
    reader.onerror = () => reject(reader.error)
    reader.readAsDataURL(file)
  })
}
