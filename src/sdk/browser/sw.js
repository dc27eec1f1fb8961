// Herald's service worker code, served at {base_url}/sdk/sw.js. A site imports
// it from a service worker file on its own origin (a push subscription belongs
// to a service worker of the site's origin, so the file itself cannot live on
// Herald's):
//
//   importScripts('{base_url}/sdk/sw.js')
//
// The handlers only act on Herald's own pushes and notifications, so a site's
// own handlers in the same file keep working (see isHeraldPush below).
;(function () {
  'use strict'
  // Herald's public URL (HERALD_PUBLIC_URL), written in by the server when it starts.
  var BASE_URL = '__HERALD_BASE_URL__'
  // Shared with herald.js: 'state' holds what subscribe stored, 'shown' the broadcasts shown here.
  var DB_NAME = 'herald'
  var STATE_KEY = 'subscription' // the one record herald.js writes in 'state'
  // Pushes live at most 4 weeks in a push service (api.md: ttl ≤ 2419200 s), so a
  // broadcast cannot arrive again after 30 days: older records are dropped.
  var SHOWN_KEEP_MS = 30 * 24 * 3600 * 1000
  // A fetch: true push must still show something while the push event may run
  // (browsers give it about 30 s): give the content request 10 s.
  var FETCH_TIMEOUT_MS = 10000
  var FALLBACK_BODY = 'You have a new notification.'

  if (self.HeraldServiceWorker) return // imported twice

  function parsePush(event) {
    if (!event.data) return null
    var payload
    try { payload = event.data.json() } catch (_) { return null }
    if (!payload || payload.v !== 1 || typeof payload.project_id !== 'string' || typeof payload.broadcast_id !== 'string') return null
    if (!/^prj_/.test(payload.project_id) || !/^bdc_/.test(payload.broadcast_id)) return null
    return payload
  }

  function heraldData(notification) {
    var data = notification && notification.data
    return data && data.herald === 1 && typeof data.broadcast_id === 'string' && typeof data.project_id === 'string' ? data : null
  }

  function openDb() {
    return new Promise(function (resolve, reject) {
      var request = indexedDB.open(DB_NAME, 1)
      request.onupgradeneeded = function () {
        var db = request.result
        if (!db.objectStoreNames.contains('state')) db.createObjectStore('state')
        if (!db.objectStoreNames.contains('shown')) db.createObjectStore('shown', { keyPath: 'id' })
      }
      request.onsuccess = function () { resolve(request.result) }
      request.onerror = function () { reject(request.error) }
    })
  }

  function transaction(storeName, mode, run) {
    return openDb().then(function (db) {
      return new Promise(function (resolve, reject) {
        var tx = db.transaction(storeName, mode)
        var result = run(tx.objectStore(storeName))
        tx.oncomplete = function () { db.close(); resolve(result && 'result' in result ? result.result : undefined) }
        tx.onerror = tx.onabort = function (event) {
          if (event && event.preventDefault) event.preventDefault()
          db.close()
          reject(tx.error)
        }
      })
    })
  }

  // Records the broadcast as shown; resolves false when it was already shown here.
  // IndexedDB's add() refuses an existing key inside its transaction, so two
  // deliveries of one broadcast racing each other cannot both pass.
  function markShown(broadcastId) {
    var now = Date.now()
    return transaction('shown', 'readwrite', function (store) {
      store.openCursor().onsuccess = function (event) {
        var cursor = event.target.result
        if (!cursor) return
        if (cursor.value.at < now - SHOWN_KEEP_MS) cursor.delete()
        cursor.continue()
      }
      var request = store.add({ id: broadcastId, at: now })
      request.onerror = function (event) {
        event.preventDefault() // a ConstraintError must not abort the clean-up above
        event.stopPropagation()
      }
      return request
    }).then(function (key) { return key === broadcastId })
  }

  function fetchContent(payload) {
    var controller = new AbortController()
    var timer = setTimeout(function () { controller.abort() }, FETCH_TIMEOUT_MS)
    var url = BASE_URL + '/v1/notifications/' + encodeURIComponent(payload.broadcast_id) + '?project=' + encodeURIComponent(payload.project_id)
    if (typeof payload.variant === 'string') url += '&variant=' + encodeURIComponent(payload.variant)
    return fetch(url, { signal: controller.signal }).then(function (response) {
      if (!response.ok) throw new Error('status ' + response.status)
      return response.json()
    }).then(function (content) {
      clearTimeout(timer)
      if (!content || typeof content.title !== 'string') throw new Error('no title')
      return content
    }, function (error) {
      clearTimeout(timer)
      throw error
    })
  }

  // A click URL as the page would resolve it: a path is on the site's own origin.
  function absoluteUrl(url) {
    try { return new URL(url || '/', self.location.origin).href } catch (_) { return self.location.origin + '/' }
  }

  function show(payload, content) {
    var options = {
      body: content.body || '',
      // The tag makes a second notification of the same broadcast replace the first one.
      tag: payload.broadcast_id,
      data: { herald: 1, broadcast_id: payload.broadcast_id, project_id: payload.project_id, url: absoluteUrl(content.url) },
    }
    // An A/B test's variant (docs/experiments.md): echoed in the beacons, so engagement counts on it.
    if (typeof payload.variant === 'string') options.data.variant = payload.variant
    if (content.icon) options.icon = content.icon
    if (content.image) options.image = content.image
    // Action buttons: the browser shows the titles, and names the action clicked in
    // notificationclick; where each one leads is kept in data (button URL, else the notification's).
    if (Array.isArray(content.actions) && content.actions.length > 0) {
      options.actions = []
      options.data.actions = {}
      content.actions.forEach(function (action) {
        if (!action || typeof action.action !== 'string' || typeof action.title !== 'string') return
        options.actions.push({ action: action.action, title: action.title })
        options.data.actions[action.action] = action.url ? absoluteUrl(action.url) : options.data.url
      })
    }
    return self.registration.showNotification(content.title || self.location.hostname, options)
  }

  function fallback(payload) {
    return show(payload, { title: self.location.hostname, body: FALLBACK_BODY, url: '/' })
  }

  function handlePush(payload) {
    return markShown(payload.broadcast_id).catch(function () {
      return true // no IndexedDB (private mode): showing twice beats showing nothing
    }).then(function (first) {
      if (!first) return undefined
      var content = payload.fetch === true ? fetchContent(payload) : Promise.resolve(payload)
      return content.then(function (resolved) {
        return show(payload, resolved)
      }).catch(function () {
        return fallback(payload)
      }).then(function () {
        // Confirmed delivery (docs/funnel.md): one shown beacon, sent only once
        // showNotification has resolved, so it never delays the notification;
        // best effort, like the others (beacon never rejects). A repeat of the
        // broadcast returned above, so it is reported once per browser.
        return beacon('shown', payload)
      }).catch(function () {}) // not even the fallback could be shown (permission gone): nothing shown, nothing reported
    })
  }

  // Fire and forget, never into the console: text/plain needs no CORS preflight,
  // and keepalive lets the request finish after the worker stops. type is
  // clicked, dismissed or shown; data is the notification's data, or for shown
  // the push payload (both name the broadcast and the project).
  function beacon(type, data, action, subscriberId) {
    var body = { type: type, broadcast_id: data.broadcast_id }
    if (action) body.action = action
    if (subscriberId) body.subscriber_id = subscriberId
    if (data.variant) body.variant = data.variant
    try {
      return fetch(BASE_URL + '/v1/events?project=' + encodeURIComponent(data.project_id), {
        method: 'POST',
        mode: 'no-cors',
        keepalive: true,
        headers: { 'Content-Type': 'text/plain;charset=UTF-8' },
        body: JSON.stringify(body),
      }).then(function () {}, function () {})
    } catch (_) {
      return Promise.resolve()
    }
  }

  // The subscriber id subscribe stored for this project, sent with a click so
  // Herald can date this subscriber's last click (its health); the event
  // itself stays anonymous. Resolves null whatever fails: the beacon still goes.
  function clickerId(data) {
    return transaction('state', 'readonly', function (store) { return store.get(STATE_KEY) }).then(function (state) {
      return state && state.base_url === BASE_URL && state.project === data.project_id && typeof state.subscriber_id === 'string' ? state.subscriber_id : null
    }, function () { return null })
  }

  function focusOrOpen(url) {
    return self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then(function (windows) {
      for (var i = 0; i < windows.length; i++) {
        if (windows[i].url === url && 'focus' in windows[i]) return windows[i].focus()
      }
      return self.clients.openWindow(url)
    }).catch(function () {})
  }

  function subscribeToHerald(state, subscription, replaces) {
    var json = subscription.toJSON()
    var body = { endpoint: json.endpoint, keys: json.keys, group_ids: state.group_ids || [] }
    if (state.external_id) body.external_id = state.external_id
    if (state.tags) body.tags = state.tags
    // Herald moves the old subscriber's groups, tags and external_id (including
    // what the server set since) to the new one, and expires the old one.
    if (replaces) body.replaces = replaces
    if (state.locale) body.locale = state.locale
    if (state.timezone) body.timezone = state.timezone
    // The key it was made with (issue 23): after a rotation the renewed subscription
    // still uses the previous pair, and Herald must sign its pushes with that one.
    var key = subscription.options && subscription.options.applicationServerKey
    var vapidPublic = key ? bytesToBase64url(key) : state.vapid_public
    if (vapidPublic) body.vapid_public = vapidPublic
    return fetch(BASE_URL + '/v1/subscribe?project=' + encodeURIComponent(state.project), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    }).then(function (response) {
      if (!response.ok) throw new Error('subscribe answered ' + response.status)
      return response.json()
    })
  }

  function unsubscribeFromHerald(state, endpoint) {
    return fetch(BASE_URL + '/v1/unsubscribe?project=' + encodeURIComponent(state.project), {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ endpoint: endpoint }),
    }).then(function () {}, function () {})
  }

  function base64urlToBytes(text) {
    var base64 = text.replace(/-/g, '+').replace(/_/g, '/')
    var raw = atob(base64 + '==='.slice((base64.length + 3) % 4))
    var bytes = new Uint8Array(raw.length)
    for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i)
    return bytes
  }

  function bytesToBase64url(buffer) {
    var bytes = new Uint8Array(buffer)
    var raw = ''
    for (var i = 0; i < bytes.length; i++) raw += String.fromCharCode(bytes[i])
    return btoa(raw).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
  }

  function authOf(subscription) {
    try {
      var json = subscription && subscription.toJSON ? subscription.toJSON() : null
      return (json && json.keys && json.keys.auth) || null
    } catch (_) {
      return null
    }
  }

  // The browser replaced or dropped the subscription (key change, expiry):
  // subscribe again with the same VAPID key, tell Herald the new endpoint, and
  // unsubscribe the old one. The project, external id and groups come from what
  // Herald.subscribe() stored on this origin; with `replaces`, Herald also
  // carries over what it holds for the old one and expires it (then the
  // unsubscribe that follows finds nothing active and changes nothing).
  function resubscribe(event) {
    return transaction('state', 'readonly', function (store) { return store.get(STATE_KEY) }).then(function (state) {
      if (!state || state.base_url !== BASE_URL) return undefined // not subscribed through this Herald
      var oldEndpoint = (event.oldSubscription && event.oldSubscription.endpoint) || state.endpoint
      var key = (event.oldSubscription && event.oldSubscription.options && event.oldSubscription.options.applicationServerKey) ||
        base64urlToBytes(state.vapid_public)
      var next = event.newSubscription
        ? Promise.resolve(event.newSubscription)
        : self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key })
      // The proof Herald asks for: the old subscription's auth secret, from
      // what herald.js stored, else from the event (Firefox passes it).
      var oldAuth = state.endpoint === oldEndpoint && state.auth ? state.auth : authOf(event.oldSubscription)
      var replaces = oldEndpoint && oldAuth ? { endpoint: oldEndpoint, auth: oldAuth } : null
      return next.then(function (subscription) {
        return subscribeToHerald(state, subscription, replaces).then(function (created) {
          var saved = Object.assign({}, state, { endpoint: subscription.endpoint, auth: authOf(subscription), subscriber_id: created.id })
          return transaction('state', 'readwrite', function (store) { return store.put(saved, STATE_KEY) })
        }).then(function () {
          if (oldEndpoint && oldEndpoint !== subscription.endpoint) return unsubscribeFromHerald(state, oldEndpoint)
          return undefined
        })
      })
    }).catch(function () {})
  }

  // event.waitUntil keeps the worker alive until the work is done; without it
  // the browser may stop the worker mid-way (and, for a push, count it as a push
  // that showed nothing).
  self.addEventListener('push', function (event) {
    var payload = parsePush(event)
    if (payload) event.waitUntil(handlePush(payload))
  })

  self.addEventListener('notificationclick', function (event) {
    var data = heraldData(event.notification)
    if (!data) return
    event.notification.close()
    // event.action is '' for a click on the notification itself, else the button's action id.
    var action = event.action && data.actions && data.actions[event.action] ? event.action : ''
    var url = action ? data.actions[action] : data.url || absoluteUrl('/')
    event.waitUntil(Promise.all([focusOrOpen(url), clickerId(data).then(function (id) { return beacon('clicked', data, action, id) })]))
  })

  self.addEventListener('notificationclose', function (event) {
    var data = heraldData(event.notification)
    if (data) event.waitUntil(beacon('dismissed', data))
  })

  self.addEventListener('pushsubscriptionchange', function (event) {
    event.waitUntil(resubscribe(event))
  })

  // For a site's own handlers in the same service worker: skip what Herald handles.
  self.HeraldServiceWorker = {
    isHeraldPush: function (event) { return parsePush(event) !== null },
    isHeraldNotification: function (notification) { return heraldData(notification) !== null },
  }
})()
