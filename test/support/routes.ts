// Every route of the API, by how it authenticates, as data: test/security.test.ts
// runs the same checks over each (and fails when a route is registered that
// these tables do not list). URLs are built from one project's ids.
import { subscription } from '../../src/subscribers/subscribers.fixtures.ts'
import { generateVapidKeys } from '../../src/projects/vapid-keys.ts'

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** One project's data that routes with an id in the path (or body) point at. */
export interface RouteIds {
  project: string
  group: string
  subscriber: string
  endpoint: string
  externalId: string
  broadcast: string
  /** A broadcast whose A/B test is running (experiments.fixtures.ts runningExperiment), for the decide route. */
  experimentBroadcast?: string
  /** A broadcast still pending, for the stop route (the scheduled one above is DELETE's); the scheduled one when absent. */
  pendingBroadcast?: string
  webhook: string
  /** A saved template (tpl_…), for the /v1/templates routes. */
  template?: string
  apiKeyId: string
  /** A second key of the project's, for DELETE /v1/api-keys/:id (revoking apiKeyId would lock the test's own key out). */
  spareApiKeyId: string
  /** A member's user id (usr_…) and an open invite's id (inv_…), for the member routes. */
  member?: string
  invite?: string
  /** The email of an account that exists (a member's), for the operator's password reset link. */
  accountEmail?: string
  /** A VAPID key of the project that is neither current nor in use (vk_…), for DELETE /v1/vapid-keys/:key_id; the original key when absent. */
  spareVapidKey?: string
}

export interface RouteCase {
  method: Method
  /** The path as registered, with :placeholders. */
  path: string
  url(ids: RouteIds): string
  body?(ids: RouteIds): Record<string, unknown> | string
  /** Headers beside authentication, e.g. the content type of a body that is not JSON. */
  headers?: Record<string, string>
  /** What the route answers, by design, on a project populated with a subscriber when that is not a success. */
  populated?: { status: number; code: string }
}

export interface BearerRouteCase extends RouteCase {
  /** What another project's key gets on this route when the ids are not its own. */
  foreign: { status: number; code?: string; body?: unknown }
}

const notFound = (code: string) => ({ status: 404, code })

export const BEARER_ROUTES: BearerRouteCase[] = [
  { method: 'GET', path: '/v1/me', url: () => '/v1/me', foreign: { status: 200 } },
  { method: 'PATCH', path: '/v1/me', url: () => '/v1/me', body: () => ({ default_icon: 'https://cdn.example.com/sweep.png' }), foreign: { status: 200 } },
  { method: 'GET', path: '/v1/groups', url: () => '/v1/groups', foreign: { status: 200 } },
  { method: 'POST', path: '/v1/groups', url: () => '/v1/groups', body: () => ({ name: 'security sweep' }), foreign: { status: 201 } },
  { method: 'PATCH', path: '/v1/groups/:id', url: (ids) => `/v1/groups/${ids.group}`, body: () => ({ name: 'taken over', description: null }), foreign: notFound('group_not_found') },
  { method: 'DELETE', path: '/v1/groups/:id', url: (ids) => `/v1/groups/${ids.group}`, foreign: notFound('group_not_found') },
  {
    method: 'POST',
    path: '/v1/groups/:id/subscribers',
    url: (ids) => `/v1/groups/${ids.group}/subscribers`,
    body: (ids) => ({ subscriber_ids: [ids.subscriber] }),
    foreign: notFound('group_not_found'),
  },
  {
    method: 'DELETE',
    path: '/v1/groups/:id/subscribers/:sid',
    url: (ids) => `/v1/groups/${ids.group}/subscribers/${ids.subscriber}`,
    foreign: notFound('group_not_found'),
  },
  {
    method: 'POST',
    path: '/v1/send',
    url: () => '/v1/send',
    body: (ids) => ({ target: { type: 'group', group_id: ids.group }, notification: { title: 'Hi', body: 'There' } }),
    foreign: notFound('group_not_found'),
  },
  { method: 'GET', path: '/v1/broadcasts', url: () => '/v1/broadcasts', foreign: { status: 200 } },
  { method: 'GET', path: '/v1/broadcasts/export', url: () => '/v1/broadcasts/export', foreign: { status: 200 } },
  // Filters naming A's ids reach nothing of A's: the sweep checks the body holds none of A's values.
  { method: 'GET', path: '/v1/audit-log', url: (ids) => `/v1/audit-log?target_id=${ids.group}`, foreign: { status: 200, body: { entries: [], next_cursor: null } } },
  // Numbers over time are the caller's project's own: another project's key reads its own (the leak test is src/stats/stats.test.ts).
  { method: 'GET', path: '/v1/stats', url: () => '/v1/stats?interval=hour', foreign: { status: 200 } },
  { method: 'GET', path: '/v1/broadcasts/:id', url: (ids) => `/v1/broadcasts/${ids.broadcast}`, foreign: notFound('broadcast_not_found') },
  { method: 'DELETE', path: '/v1/broadcasts/:id', url: (ids) => `/v1/broadcasts/${ids.broadcast}`, foreign: notFound('broadcast_not_found') },
  {
    method: 'POST',
    path: '/v1/broadcasts/:id/stop',
    url: (ids) => `/v1/broadcasts/${ids.pendingBroadcast ?? ids.broadcast}/stop`,
    foreign: notFound('broadcast_not_found'),
  },
  {
    method: 'POST',
    path: '/v1/broadcasts/:id/experiment/decide',
    url: (ids) => `/v1/broadcasts/${ids.experimentBroadcast ?? ids.broadcast}/experiment/decide`,
    body: () => ({}),
    foreign: notFound('broadcast_not_found'),
  },
  { method: 'GET', path: '/v1/subscribers', url: () => '/v1/subscribers', foreign: { status: 200 } },
  { method: 'GET', path: '/v1/subscribers/counts', url: () => '/v1/subscribers/counts', foreign: { status: 200 } },
  { method: 'GET', path: '/v1/subscribers/health', url: () => '/v1/subscribers/health', foreign: { status: 200 } },
  { method: 'GET', path: '/v1/subscribers/:sid', url: (ids) => `/v1/subscribers/${ids.subscriber}`, foreign: notFound('subscriber_not_found') },
  { method: 'DELETE', path: '/v1/subscribers/:sid', url: (ids) => `/v1/subscribers/${ids.subscriber}`, foreign: notFound('subscriber_not_found') },
  {
    method: 'PATCH',
    path: '/v1/subscribers/:sid',
    url: (ids) => `/v1/subscribers/${ids.subscriber}`,
    body: () => ({ tags: { swept: true }, merge: true }),
    foreign: notFound('subscriber_not_found'),
  },
  {
    method: 'PATCH',
    path: '/v1/subscribers/by-external-id/:external_id',
    url: (ids) => `/v1/subscribers/by-external-id/${ids.externalId}`,
    body: () => ({ tags: { swept: true }, merge: true }),
    foreign: notFound('subscriber_not_found'),
  },
  { method: 'GET', path: '/v1/subscribers/export', url: () => '/v1/subscribers/export', foreign: { status: 200 } },
  {
    // Another project's key imports into its own project: the endpoint is just data.
    method: 'POST',
    path: '/v1/subscribers/import',
    url: () => '/v1/subscribers/import',
    headers: { 'content-type': 'application/x-ndjson' },
    body: () => `${JSON.stringify(subscription())}\n`,
    foreign: { status: 200 },
  },
  {
    method: 'DELETE',
    path: '/v1/subscribers/by-endpoint',
    url: () => '/v1/subscribers/by-endpoint',
    body: (ids) => ({ endpoint: ids.endpoint }),
    foreign: { status: 200, body: { deleted: 0 } },
  },
  {
    method: 'DELETE',
    path: '/v1/subscribers/by-external-id/:external_id',
    url: (ids) => `/v1/subscribers/by-external-id/${ids.externalId}`,
    foreign: { status: 200, body: { deleted: 0 } },
  },
  { method: 'GET', path: '/v1/templates', url: () => '/v1/templates', foreign: { status: 200 } },
  {
    method: 'POST',
    path: '/v1/templates',
    url: () => '/v1/templates',
    body: () => ({ name: `sweep ${Math.random()}`, notification: { title: 'Hi {{ tags.first_name }}', body: 'b' } }),
    foreign: { status: 201 },
  },
  { method: 'GET', path: '/v1/templates/:id', url: (ids) => `/v1/templates/${ids.template}`, foreign: notFound('template_not_found') },
  { method: 'PATCH', path: '/v1/templates/:id', url: (ids) => `/v1/templates/${ids.template}`, body: () => ({ name: `taken over ${Math.random()}` }), foreign: notFound('template_not_found') },
  { method: 'DELETE', path: '/v1/templates/:id', url: (ids) => `/v1/templates/${ids.template}`, foreign: notFound('template_not_found') },
  { method: 'POST', path: '/v1/webhooks', url: () => '/v1/webhooks', body: () => ({ url: 'https://hooks.example.com/sweep' }), foreign: { status: 201 } },
  { method: 'GET', path: '/v1/webhooks', url: () => '/v1/webhooks', foreign: { status: 200 } },
  { method: 'DELETE', path: '/v1/webhooks/:id', url: (ids) => `/v1/webhooks/${ids.webhook}`, foreign: notFound('webhook_not_found') },
  { method: 'GET', path: '/v1/webhooks/:id', url: (ids) => `/v1/webhooks/${ids.webhook}`, foreign: notFound('webhook_not_found') },
  {
    method: 'PATCH',
    path: '/v1/webhooks/:id',
    url: (ids) => `/v1/webhooks/${ids.webhook}`,
    body: () => ({ url: 'https://hooks.example.com/taken-over', enabled: false }),
    foreign: notFound('webhook_not_found'),
  },
  { method: 'GET', path: '/v1/webhooks/:id/deliveries', url: (ids) => `/v1/webhooks/${ids.webhook}/deliveries`, foreign: notFound('webhook_not_found') },
  { method: 'POST', path: '/v1/webhooks/:id/test', url: (ids) => `/v1/webhooks/${ids.webhook}/test`, foreign: notFound('webhook_not_found') },
  { method: 'POST', path: '/v1/webhooks/:id/rotate-secret', url: (ids) => `/v1/webhooks/${ids.webhook}/rotate-secret`, foreign: notFound('webhook_not_found') },
  { method: 'GET', path: '/v1/api-keys', url: () => '/v1/api-keys', foreign: { status: 200 } },
  { method: 'POST', path: '/v1/api-keys', url: () => '/v1/api-keys', body: () => ({ name: 'sweep', scope: 'send' }), foreign: { status: 201 } },
  { method: 'DELETE', path: '/v1/api-keys/:id', url: (ids) => `/v1/api-keys/${ids.spareApiKeyId}`, foreign: notFound('api_key_not_found') },
]

/**
 * Bearer routes that need members:manage, which only an owner's session holds
 * (an API key of any scope gets 403 insufficient_scope): the project's people.
 */
export const MEMBER_ROUTES: BearerRouteCase[] = [
  { method: 'GET', path: '/v1/members', url: () => '/v1/members', foreign: { status: 200 } },
  {
    method: 'POST',
    path: '/v1/members/invites',
    url: () => '/v1/members/invites',
    body: () => ({ email: `sweep-${Math.random().toString(36).slice(2)}@example.com`, role: 'viewer' }),
    foreign: { status: 201 },
  },
  { method: 'DELETE', path: '/v1/members/invites/:id', url: (ids) => `/v1/members/invites/${ids.invite}`, foreign: notFound('invite_not_found') },
  { method: 'PATCH', path: '/v1/members/:user_id', url: (ids) => `/v1/members/${ids.member}`, body: () => ({ role: 'editor' }), foreign: notFound('member_not_found') },
  { method: 'DELETE', path: '/v1/members/:user_id', url: (ids) => `/v1/members/${ids.member}`, foreign: notFound('member_not_found') },
  // VAPID keys (issue 23): vapid_keys:manage, an owner's session alone, like the people above.
  { method: 'GET', path: '/v1/vapid-keys', url: () => '/v1/vapid-keys', foreign: { status: 200 } },
  { method: 'POST', path: '/v1/vapid-keys/rotate', url: () => '/v1/vapid-keys/rotate', foreign: { status: 201 } },
  {
    method: 'DELETE',
    path: '/v1/vapid-keys/:key_id',
    url: (ids) => `/v1/vapid-keys/${ids.spareVapidKey ?? `vk_${ids.project.slice(4)}`}`,
    foreign: notFound('vapid_key_not_found'),
  },
  // Test devices (issue 25): test_devices:use, sessions of owners, admins and editors; no key scope holds it.
  { method: 'GET', path: '/v1/test-devices', url: () => '/v1/test-devices', foreign: { status: 200 } },
  { method: 'POST', path: '/v1/test-devices', url: () => '/v1/test-devices', body: () => subscription({ label: 'Sweep browser' }), foreign: { status: 201 } },
  { method: 'POST', path: '/v1/test-devices/send', url: () => '/v1/test-devices/send', body: () => ({}), foreign: { status: 201 } },
  { method: 'DELETE', path: '/v1/test-devices/:id', url: (ids) => `/v1/test-devices/${ids.subscriber}`, foreign: { status: 200, body: { deleted: 0 } } },
]

/** Signing in and out, and the invite page: no API key, no project (the cookie, or nothing). */
export const SESSION_ROUTES: RouteCase[] = [
  { method: 'POST', path: '/v1/session', url: () => '/v1/session', body: () => ({ email: 'nobody@example.com', password: 'not the password' }) },
  { method: 'GET', path: '/v1/session', url: () => '/v1/session' },
  { method: 'PATCH', path: '/v1/session', url: () => '/v1/session', body: (ids) => ({ project: ids.project }) },
  { method: 'DELETE', path: '/v1/session', url: () => '/v1/session' },
  { method: 'DELETE', path: '/v1/sessions', url: () => '/v1/sessions' },
  { method: 'POST', path: '/v1/invites/inspect', url: () => '/v1/invites/inspect', body: () => ({ token: 'x'.repeat(43) }) },
  { method: 'POST', path: '/v1/invites/accept', url: () => '/v1/invites/accept', body: () => ({ token: 'x'.repeat(43), password: 'long enough password' }) },
  { method: 'POST', path: '/v1/session/password', url: () => '/v1/session/password', body: () => ({ current_password: 'not the password', new_password: 'long enough password' }) },
  { method: 'POST', path: '/v1/password-reset/inspect', url: () => '/v1/password-reset/inspect', body: () => ({ token: 'x'.repeat(43) }) },
  { method: 'POST', path: '/v1/password-reset', url: () => '/v1/password-reset', body: () => ({ token: 'x'.repeat(43), password: 'long enough password' }) },
]

/** Called from the customer's site: authenticated by ?project= alone, and answering CORS. */
export const BROWSER_ROUTES: RouteCase[] = [
  {
    method: 'POST',
    path: '/v1/subscribe',
    url: (ids) => `/v1/subscribe?project=${ids.project}`,
    body: () => subscription(),
  },
  { method: 'POST', path: '/v1/unsubscribe', url: (ids) => `/v1/unsubscribe?project=${ids.project}`, body: (ids) => ({ endpoint: ids.endpoint }) },
  { method: 'POST', path: '/v1/events', url: (ids) => `/v1/events?project=${ids.project}`, body: (ids) => ({ type: 'clicked', broadcast_id: ids.broadcast }) },
  { method: 'GET', path: '/v1/vapid-public-key', url: (ids) => `/v1/vapid-public-key?project=${ids.project}` },
  { method: 'GET', path: '/v1/notifications/:broadcast_id', url: (ids) => `/v1/notifications/${ids.broadcast}?project=${ids.project}` },
]

/** The email the operator's invite route of the table last invited (the reset route's account). */
let lastInvitedOwner = 'nobody@example.com'

/** The operator API (decisions.md §2), behind HERALD_ADMIN_TOKEN, and the process's metrics. */
export const ADMIN_ROUTES: RouteCase[] = [
  { method: 'GET', path: '/metrics', url: () => '/metrics' },
  { method: 'POST', path: '/admin/v1/projects', url: () => '/admin/v1/projects', body: () => ({ name: 'Sweep' }) },
  { method: 'GET', path: '/admin/v1/projects', url: () => '/admin/v1/projects' },
  { method: 'GET', path: '/admin/v1/projects/:id', url: (ids) => `/admin/v1/projects/${ids.project}` },
  { method: 'PATCH', path: '/admin/v1/projects/:id', url: (ids) => `/admin/v1/projects/${ids.project}`, body: () => ({ plan: 'max' }) },
  { method: 'GET', path: '/admin/v1/projects/:id/api-keys', url: (ids) => `/admin/v1/projects/${ids.project}/api-keys` },
  { method: 'POST', path: '/admin/v1/projects/:id/api-keys', url: (ids) => `/admin/v1/projects/${ids.project}/api-keys`, body: () => ({ name: 'sweep' }) },
  {
    method: 'POST',
    path: '/admin/v1/projects/:id/members',
    url: (ids) => `/admin/v1/projects/${ids.project}/members`,
    body: () => ({ email: (lastInvitedOwner = `owner-${Math.random().toString(36).slice(2)}@example.com`), role: 'owner' }),
  },
  // An account that exists (inviting makes none since issue 22: a member's): a reset link for it answers 201.
  { method: 'POST', path: '/admin/v1/users/password-reset', url: () => '/admin/v1/users/password-reset', body: (ids) => ({ email: ids.accountEmail ?? lastInvitedOwner }) },
  { method: 'GET', path: '/admin/v1/projects/:id/subscribers/export', url: (ids) => `/admin/v1/projects/${ids.project}/subscribers/export` },
  {
    method: 'PUT',
    path: '/admin/v1/projects/:id/vapid-keys',
    url: (ids) => `/admin/v1/projects/${ids.project}/vapid-keys`,
    populated: { status: 409, code: 'vapid_keys_in_use' },
    body: () => {
      const keys = generateVapidKeys()
      return { vapid_private: keys.privateKey, vapid_public: keys.publicKey }
    },
  },
  { method: 'GET', path: '/admin/v1/projects/:id/vapid-keys', url: (ids) => `/admin/v1/projects/${ids.project}/vapid-keys` },
  { method: 'POST', path: '/admin/v1/projects/:id/vapid-keys/rotate', url: (ids) => `/admin/v1/projects/${ids.project}/vapid-keys/rotate` },
  {
    method: 'DELETE',
    path: '/admin/v1/projects/:id/vapid-keys/:key_id',
    // The original key of a populated project is its current one (nothing rotated it).
    url: (ids) => `/admin/v1/projects/${ids.project}/vapid-keys/vk_${ids.project.slice(4)}`,
    populated: { status: 409, code: 'vapid_key_current' },
  },
  {
    method: 'DELETE',
    path: '/admin/v1/projects/:id/api-keys/:key_id',
    url: (ids) => `/admin/v1/projects/${ids.project}/api-keys/${ids.apiKeyId}`,
  },
]

export const routeName = (route: { method: string; path: string }): string => `${route.method} ${route.path}`
