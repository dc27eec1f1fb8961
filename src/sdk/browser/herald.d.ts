// Types of the Herald browser SDK, served at {base_url}/sdk/herald.d.ts.
// Script tag: `window.Herald` (declared below). ES module: the default export
// of {base_url}/sdk/herald.mjs, with the same functions as named exports.

export type HeraldPermission = 'default' | 'granted' | 'denied' | 'unsupported'

export interface HeraldInitOptions {
  /** The project id, prj_… (public: it is also in every page that subscribes). */
  project: string
  /** URL of the site's service worker file that imports {base_url}/sdk/sw.js. Default '/herald-sw.js'. */
  serviceWorker?: string
  /**
   * Migrate mode (default false). When true (or an object, whose externalId,
   * groupIds and tags are given to the new subscriber as subscribe's are),
   * init starts Herald.migrate(): a visitor who already granted notification
   * permission and whose push subscriptions on this site were all made with
   * another application server key (a previous provider's, or this project's
   * before a key rotation) is subscribed again with this project's key
   * without any prompt, and stored as source "migrated". See Herald.migration.
   */
  migrate?: boolean | HeraldSubscribeOptions
}

/** What Herald.migrate() did. */
export interface HeraldMigration {
  /**
   * migrated: moved to this project's key (id is the new subscriber);
   * current: a subscription with this project's key is already there, nothing done;
   * no_subscription: this site has no push subscription, nothing done;
   * not_granted: permission is not granted, nothing done (migrate never asks);
   * failed: only in Herald.migration, when migrate() rejected (see error; also logged).
   */
  outcome: 'migrated' | 'current' | 'no_subscription' | 'not_granted' | 'failed'
  id: string | null
  error?: HeraldError
}

export interface HeraldSubscribeOptions {
  /** Your own user id (A-Z a-z 0-9 _ -, at most 256 characters), to send to all of a user's devices. */
  externalId?: string | null
  /** Groups to join (at most 50); unknown ids are dropped by Herald. */
  groupIds?: string[]
  /**
   * Tags for segments: at most 50 keys (1-64 of A-Z a-z 0-9 _ -), each a string
   * (at most 256 characters), a number or a boolean. A repeat subscribe merges
   * them into those Herald has (the keys given win, the others stay).
   */
  tags?: Record<string, string | number | boolean>
}

/**
 * Every failure is an Error with a `code`, always a string: one of Herald's API
 * error codes (`project_not_found`, `subscriber_limit_reached`,
 * `invalid_request`, `rate_limited`, …) or one of the SDK's own below. An
 * error the browser raised (a DOMException, whose own `code` is a number) is
 * never passed through as it is: it becomes `permission_denied`
 * (NotAllowedError), `unsupported` (NotSupportedError), or the code of the
 * step that failed (`push_service_failed`, `storage_failed`, else
 * `browser_error`), with the browser's error as `cause`.
 */
export interface HeraldError extends Error {
  name: 'HeraldError'
  code:
    | 'not_initialized'
    | 'invalid_options'
    | 'unsupported'
    | 'permission_denied'
    | 'service_worker_failed'
    | 'network_error'
    | 'api_error'
    /** PushManager failed: the browser's push service refused or could not be reached (Chromium without one answers AbortError). */
    | 'push_service_failed'
    /** IndexedDB, where the SDK keeps its one record, failed or is unavailable (some private modes). */
    | 'storage_failed'
    /** Any other error the browser raised; see `cause`. */
    | 'browser_error'
    | (string & {})
  /** The HTTP status when Herald answered with an error, else null. */
  status: number | null
  /** The browser's own error, when the failure came from the browser. */
  cause?: unknown
}

export interface HeraldSDK {
  /** Stores the configuration. Asks nothing and fetches nothing. */
  /** Stores the configuration. When this browser is subscribed and navigator.language changed since, records the new language in Herald in the background. */
  init(options: HeraldInitOptions): void
  /** Settles when init's background work (recording a changed language) is done. */
  readonly ready: Promise<unknown>
  /** Asks for notification permission (call it from a click), subscribes, stores the subscription in Herald. Resolves to the subscriber id, sub_…. */
  subscribe(options?: HeraldSubscribeOptions): Promise<string>
  /** Unsubscribes this browser, in the browser and in Herald. */
  unsubscribe(): Promise<void>
  /**
   * Whether this browser is subscribed to this project through the SDK. When
   * the browser's time zone changed since it subscribed, also records the new
   * one in Herald (local-time delivery and quiet hours go by it).
   */
  isSubscribed(): Promise<boolean>
  /** The browser's notification permission, or 'unsupported'. */
  readonly permission: HeraldPermission
  /**
   * Moves a visitor subscribed with another application server key to this
   * project's key without a prompt (see HeraldInitOptions.migrate); logs what
   * it did to the console. Rejects with a HeraldError when a step fails.
   */
  migrate(options?: HeraldSubscribeOptions): Promise<HeraldMigration>
  /** The promise init({ migrate }) started (never rejects), else null. */
  readonly migration: Promise<HeraldMigration> | null
}

declare const Herald: HeraldSDK
export default Herald
export declare function init(options: HeraldInitOptions): void
export declare function subscribe(options?: HeraldSubscribeOptions): Promise<string>
export declare function unsubscribe(): Promise<void>
export declare function isSubscribed(): Promise<boolean>
export declare function migrate(options?: HeraldSubscribeOptions): Promise<HeraldMigration>
export declare function getPermission(): HeraldPermission

declare global {
  interface Window {
    Herald: HeraldSDK
  }
}
