// Herald's /v1 routes, same-origin: with a member's session (the HttpOnly
// cookie, which the browser sends by itself, and the CSRF token Herald gave at
// sign-in on every request that changes something), or with the project's API
// key as a bearer token. The key lives in sessionStorage (gone when the tab
// closes) and in memory; it is never put in a URL. The CSRF token lives in
// memory only: after a reload GET /v1/session gives it again.

const STORAGE_KEY = 'herald.apiKey'
let apiKey = null
let csrfToken = null

/** Session mode: requests carry the cookie and, when they change something, this token. */
export function setCsrfToken(token) {
  csrfToken = token
}

export function loadKey() {
  try {
    apiKey = sessionStorage.getItem(STORAGE_KEY)
  } catch {
    apiKey = null
  }
  return apiKey
}

/** The key this tab is signed in with, or null in session mode (the API keys page marks it). */
export function currentKey() {
  return apiKey
}

export function setKey(key) {
  apiKey = key
  try {
    sessionStorage.setItem(STORAGE_KEY, key)
  } catch {
    // Storage refused (private mode): the key stays in memory for this page.
  }
}

export function clearKey() {
  apiKey = null
  csrfToken = null
  try {
    sessionStorage.removeItem(STORAGE_KEY)
  } catch {
    // Nothing stored.
  }
}

/** An error answer from Herald: { error: { code, message, issues? } } (decisions.md §1). */
export class ApiError extends Error {
  constructor(status, code, message, details = {}) {
    super(message)
    this.status = status
    this.code = code
    this.issues = Array.isArray(details.issues) ? details.issues : []
  }
}

/** Called when the key stops working mid-session (revoked): the app signs out. */
let onUnauthorized = () => {}
export function whenUnauthorized(handler) {
  onUnauthorized = handler
}

/**
 * One request. Resolves to the parsed JSON; rejects with an ApiError carrying
 * Herald's own message, or a plain-words one when Herald could not be reached.
 */
export async function api(method, path, body, { key = apiKey, headers = {}, raw = null, blob = false } = {}) {
  const auth = key ? { Authorization: `Bearer ${key}` } : csrfToken && method !== 'GET' ? { 'X-CSRF-Token': csrfToken } : {}
  const init = { method, headers: { Accept: 'application/json', ...auth, ...headers }, cache: 'no-store', credentials: 'same-origin' }
  if (raw) {
    // A file sent as it is (an import), with its own type.
    init.headers['Content-Type'] = raw.type
    init.body = raw.body
  } else if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  let response
  try {
    response = await fetch(path, init)
  } catch {
    throw new ApiError(0, 'network_error', 'Herald could not be reached. Check your connection and try again.')
  }
  if (response.ok && blob) return response.blob()
  const text = await response.text()
  let data = null
  try {
    data = text ? JSON.parse(text) : null
  } catch {
    data = null
  }
  if (response.ok) return data
  const error = data && data.error
  const apiError = error && typeof error.message === 'string'
    ? new ApiError(response.status, error.code, error.message, error)
    : new ApiError(response.status, `http_${response.status}`, `Herald answered ${response.status} ${response.statusText}.`)
  if (response.status === 401 && key === apiKey && !path.startsWith('/v1/session') && !path.startsWith('/v1/invites')) onUnauthorized(apiError)
  throw apiError
}

export const get = (path, options) => api('GET', path, undefined, options)
export const post = (path, body, options) => api('POST', path, body, options)
export const patch = (path, body, options) => api('PATCH', path, body, options)
export const del = (path, body, options) => api('DELETE', path, body, options)
/** POSTs a file as it is, with its content type (an import); resolves to the JSON answer. */
export const upload = (path, file, type, options) => api('POST', path, undefined, { ...options, raw: { body: file, type } })
/** GETs a download (an export) as a Blob. */
export const download = (path, options) => api('GET', path, undefined, { ...options, blob: true })

/** Query string from an object, leaving out empty values. */
export function query(params) {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== '') search.set(name, String(value))
  const text = search.toString()
  return text ? `?${text}` : ''
}
