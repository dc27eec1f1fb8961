// The compose form's draft, kept in localStorage per project so that it
// survives navigation, a reload and a sign-out (the API key is in
// sessionStorage and never written here). Cleared after a successful send.
//
// A draft is the form's state as plain strings:
// { title, body, url, icon_url, icon_file, image_url, image_file, target,
//   external_id, group_id, filter, actions, ttl, urgency, topic, throttle,
//   schedule, class, on_capped }
// where *_file is { name, data } (a data URL) or null, filter is the segment's
// JSON text and actions is [{ title, action, url }] (one per button).

const PREFIX = 'herald.draft.'

function storageKey(projectId) {
  return `${PREFIX}${projectId}`
}

export function loadDraft(projectId) {
  try {
    const text = localStorage.getItem(storageKey(projectId))
    const draft = text ? JSON.parse(text) : null
    return draft && typeof draft === 'object' ? draft : null
  } catch {
    return null
  }
}

/** Whether a draft holds anything a person typed or picked (the defaults alone are not worth keeping). */
export function draftHasContent(draft) {
  if (!draft) return false
  return Boolean(draft.title || draft.body || draft.url || draft.icon_url || draft.icon_file || draft.image_url || draft.image_file ||
    draft.external_id || draft.filter || draft.topic || draft.throttle || draft.schedule ||
    (Array.isArray(draft.actions) && draft.actions.some((a) => a && (a.title || a.action || a.url))))
}

/**
 * Saves the draft; an empty one removes it. Picked files can be large (an
 * image up to 1 MB is 1.4 MB as a data URL): when storage refuses them, the
 * rest of the draft is kept without them. Returns false when files were left out.
 */
export function saveDraft(projectId, draft) {
  const key = storageKey(projectId)
  try {
    if (!draftHasContent(draft)) {
      localStorage.removeItem(key)
      return true
    }
    try {
      localStorage.setItem(key, JSON.stringify(draft))
      return true
    } catch {
      localStorage.setItem(key, JSON.stringify({ ...draft, icon_file: null, image_file: null }))
      return false
    }
  } catch {
    // Storage unavailable (private mode, or full even without files): the draft lives as long as the page.
    return false
  }
}

export function clearDraft(projectId) {
  try {
    localStorage.removeItem(storageKey(projectId))
  } catch {
    // Nothing stored.
  }
}

/**
 * A past broadcast as a new draft ("Duplicate"): every field of its send
 * (content, action buttons, target with a segment's filter, TTL, urgency,
 * topic, throttle, class and on_capped) but no schedule (a duplicate is sent when its owner says).
 * Hosted icons and images come back as their URLs.
 */
export function draftFromBroadcast(b) {
  const n = b.notification
  return {
    title: n.title,
    body: n.body,
    url: n.url === '/' ? '' : n.url,
    icon_url: n.icon ?? '',
    icon_file: null,
    image_url: n.image ?? '',
    image_file: null,
    target: b.target.type,
    external_id: b.target.type === 'user' ? b.target.external_id : '',
    group_id: b.target.type === 'group' ? b.target.group_id : '',
    filter: b.target.type === 'segment' ? JSON.stringify(b.target.filter, null, 2) : '',
    actions: (n.actions ?? []).map((a) => ({ title: a.title, action: a.action, url: a.url ?? '' })),
    ttl: String(b.ttl),
    urgency: b.urgency,
    topic: b.topic ?? '',
    throttle: b.throttle_per_minute === null || b.throttle_per_minute === undefined ? '' : String(b.throttle_per_minute),
    schedule: '',
    class: b.class ?? 'marketing',
    on_capped: b.on_capped ?? 'skip',
    // Variables and languages (issue 24): the send's data, its choices and its versions by language.
    personal: b.personalization ? {
      data: Object.entries(b.personalization.data).map(([k, v]) => `${k}=${v}`).join('\n'),
      defaults: Object.entries(b.personalization.defaults ?? {}).map(([k, v]) => `${k}=${v}`).join('\n'),
      missing: b.personalization.missing,
      on_too_long: b.personalization.on_too_long,
      languages: Object.entries(b.personalization.localized).map(([locale, v]) => ({ locale, title: v.title, body: v.body })),
    } : undefined,
  }
}
