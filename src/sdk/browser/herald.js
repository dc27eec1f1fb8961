// Herald browser SDK, served at {base_url}/sdk/herald.js (script tag: window.Herald)
// and wrapped by {base_url}/sdk/herald.mjs (ES module). Plain JavaScript with
// no build step; types in {base_url}/sdk/herald.d.ts.
//
// Nothing happens on load: the visitor is asked for permission only when the
// page calls Herald.subscribe(), which it should do from a click (browsers
// refuse or hide prompts that come from nowhere). The one exception is opt-in:
// init({ migrate: true }) moves a visitor who already granted permission and
// is subscribed with another application server key, without a prompt.
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

  // The browser's IANA time zone (issue 24: local-time delivery and quiet
  // hours go by it); undefined when the browser does not say.
  function browserTimezone() {
    try {
      var zone = Intl.DateTimeFormat().resolvedOptions().timeZone
      return typeof zone === 'string' && zone.length > 0 ? zone : undefined
    } catch (e) {
      return undefined
    }
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

  // Stores the subscription in Herald and the record the service worker
  // re-subscribes with; resolves to the subscriber id. `extra` adds source
  // and replaces (migrate mode).
  function register(subscription, vapidPublic, options, extra) {
    var json = subscription.toJSON()
    // The key it was made with (issue 23): after a rotation a browser may still hold the previous key (cached up to an hour), and Herald must sign with that one.
    var body = Object.assign({ endpoint: json.endpoint, keys: json.keys, vapid_public: vapidPublic }, extra)
    if (options.externalId !== undefined) body.external_id = options.externalId
    if (options.groupIds !== undefined) body.group_ids = options.groupIds
    if (options.tags !== undefined) body.tags = options.tags
    var locale = browserLocale()
    if (locale) body.locale = locale
    var timezone = browserTimezone()
    if (timezone !== undefined) body.timezone = timezone
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
        vapid_public: vapidPublic,
        endpoint: json.endpoint,
        // The proof the service worker gives Herald when the browser replaces this subscription (replaces.auth).
        auth: json.keys && json.keys.auth,
        subscriber_id: created.id,
        external_id: body.external_id === undefined ? null : body.external_id,
        group_ids: body.group_ids || [],
        tags: tags,
        locale: locale,
        timezone: timezone === undefined ? null : timezone,
      }).then(function () { return created.id })
    })
  }

  // Every push subscription of this origin, whichever service worker holds it
  // (another provider's worker may have had its own scope), one per endpoint.
  function originSubscriptions() {
    return navigator.serviceWorker.getRegistrations().then(function (registrations) {
      return Promise.all(registrations.map(function (registration) { return registration.pushManager.getSubscription() }))
    }).then(function (subscriptions) {
      var seen = {}
      return subscriptions.filter(function (subscription) {
        if (!subscription || seen[subscription.endpoint]) return false
        seen[subscription.endpoint] = true
        return true
      })
    }).catch(fromBrowser('push_service_failed', "The browser could not read this site's push subscriptions"))
  }

  // The browser's language (a BCP 47 tag), recorded with the subscription: sends with localized versions pick by it.
  function browserLocale() {
    var language = typeof navigator !== 'undefined' && navigator.language
    return typeof language === 'string' && language.length > 0 && language.length <= 64 ? language : null
  }

  // On a page load of a subscribed browser whose language changed since it was recorded: records the new one.
  // A repeat subscribe of the same subscription, which changes nothing else. Never asks the visitor anything.
  function syncLocale() {
    var locale = browserLocale()
    if (!locale || !supported() || Notification.permission !== 'granted') return Promise.resolve()
    return Promise.all([currentSubscription(), loadState()]).then(function (results) {
      var subscription = results[0]
      var state = results[1]
      if (!subscription || !state || state.endpoint !== subscription.endpoint || state.locale === locale) return null
      var json = subscription.toJSON()
      return api('POST', '/v1/subscribe', { endpoint: json.endpoint, keys: json.keys, locale: locale }).then(function () {
        return saveState(Object.assign({}, state, { locale: locale }))
      })
    })
  }

  var Herald = {
    /**
     * Stores the configuration and asks nothing. When this browser is already
     * subscribed and its language changed since, it records the new one in
     * Herald in the background (Herald.ready resolves when that is done).
     */
    init: function (options) {
      if (!options || typeof options.project !== 'string' || !/^prj_/.test(options.project)) {
        throw HeraldError('invalid_options', 'Herald.init needs { project: "prj_…" }.')
      }
      var migrate = options.migrate
      if (migrate !== undefined && typeof migrate !== 'boolean' && (migrate === null || typeof migrate !== 'object')) {
        throw HeraldError('invalid_options', 'Herald.init: migrate is true, false, or { externalId, groupIds, tags }.')
      }
      config = { project: options.project, serviceWorker: options.serviceWorker || null }
      // Opt-in (issue 23): move a visitor subscribed with another key now, without a prompt.
      // Never rejects: a failure is logged and resolves to { outcome: 'failed' }.
      Herald.migration = migrate ? Herald.migrate(migrate === true ? {} : migrate).catch(function (error) {
        console.warn('Herald: could not move this browser\'s push subscription to project ' + config.project + ':', error)
        return { outcome: 'failed', id: null, error: error }
      }) : null
      // A failure here (offline, storage blocked) only delays the update to the next load.
      Herald.ready = syncLocale().catch(function () { return null })
    },

    /** The migration init({ migrate }) started, else null. */
    migration: null,

    /**
     * Migrate mode (issue 23): when notification permission is already granted
     * and this origin holds push subscriptions made only with other application
     * server keys (another provider's, or this project's key before a
     * rotation), drops them and subscribes again with the project's key,
     * without asking (permission belongs to the origin, not to a key), and
     * stores the new subscription in Herald as migrated, taking over what
     * Herald had for the old one (replaces, with its auth secret as proof).
     */
    migrate: function (options) {
      options = options || {}
      return Promise.resolve().then(function () {
        requireReady()
        if (Notification.permission !== 'granted') return { outcome: 'not_granted', id: null }
        return originSubscriptions().then(function (found) {
          if (found.length === 0) return { outcome: 'no_subscription', id: null }
          return api('GET', '/v1/vapid-public-key').then(function (answer) {
            var key = base64urlToBytes(answer.vapid_public)
            var foreign = found.filter(function (subscription) { return !sameKey(subscription.options.applicationServerKey, key) })
            if (foreign.length < found.length) return { outcome: 'current', id: null }
            var old = foreign[0].toJSON()
            return Promise.all(foreign.map(function (subscription) { return subscription.unsubscribe() }))
              .then(function () { return activeRegistration() })
              .then(function (registration) { return registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key }) })
              .catch(fromBrowser('push_service_failed', "The browser's push service gave no subscription"))
              .then(function (subscription) {
                var extra = { source: 'migrated' }
                if (old.keys && old.keys.auth) extra.replaces = { endpoint: old.endpoint, auth: old.keys.auth }
                return register(subscription, answer.vapid_public, options, extra)
              }).then(function (id) {
                console.info('Herald: moved this browser\'s push subscription (' + old.endpoint + ') from another application server key to project ' +
                  config.project + "'s key, without a permission prompt; subscriber " + id + '.')
                return { outcome: 'migrated', id: id }
              })
          })
        })
      }).catch(fromBrowser('browser_error', 'The browser refused'))
    },

    /** Settles when init's background work (the language update) is done. */
    ready: Promise.resolve(),

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
        var extra = {}
        return registration.pushManager.getSubscription().then(function (existing) {
          // A subscription made with another key cannot receive this project's pushes.
          if (existing && sameKey(existing.options.applicationServerKey, key)) return existing
          // Herald carries over what it holds for the one replaced (this project's key before a rotation).
          var old = existing ? existing.toJSON() : null
          if (old && old.keys && old.keys.auth) extra.replaces = { endpoint: old.endpoint, auth: old.keys.auth }
          return (existing ? existing.unsubscribe() : Promise.resolve()).then(function () {
            return registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key })
          })
        }).catch(fromBrowser('push_service_failed', "The browser's push service gave no subscription")).then(function (subscription) {
          return register(subscription, results[1].vapid_public, options, extra)
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
          var subscription = results[0]
          var state = results[1]
          var subscribed = Boolean(subscription && state && state.endpoint === subscription.endpoint)
          var timezone = browserTimezone()
          // The device's zone changed since it was recorded (a trip, a move): tell Herald, so
          // local-time sends reach it at the local time it now lives in. A repeat subscribe
          // changes nothing else (tags, groups and external_id given as omitted are kept).
          if (!subscribed || timezone === undefined || state.timezone === timezone) return subscribed
          var json = subscription.toJSON()
          return api('POST', '/v1/subscribe', { endpoint: json.endpoint, keys: json.keys, timezone: timezone }).then(function () {
            return saveState(Object.assign({}, state, { timezone: timezone }))
          }).then(function () { return true }, function () { return true })
        })
      }).catch(fromBrowser('browser_error', 'The browser refused'))
    },
  }

  globalThis.Herald = Herald
})()
