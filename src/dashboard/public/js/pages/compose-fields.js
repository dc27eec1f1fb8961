// Form fields of the compose page that carry their own checks: a label, the
// control, a hint, a counter ("23/256") and an error that names the field,
// all tied to the control by aria-describedby. Also the icon/image input (a
// typed URL or a picked file), and the mapping of a server refusal to fields.
import { h, readAsDataUrl } from '../dom.js'
import { checkMediaFile, checkMediaUrl, checkSquare, sizeText } from './compose-limits.js'

/** A field with an error slot and, with `max`, a counter. */
export function checkedField(label, control, { hint, max } = {}) {
  const id = control.id || `compose-${control.name}`
  control.id = id
  const hintEl = hint ? h('small', { class: 'hint', id: `${id}-hint` }, hint) : null
  const counter = max ? h('small', { class: 'counter', id: `${id}-count` }) : null
  // aria-live: an error that appears while typing or after picking a file is read out.
  const error = h('p', { class: 'field-error', id: `${id}-error`, 'aria-live': 'polite' })
  control.setAttribute('aria-describedby', [hintEl, counter, error].filter(Boolean).map((el) => el.id).join(' '))
  const node = h('div', { class: 'field' }, h('label', { for: id }, label), control,
    hintEl || counter ? h('div', { class: 'field-notes' }, hintEl, counter) : null, error)
  return {
    node,
    control,
    label,
    count(n) {
      if (!counter) return
      counter.textContent = `${n}/${max}`
      counter.classList.toggle('over', n > max)
    },
    setError(message) {
      error.textContent = message ?? ''
      if (message) control.setAttribute('aria-invalid', 'true')
      else control.removeAttribute('aria-invalid')
    },
    error: () => error.textContent || null,
  }
}

/**
 * An icon or image: a typed HTTPS URL or a picked file; the file wins, sent as
 * a data URL that Herald then hosts. A file is checked (type, size, and for
 * icons squareness) when picked, before it is read into the page.
 */
export function mediaInput(label, name, { hint, maxBytes, square, onChange }) {
  const url = h('input', { name, type: 'text', inputmode: 'url', placeholder: 'https://…', autocomplete: 'off' })
  const file = h('input', { name: `${name}_file`, type: 'file', accept: 'image/png,image/jpeg,image/webp' })
  const urlField = checkedField(label, url, { hint })
  const fileField = checkedField(`…or upload an ${name} file`, file)
  const picked = h('p', { class: 'picked hint', id: `compose-${name}-picked` })
  fileField.node.append(picked)
  /** { name, data } of the file in use, or null. */
  let chosen = null
  let fileError = null

  function showPicked() {
    picked.replaceChildren()
    if (!chosen) return
    picked.append(`Using ${chosen.name} (${sizeText(Math.floor((chosen.data.length - chosen.data.indexOf(',') - 1) * 3 / 4))}). `,
      h('button', { type: 'button', class: 'secondary small', onclick: () => {
        file.value = ''
        set(null, null)
      } }, `Remove ${name} file`))
  }

  function set(next, error) {
    chosen = next
    fileError = error
    showPicked()
    // Tells the form: the preview, the draft and the checks follow.
    onChange()
  }

  file.addEventListener('change', async () => {
    const f = file.files[0]
    if (!f) return set(null, null)
    const problem = checkMediaFile(label, f, maxBytes)
    if (problem) return set(null, problem)
    const data = await readAsDataUrl(f)
    if (square) {
      const img = new Image()
      img.src = data
      try {
        await img.decode()
      } catch {
        return set(null, `${label}: the file is not an image a browser can read.`)
      }
      const notSquare = checkSquare(label, img.naturalWidth, img.naturalHeight)
      if (notSquare) return set(null, notSquare)
    }
    set({ name: f.name, data }, null)
  })

  return {
    nodes: [urlField.node, fileField.node],
    fields: { url: urlField, file: fileField },
    value: () => chosen?.data ?? (url.value.trim() || undefined),
    /** Runs the checks into the fields; returns the errors. */
    check() {
      const typed = chosen ? null : checkMediaUrl(label, url.value.trim())
      urlField.setError(typed)
      fileField.setError(fileError)
      return [typed, fileError].filter(Boolean)
    },
    state: () => ({ url: url.value, file: chosen }),
    restore(urlValue, fileValue) {
      url.value = urlValue ?? ''
      chosen = fileValue && typeof fileValue.data === 'string' ? fileValue : null
      showPicked()
    },
  }
}

/** Error codes that are about one field, when the server gives no issues. */
const CODE_PATHS = {
  invalid_icon: 'notification.icon',
  invalid_image: 'notification.image',
  image_requires_upgrade: 'notification.image',
  invalid_scheduled_at: 'scheduled_at',
  scheduling_requires_upgrade: 'scheduled_at',
  group_not_found: 'target.group_id',
}

/** Ajv's wording for an empty required string, in plain words. */
function plain(message) {
  if (/fewer than 1 characters|must have required property/.test(message)) return 'required.'
  return message
}

/**
 * Puts a refusal of POST /v1/send on the fields it is about. `fields` maps an
 * API path (notification.title) to a checked field. Returns the first field
 * that got an error, to move focus there.
 */
export function showServerErrors(error, fields) {
  const issues = error.issues.length ? error.issues : CODE_PATHS[error.code] ? [{ path: CODE_PATHS[error.code], message: error.message }] : []
  let first = null
  for (const issue of issues) {
    // A path inside a field (target.filter.and.1.tag) lands on the field, which keeps the rest of the path.
    const key = fields[issue.path] ? issue.path : Object.keys(fields).find((k) => issue.path.startsWith(`${k}.`))
    const f = key && fields[key]
    if (!f) continue
    // "notification.icon: The icon is …" → "Icon: The icon is …"
    const text = String(issue.message).replace(new RegExp(`^${issue.path.replaceAll('.', '\\.')}:\\s*`), '')
    f.setError(`${f.label}: ${key === issue.path ? '' : `${issue.path.slice(key.length + 1)}: `}${plain(text)}`)
    first ??= f
  }
  return first
}
