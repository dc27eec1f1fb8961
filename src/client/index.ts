// A small typed client for Herald's server-side API (import from 'herald/client').
// Request and response types are the TypeBox schemas the routes validate with
// and /openapi.json is generated from (type-only imports: the client carries
// no server code), and client.test.ts checks every route below against the
// live /openapi.json.
import type { Static } from 'typebox'
import type { BroadcastView, ListBroadcastsQuery, ListBroadcastsResponse, NotificationAction, SendBody, SendResponse } from '../broadcasts/broadcasts.schemas.ts'
import type { DryRunResponse } from '../broadcasts/dry-run.schemas.ts'
import type { ExportBroadcastsQuery } from '../broadcasts/export.schemas.ts'
import type { ExperimentView } from '../experiments/experiments.schemas.ts'
import type { Added, AddMembersBody, CreatedId, CreateGroupBody, GroupList, UpdateGroupBody } from '../groups/groups.schemas.ts'
import type { Deleted, ListSubscribersQuery, Subscriber, SubscriberFilterQuery, SubscriberHealthCounts, SubscriberList, TagsPatchBody, Updated } from '../subscribers/subscribers.schemas.ts'
import type { MeResponse, UpdateMeBody } from '../projects/me.schemas.ts'
import type { SegmentFilter } from '../broadcasts/segment-filter.ts'
import type { AuditEntryView, AuditList, ListAuditQuery } from '../audit/audit.schemas.ts'
import type { StatsQuery, StatsResponse } from '../stats/stats.schemas.ts'
import type { ApiKeyList, ApiKeyView, CreateApiKeyBody, CreatedApiKey } from '../projects/api-keys.schemas.ts'
import type { ImportResult as ImportResultBody } from '../subscribers/import.schemas.ts'
import type { CreateTemplateBody, TemplateList, TemplateView, UpdateTemplateBody } from '../templates/templates.schemas.ts'
import type { FrequencyCapRule } from '../frequency-caps/caps.schemas.ts'
import type { RetiredVapidKey, RotatedVapidKeys, VapidKeyList, VapidKeyView } from '../projects/vapid-keys.schemas.ts'

export type SendRequest = SendBody
export type SendResult = SendResponse
/** What POST /v1/send answers to "dry_run": true: audience, push size and warnings; nothing is sent. */
export type DryRunResult = DryRunResponse
export type Group = Static<typeof GroupList>['groups'][number]
export type CreateGroupRequest = CreateGroupBody
export type UpdateGroupRequest = UpdateGroupBody
export type Broadcast = BroadcastView
/** A broadcast's funnel (Broadcast.funnel): audience → sent → delivered → shown → clicked, dismissed, with rates (docs/funnel.md). */
export type BroadcastFunnel = BroadcastView['funnel']
/** A broadcast's A/B test as GET /v1/broadcasts/:id shows it (docs/experiments.md). */
export type Experiment = ExperimentView
/** A saved template: notification fields with variables, their defaults, versions by language (docs/templates.md). */
export type Template = TemplateView
export type CreateTemplateRequest = CreateTemplateBody
export type UpdateTemplateRequest = UpdateTemplateBody
/** One action button of notification.actions (up to 2); clicks on it are counted in Broadcast.clicked_by_action. */
export type { NotificationAction }
export type BroadcastList = Static<typeof ListBroadcastsResponse>
export type ListBroadcastsOptions = Partial<ListBroadcastsQuery>
export type { Subscriber }
export type SubscriberPage = Static<typeof SubscriberList>
export type ListSubscribersOptions = Partial<ListSubscribersQuery>
export type SetTagsRequest = TagsPatchBody
/** Active subscribers by health: active, dormant, failing (docs/subscription-health.md). */
export type SubscriberHealth = Static<typeof SubscriberHealthCounts>
/** The project of the key: plan, limits, usage, VAPID public key, default icon, expiry rules. */
export type Project = MeResponse['project']
/** PATCH /v1/me: default_icon, expire_after_failures, expire_after_days_without_delivery (at least one). */
export type UpdateProjectRequest = UpdateMeBody
export type { SegmentFilter }
/** One audit log entry: who (user, key or operator), what, the target, when and from where. */
export type AuditEntry = AuditEntryView
export type AuditPage = AuditList
/** Filters of GET /v1/audit-log: actor_id, action (exact, or a prefix ending with a dot), target_id, since/until (Unix ms). */
export type ListAuditOptions = Partial<ListAuditQuery>
/** GET /v1/stats: per hour or day of the project's time zone (docs/stats.md). */
export type Stats = StatsResponse
export type StatsOptions = Partial<StatsQuery>
/** A key as lists show it (never the key itself). */
export type ApiKey = ApiKeyView
export type CreateApiKeyRequest = CreateApiKeyBody
/** A new key: the only answer that holds `api_key`. */
export type NewApiKey = CreatedApiKey
/** What an import did: { imported, updated, skipped, errors } (the first 100 errors). */
export type ImportResult = ImportResultBody
export type SubscribersFileFormat = 'ndjson' | 'csv'
/**
 * An import's body: the whole text, bytes, a Blob, a web ReadableStream, or
 * any async iterable of chunks (a Node Readable, fs.createReadStream):
 * streams are sent as they are read, never held whole.
 */
export type ImportBody = string | Uint8Array | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | string>
export interface ImportOptions {
  /** ndjson (default) or csv: the Content-Type sent. */
  format?: SubscribersFileFormat
}
/** GET /v1/subscribers/export: the format and, optionally, the filters of GET /v1/subscribers (issue 25). */
export interface ExportOptions extends Partial<SubscriberFilterQuery> {
  /** ndjson (default) or csv. */
  format?: SubscribersFileFormat
}
/** GET /v1/broadcasts/export: status, source, a date range on created_at (Unix ms, from inclusive, to exclusive) and the format (csv by default). */
export type ExportBroadcastsOptions = Partial<ExportBroadcastsQuery>
/** One frequency cap: at most `max` pushes per subscriber in the rolling window `per` (docs/frequency-caps.md). */
export type { FrequencyCapRule }
/** One of a project's VAPID key pairs (never its private half): current or not, and its active subscribers. */
export type VapidKey = VapidKeyView
export type { RotatedVapidKeys, RetiredVapidKey }

/** Every route the client calls: method and OpenAPI path. */
export const ROUTES = {
  send: ['POST', '/v1/send'],
  listTemplates: ['GET', '/v1/templates'],
  createTemplate: ['POST', '/v1/templates'],
  getTemplate: ['GET', '/v1/templates/{id}'],
  updateTemplate: ['PATCH', '/v1/templates/{id}'],
  deleteTemplate: ['DELETE', '/v1/templates/{id}'],
  listGroups: ['GET', '/v1/groups'],
  createGroup: ['POST', '/v1/groups'],
  updateGroup: ['PATCH', '/v1/groups/{id}'],
  deleteGroup: ['DELETE', '/v1/groups/{id}'],
  addGroupSubscribers: ['POST', '/v1/groups/{id}/subscribers'],
  removeGroupSubscriber: ['DELETE', '/v1/groups/{id}/subscribers/{sid}'],
  listBroadcasts: ['GET', '/v1/broadcasts'],
  exportBroadcasts: ['GET', '/v1/broadcasts/export'],
  getBroadcast: ['GET', '/v1/broadcasts/{id}'],
  cancelBroadcast: ['DELETE', '/v1/broadcasts/{id}'],
  stopBroadcast: ['POST', '/v1/broadcasts/{id}/stop'],
  decideExperiment: ['POST', '/v1/broadcasts/{id}/experiment/decide'],
  getProject: ['GET', '/v1/me'],
  updateProject: ['PATCH', '/v1/me'],
  listSubscribers: ['GET', '/v1/subscribers'],
  countSubscriberHealth: ['GET', '/v1/subscribers/health'],
  getSubscriber: ['GET', '/v1/subscribers/{sid}'],
  eraseSubscriber: ['DELETE', '/v1/subscribers/{sid}'],
  eraseSubscriberByEndpoint: ['DELETE', '/v1/subscribers/by-endpoint'],
  eraseSubscribersByExternalId: ['DELETE', '/v1/subscribers/by-external-id/{external_id}'],
  setSubscriberTags: ['PATCH', '/v1/subscribers/{sid}'],
  setUserTags: ['PATCH', '/v1/subscribers/by-external-id/{external_id}'],
  listAuditLog: ['GET', '/v1/audit-log'],
  getStats: ['GET', '/v1/stats'],
  listApiKeys: ['GET', '/v1/api-keys'],
  createApiKey: ['POST', '/v1/api-keys'],
  revokeApiKey: ['DELETE', '/v1/api-keys/{id}'],
  importSubscribers: ['POST', '/v1/subscribers/import'],
  exportSubscribers: ['GET', '/v1/subscribers/export'],
  listProjectVapidKeys: ['GET', '/admin/v1/projects/{id}/vapid-keys'],
  rotateProjectVapidKeys: ['POST', '/admin/v1/projects/{id}/vapid-keys/rotate'],
  retireProjectVapidKey: ['DELETE', '/admin/v1/projects/{id}/vapid-keys/{key_id}'],
} as const satisfies Record<string, readonly [string, string]>

export type RouteName = keyof typeof ROUTES

/** Herald answered with an error: `code` is the error code to branch on (decisions.md §1). */
export class HeraldApiError extends Error {
  readonly status: number
  readonly code: string
  /** The whole error object: code, message and extra fields (issues, limit, audience, request_id). */
  readonly details: Record<string, unknown>

  constructor(status: number, details: { code: string; message: string } & Record<string, unknown>) {
    super(details.message)
    this.name = 'HeraldApiError'
    this.status = status
    this.code = details.code
    this.details = details
  }
}

export interface HeraldClientOptions {
  /** Herald's base URL, e.g. https://push.example.com. */
  baseUrl: string
  /** A project API key, hk_live_…. Keep it on the server. */
  apiKey: string
  /** Default: the global fetch (Node 18+). */
  fetch?: typeof fetch
}

interface Call {
  params?: Record<string, string>
  query?: Record<string, string | number | undefined>
  body?: unknown
  headers?: Record<string, string>
  /** Sent as it is (with its own content-type in `headers`) instead of JSON. */
  raw?: BodyInit
}

const FILE_TYPES: Record<SubscribersFileFormat, string> = { ndjson: 'application/x-ndjson', csv: 'text/csv' }

/** An import body as fetch takes it: async iterables become a ReadableStream, read as fetch sends. */
function importBody(body: ImportBody): BodyInit {
  if (typeof body === 'string' || body instanceof Uint8Array || body instanceof Blob || body instanceof ReadableStream) return body as BodyInit
  const iterator = body[Symbol.asyncIterator]()
  const encoder = new TextEncoder()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next()
      if (next.done) controller.close()
      else controller.enqueue(typeof next.value === 'string' ? encoder.encode(next.value) : next.value)
    },
    async cancel() {
      await iterator.return?.()
    },
  })
}

export interface SendOptions {
  /**
   * Sent as the Idempotency-Key header: retrying send() with the same key and
   * body gives the first answer again instead of a second broadcast, for 24
   * hours. 1-255 printable ASCII characters, e.g. crypto.randomUUID(), made
   * once per broadcast you mean and kept across your retries.
   */
  idempotencyKey?: string
}

export function createHeraldClient(options: HeraldClientOptions) {
  const baseUrl = options.baseUrl.replace(/\/+$/, '')
  const fetchImpl = options.fetch ?? fetch

  /** The response when it is a success, else a HeraldApiError. */
  async function request(route: RouteName, { params = {}, query = {}, body, headers: extra = {}, raw }: Call = {}): Promise<Response> {
    const [method, template] = ROUTES[route]
    const path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name]))
    const url = new URL(baseUrl + path)
    for (const [name, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(name, String(value))
    const headers: Record<string, string> = { ...extra, authorization: `Bearer ${options.apiKey}` }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const init: RequestInit & { duplex?: 'half' } = { method, headers, body: raw ?? (body === undefined ? undefined : JSON.stringify(body)) }
    // A stream body needs duplex: 'half' in Node's fetch (and in the Fetch standard).
    if (raw instanceof ReadableStream) init.duplex = 'half'
    const response = await fetchImpl(url, init)
    if (response.ok) return response
    return failed(response, method, path)
  }

  /** A streamed answer's body (an export). */
  function bodyOf(response: Response): ReadableStream<Uint8Array> {
    if (!response.body) throw new HeraldApiError(response.status, { code: 'http_error', message: 'Herald sent no body' })
    return response.body
  }

  async function call<T>(route: RouteName, what: Call = {}): Promise<T> {
    const text = await (await request(route, what)).text()
    try {
      return (text ? JSON.parse(text) : null) as T
    } catch {
      return null as T // a success without JSON: nothing to return
    }
  }

  async function failed(response: Response, method: string, path: string): Promise<never> {
    const text = await response.text()
    let json: unknown = null
    try {
      json = text ? JSON.parse(text) : null
    } catch {
      // not JSON: reported below
    }
    const error = (json as { error?: { code?: unknown; message?: unknown } } | null)?.error
    if (error && typeof error.code === 'string') {
      throw new HeraldApiError(response.status, { ...error, code: error.code, message: typeof error.message === 'string' ? error.message : error.code })
    }
    throw new HeraldApiError(response.status, { code: 'http_error', message: `Herald answered ${response.status} to ${method} ${path}` })
  }

  const client = {
    /**
     * POST /v1/send: a broadcast now, or at scheduled_at. With idempotencyKey,
     * a retry is answered as the first send was (409 idempotency_key_in_progress
     * while it runs, 422 idempotency_key_reused for another body).
     */
    send: (body: SendRequest & { dry_run?: false }, sendOptions: SendOptions = {}) =>
      call<SendResult>('send', {
        body,
        headers: sendOptions.idempotencyKey === undefined ? {} : { 'idempotency-key': sendOptions.idempotencyKey },
      }),
    /** POST /v1/send with dry_run: true: the same checks and errors as send, nothing created or counted. */
    dryRun: (body: Omit<SendRequest, 'dry_run'>) => call<DryRunResult>('send', { body: { ...body, dry_run: true } }),
    groups: {
      list: async () => (await call<Static<typeof GroupList>>('listGroups')).groups,
      create: async (body: CreateGroupRequest) => (await call<Static<typeof CreatedId>>('createGroup', { body })).id,
      update: (id: string, body: UpdateGroupRequest) => call<{ ok: true }>('updateGroup', { params: { id }, body }),
      delete: (id: string) => call<{ ok: true }>('deleteGroup', { params: { id } }),
      addSubscribers: async (id: string, subscriberIds: AddMembersBody['subscriber_ids']) =>
        (await call<Static<typeof Added>>('addGroupSubscribers', { params: { id }, body: { subscriber_ids: subscriberIds } })).added,
      removeSubscriber: (id: string, sid: string) => call<{ ok: true }>('removeGroupSubscriber', { params: { id, sid } }),
    },
    /** Saved templates; send one with send({ template_id, data, target }). */
    templates: {
      list: async () => (await call<Static<typeof TemplateList>>('listTemplates')).templates,
      /** 400 template_invalid naming the field when the sandbox refuses a field; 409 template_name_taken. */
      create: (body: CreateTemplateRequest) => call<Template>('createTemplate', { body }),
      get: (id: string) => call<Template>('getTemplate', { params: { id } }),
      /** Each field given replaces the stored one whole. */
      update: (id: string, body: UpdateTemplateRequest) => call<Template>('updateTemplate', { params: { id }, body }),
      delete: (id: string) => call<{ ok: true }>('deleteTemplate', { params: { id } }),
    },
    broadcasts: {
      list: (query: ListBroadcastsOptions = {}) => call<BroadcastList>('listBroadcasts', { query }),
      get: (id: string) => call<Broadcast>('getBroadcast', { params: { id } }),
      /** Cancels a scheduled broadcast (409 broadcast_not_cancelable otherwise). */
      cancel: (id: string) => call<{ ok: boolean }>('cancelBroadcast', { params: { id } }),
      /** Stops a scheduled, pending or sending broadcast: nothing more is pushed (409 broadcast_not_stoppable once it is over). */
      stop: (id: string) => call<{ ok: boolean }>('stopBroadcast', { params: { id } }),
      /** GET /v1/broadcasts/export as a stream of bytes (CSV by default, newest first): for many broadcasts, pipe it to a file. */
      export: async (exportOptions: ExportBroadcastsOptions = {}) => bodyOf(await request('exportBroadcasts', { query: exportOptions })),
      /** The same, whole, as text. */
      exportText: async (exportOptions: ExportBroadcastsOptions = {}) => (await request('exportBroadcasts', { query: exportOptions })).text(),
      /** Ends the broadcast's A/B test early: the winner (default: the leader now) goes to the rest of the audience (docs/experiments.md). */
      decideExperiment: (id: string, body: { winner?: string } = {}) => call<Broadcast>('decideExperiment', { params: { id }, body }),
    },
    project: {
      get: async () => (await call<MeResponse>('getProject')).project,
      /** Sets the default icon or the expiry rules (a number turns a rule on, null off); resolves to the project. */
      update: async (body: UpdateProjectRequest) => (await call<MeResponse>('updateProject', { body })).project,
      /** Replaces the project's frequency caps; [] or null turns them off (owners, admins and full keys). */
      setFrequencyCaps: async (caps: FrequencyCapRule[] | null) => (await call<MeResponse>('updateProject', { body: { frequency_caps: caps } })).project.frequency_caps,
    },
    subscribers: {
      list: (query: ListSubscribersOptions = {}) => call<SubscriberPage>('listSubscribers', { query }),
      /** The active subscribers by health: active, dormant, failing. */
      health: () => call<SubscriberHealth>('countSubscriberHealth'),
      get: (sid: string) => call<Subscriber>('getSubscriber', { params: { sid } }),
      /** Erasure: deletes the subscriber, its memberships and its events. */
      erase: async (sid: string) => (await call<Static<typeof Deleted>>('eraseSubscriber', { params: { sid } })).deleted,
      eraseByEndpoint: async (endpoint: string) => (await call<Static<typeof Deleted>>('eraseSubscriberByEndpoint', { body: { endpoint } })).deleted,
      eraseByExternalId: async (externalId: string) =>
        (await call<Static<typeof Deleted>>('eraseSubscribersByExternalId', { params: { external_id: externalId } })).deleted,
      /** Replaces the subscriber's tags, or merges them with `merge: true` (null removes a key); resolves to the updated subscriber. */
      setTags: (sid: string, body: SetTagsRequest) => call<Subscriber>('setSubscriberTags', { params: { sid }, body }),
      /** The same for every device of one user; resolves to how many were updated (404 subscriber_not_found when none). */
      setTagsByExternalId: async (externalId: string, body: SetTagsRequest) =>
        (await call<Static<typeof Updated>>('setUserTags', { params: { external_id: externalId }, body })).updated,
      /**
       * POST /v1/subscribers/import (a full key, owner or admin): NDJSON or CSV,
       * streamed. Bad lines are skipped and reported in the answer, not thrown.
       */
      import: (body: ImportBody, importOptions: ImportOptions = {}) => {
        const format = importOptions.format ?? 'ndjson'
        return request('importSubscribers', { raw: importBody(body), headers: { 'content-type': FILE_TYPES[format] } })
          .then(async (response) => (await response.json()) as ImportResult)
      },
      /** The same from a file (Node), read as a stream; csv when the name ends in .csv unless `format` says otherwise. */
      importFile: async (path: string, importOptions: ImportOptions = {}) => {
        const { createReadStream } = await import('node:fs')
        const format = importOptions.format ?? (path.toLowerCase().endsWith('.csv') ? 'csv' : 'ndjson')
        const file = createReadStream(path)
        try {
          return await client.subscribers.import(file, { format })
        } finally {
          file.destroy()
        }
      },
      /** GET /v1/subscribers/export as a stream of bytes, read as Herald writes it (for a large project, pipe it to a file); the list's filters apply. */
      export: async (exportOptions: ExportOptions = {}) => bodyOf(await request('exportSubscribers', { query: { ...exportOptions } })),
      /** The same, whole, as text: for small projects. */
      exportText: async (exportOptions: ExportOptions = {}) => (await request('exportSubscribers', { query: { ...exportOptions } })).text(),
      /** Sets the subscriber's IANA time zone (null clears it: the project's default applies); resolves to the updated subscriber. */
      setTimezone: (sid: string, timezone: string | null) => call<Subscriber>('setSubscriberTags', { params: { sid }, body: { timezone } }),
    },
    auditLog: {
      /** One page of the project's audit log, newest first (a full API key, or an owner's or admin's session). */
      list: (query: ListAuditOptions = {}) => call<AuditPage>('listAuditLog', { query }),
    },
    /** Numbers over time: pushes, engagement and subscribers per hour or day (any key or member that may read broadcasts). */
    stats: (query: StatsOptions = {}) => call<Stats>('getStats', { query }),
    /** The project's keys; these need a full-scope key (403 insufficient_scope otherwise). */
    apiKeys: {
      list: async () => (await call<ApiKeyList>('listApiKeys')).api_keys,
      /** A new key, optionally named and scoped (default full); `api_key` is shown in this answer only. */
      create: (body: CreateApiKeyRequest = {}) => call<NewApiKey>('createApiKey', { body }),
      /** Revokes the key at once; 404 api_key_not_found for an id that is not this project's. */
      revoke: (id: string) => call<{ ok: true }>('revokeApiKey', { params: { id } }),
    },
    /**
     * The operator API: give the operator token (HERALD_ADMIN_TOKEN) as `apiKey`;
     * a project key gets 401 here. (A project's owners rotate from the dashboard.)
     */
    operator: {
      vapidKeys: {
        list: async (projectId: string) => (await call<VapidKeyList>('listProjectVapidKeys', { params: { id: projectId } })).vapid_keys,
        /** Makes a new pair current (fresh, or the imported pair given); every existing subscription stays on its own. */
        rotate: (projectId: string, imported?: { vapid_private: string; vapid_public: string }) =>
          call<RotatedVapidKeys>('rotateProjectVapidKeys', { params: { id: projectId }, body: imported ?? {} }),
        /** Retires a pair; 409 vapid_key_has_subscribers while in use, unless `force` (which expires those subscriptions and counts them). */
        retire: (projectId: string, keyId: string, options: { force?: boolean } = {}) =>
          call<RetiredVapidKey>('retireProjectVapidKey', { params: { id: projectId, key_id: keyId }, query: { force: options.force ? 'true' : undefined } }),
      },
    },
  }
  return client
}

export type HeraldClient = ReturnType<typeof createHeraldClient>
