// Herald browser SDK, served at {base_url}/sdk/herald.js (script tag: window.Herald)
// and wrapped by {base_url}/sdk/herald.mjs (ES module). Plain JavaScript with
// no build step; types in {base_url}/sdk/herald.d.ts.
//
// Nothing happens on load: the visitor is asked for permission only when the
// page calls Herald.subscribe(), which it should do from a click (browsers
// refuse or hide prompts that come from nowhere).
;(function () {
  'use strict'
  // Herald's public URL (HERALD_PUBLIC_URL), written in by the server when it starts.
  var BASE_URL = '__HERALD_BASE_URL__'
  // The one-line file on the site's own origin that imports {base_url}/sdk/sw.js.
  var DEFAULT_SERVICE_WORKER = '/herald-sw.js'
  // Shared with sw.js: the service worker reads this record on pushsubscriptionchange.
  var DB_NAME = 'herald'
  var STATE_STORE = 'state'

  // Loaded twice (a script tag and the ES module on one page): keep the first.
  if (globalThis.Herald) return

  var config = null

  function HeraldError(code, message, status) {
    var error = new Error(message)
    error.name = 'HeraldError'
    error.code = code
    error.status = status === undefined ? null : status
    return error
  }

  // What the browser rejects with (a DOMException: AbortError when Chromium's
  // push service refuses, errors of IndexedDB, …) carries a numeric legacy
  // `code` (AbortError's is 20). It never reaches the page as it is: it becomes
  // a HeraldError whose code is one of the strings herald.d.ts lists, chosen by
  // the step that failed (`fallback`), with the browser's error as `cause`.
  function fromBrowser(fallback, what) {
    return function (cause) {
      if (cause && cause.name === 'HeraldError') throw cause
      var name = cause && cause.name
      var code = name === 'NotAllowedError' ? 'permission_denied' : name === 'NotSupportedError' ? 'unsupported' : fallback
      var error = HeraldError(code, what + ' (' + (name || 'Error') + ': ' + ((cause && cause.message) || String(cause)) + ').')
      error.cause = cause
      throw error
    }
  }

  function supported() {
    return typeof window !== 'undefined' && 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window
  }

  function requireReady() {
    if (!config) throw HeraldError('not_initialized', 'Call Herald.init({ project }) before this.')
    if (!supported()) throw HeraldError('unsupported', 'This browser does not support web push (service workers, PushManager and Notification are needed).')
  }

  function openDb() {
    return new Promise(function (resolve, reject) {
      var request = indexedDB.open(DB_NAME, 1)
      request.onupgradeneeded = function () {
        var db = request.result
        if (!db.objectStoreNames.contains(STATE_STORE)) db.createObjectStore(STATE_STORE)
        if (!db.objectStoreNames.contains('shown')) db.createObjectStore('shown', { keyPath: 'id' })
      }
      request.onsuccess = function () { resolve(request.result) }
      request.onerror = function () { reject(request.error) }
    })
  }

  function stateRequest(mode, run) {
    return openDb().then(function (db) {
      return new Promise(function (resolve, reject) {
        var tx = db.transaction(STATE_STORE, mode)
        var request = run(tx.objectStore(STATE_STORE))
        tx.oncomplete = function () { db.close(); resolve(request.result) }
        tx.onerror = tx.onabort = function () { db.close(); reject(tx.error) }
      })
    }).catch(fromBrowser('storage_failed', 'The browser could not use IndexedDB, where the SDK keeps its one record'))
  }

  // What the service worker needs to re-subscribe on its own. One record: a
  // browser's push subscription (per service worker) belongs to one project.
  var STATE_KEY = 'subscription'
  function saveState(state) { return stateRequest('readwrite', function (store) { return store.put(state, STATE_KEY) }) }
  function loadState() {
    return stateRequest('readonly', function (store) { return store.get(STATE_KEY) }).then(function (state) {
      return state && state.project === config.project ? state : null
    })
  }
  function clearState() {
    return loadState().then(function (state) {
      return state ? stateRequest('readwrite', function (store) { return store.delete(STATE_KEY) }) : undefined
    })
  }

  function api(method, path, body) {
    var url = BASE_URL + path + (path.indexOf('?') < 0 ? '?' : '&') + 'project=' + encodeURIComponent(config.project)
    var init = { method: method }
    if (body !== undefined) {
      init.headers = { 'Content-Type': 'application/json' }
      init.body = JSON.stringify(body)
    }
    return fetch(url, init).then(
      function (response) {
        return response.text().then(function (text) {
          var json = null
          try { json = text ? JSON.parse(text) : null } catch (_) { /* not JSON: reported below */ }
          if (response.ok && json) return json
          var error = json && json.error
          if (error && error.code) throw HeraldError(error.code, error.message || error.code, response.status)
          throw HeraldError('api_error', 'Herald answered ' + response.status + ' to ' + method + ' ' + path + '.', response.status)
        })
      },
      function () {
        throw HeraldError('network_error', 'Herald could not be reached at ' + BASE_URL + '.')
      },
    )
  }

  function base64urlToBytes(text) {
    var base64 = text.replace(/-/g, '+').replace(/_/g, '/')
    var raw = atob(base64 + '==='.slice((base64.length + 3) % 4))
    var bytes = new Uint8Array(raw.length)
    for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i)
    return bytes
  }

  function sameKey(buffer, bytes) {
    if (!buffer) return false
    var a = new Uint8Array(buffer)
    if (a.length !== bytes.length) return false
    for (var i = 0; i < a.length; i++) if (a[i] !== bytes[i]) return false
    return true
  }

  function serviceWorkerUrl() {
    return new URL(config.serviceWorker || DEFAULT_SERVICE_WORKER, location.href).href
  }

  // The registration of Herald's service worker, active (PushManager.subscribe needs an active worker).
  function activeRegistration() {
    return navigator.serviceWorker.register(serviceWorkerUrl()).then(function (registration) {
      if (registration.active) return registration
      var worker = registration.installing || registration.waiting
      return new Promise(function (resolve, reject) {
        worker.addEventListener('statechange', function () {
          if (worker.state === 'activated') resolve(registration)
          if (worker.state === 'redundant') reject(HeraldError('service_worker_failed', 'The service worker ' + serviceWorkerUrl() + ' failed to install.'))
        })
      })
    }, function (cause) {
      throw HeraldError('service_worker_failed', 'The service worker ' + serviceWorkerUrl() + ' could not be registered: ' + (cause && cause.message))
    })
  }

  function currentSubscription() {
    return navigator.serviceWorker.getRegistration(serviceWorkerUrl()).then(function (registration) {
      return registration ? registration.pushManager.getSubscription() : null
    }).catch(fromBrowser('push_service_failed', "The browser could not read this site's push subscription"))
  }

  var Herald = {
    /** Stores the configuration; asks nothing and fetches nothing. */
    init: function (options) {
      if (!options || typeof options.project !== 'string' || !/^prj_/.test(options.project)) {
        throw HeraldError('invalid_options', 'Herald.init needs { project: "prj_…" }.')
      }
      config = { project: options.project, serviceWorker: options.serviceWorker || null }
    },

    /** 'default', 'granted' or 'denied' as the browser says; 'unsupported' without web push. */
    get permission() {
      return supported() ? Notification.permission : 'unsupported'
    },

    /** Asks for permission, subscribes this browser and stores it in Herald; resolves to the subscriber id. */
    subscribe: function (options) {
      options = options || {}
      return Promise.resolve().then(function () {
        requireReady()
        return Notification.requestPermission()
      }).then(function (permission) {
        if (permission !== 'granted') throw HeraldError('permission_denied', 'The visitor did not allow notifications (permission is ' + permission + ').')
        return Promise.all([activeRegistration(), api('GET', '/v1/vapid-public-key')])
      }).then(function (results) {
        var registration = results[0]
        var key = base64urlToBytes(results[1].vapid_public)
        return registration.pushManager.getSubscription().then(function (existing) {
          // A subscription made with another key cannot receive this project's pushes.
          if (existing && sameKey(existing.options.applicationServerKey, key)) return existing
          return (existing ? existing.unsubscribe() : Promise.resolve()).then(function () {
            return registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key })
          })
        }).catch(fromBrowser('push_service_failed', "The browser's push service gave no subscription")).then(function (subscription) {
          var json = subscription.toJSON()
          // The key it was made with (issue 23): after a rotation a browser may still hold the previous key (cached up to an hour), and Herald must sign with that one.
          var body = { endpoint: json.endpoint, keys: json.keys, vapid_public: results[1].vapid_public }
          if (options.externalId !== undefined) body.external_id = options.externalId
          if (options.groupIds !== undefined) body.group_ids = options.groupIds
          if (options.tags !== undefined) body.tags = options.tags
          return Promise.all([api('POST', '/v1/subscribe', body), loadState()]).then(function (done) {
            var created = done[0]
            var previous = done[1]
            // Herald merges a repeat's tags into the stored ones; the record
            // the service worker re-subscribes with (pushsubscriptionchange)
            // does the same, so a renewed subscription keeps them.
            var tags = Object.assign({}, previous && previous.endpoint === json.endpoint ? previous.tags : {}, body.tags)
            return saveState({
              project: config.project,
              base_url: BASE_URL,
              vapid_public: results[1].vapid_public,
              endpoint: json.endpoint,
              subscriber_id: created.id,
              external_id: body.external_id === undefined ? null : body.external_id,
              group_ids: body.group_ids || [],
              tags: tags,
            }).then(function () { return created.id })
          })
        })
      }).catch(fromBrowser('browser_error', 'The browser refused'))
    },

    /** Removes this browser's subscription, in the browser and in Herald. */
    unsubscribe: function () {
      return Promise.resolve().then(function () {
        requireReady()
        return Promise.all([currentSubscription(), loadState()])
      }).then(function (results) {
        var subscription = results[0]
        var state = results[1]
        if (subscription && !state) {
          // Not stored for this project: only drop the subscription if it was made with this project's key.
          return api('GET', '/v1/vapid-public-key').then(function (answer) {
            return sameKey(subscription.options.applicationServerKey, base64urlToBytes(answer.vapid_public)) ? [subscription, null] : [null, null]
          })
        }
        return results
      }).then(function (results) {
        var subscription = results[0]
        var state = results[1]
        var endpoint = subscription ? subscription.endpoint : state && state.endpoint
        return (subscription ? subscription.unsubscribe() : Promise.resolve())
          .catch(fromBrowser('push_service_failed', 'The browser could not cancel the push subscription'))
          .then(function () {
            return endpoint ? api('POST', '/v1/unsubscribe', { endpoint: endpoint }) : null
          }).then(function () { return clearState() })
      }).catch(fromBrowser('browser_error', 'The browser refused'))
    },

    /** True when this browser has a push subscription that was stored in Herald for this project. */
    isSubscribed: function () {
      return Promise.resolve().then(function () {
        if (!config) throw HeraldError('not_initialized', 'Call Herald.init({ project }) before this.')
        if (!supported() || Notification.permission !== 'granted') return false
        return Promise.all([currentSubscription(), loadState()]).then(function (results) {
          return Boolean(results[0] && results[1] && results[1].endpoint === results[0].endpoint)
        })
      }).catch(fromBrowser('browser_error', 'The browser refused'))
    },
  }

  globalThis.Herald = Herald
})()
