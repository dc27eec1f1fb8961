// The process's Prometheus metrics (docs/decisions.md "Metrics and logs"):
// one prom-client registry per context, so several apps in one test process
// never see each other's numbers. Every metric is declared here, with its
// names and labels in one place; the code that counts holds a reference.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { Database } from '../db/database.ts'
import { VERSION } from '../version.ts'

/** The push service labels: subscribers.push_service (migration 0006). */
export const PUSH_SERVICES = ['fcm', 'mozilla', 'apple', 'wns', 'other'] as const
export type PushServiceLabel = (typeof PUSH_SERVICES)[number]

/**
 * Push latency buckets, in seconds: push services answer in tens of ms when
 * well, seconds when struggling, and the timeout (10 s by default) caps it.
 */
const PUSH_SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
/** API latency buckets, in seconds (prom-client's defaults, which fit an HTTP API). */
const HTTP_SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/** Work waiting in a table, read at scrape time: how many, and how long the oldest has been due. */
export interface Backlog {
  /** The label value (a job kind); '' for a backlog without one. */
  label: string
  waiting: number
  oldestSeconds: number
}

/**
 * Node's own metrics (memory, event-loop delay, GC, handles) belong to the
 * process, not to a context: collected once per process, into a registry of
 * their own, and merged into every context's scrape. (Each collection starts
 * an event-loop delay monitor and a GC observer that are never stopped.)
 */
let processRegistry: Registry | null = null

function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry()
    collectDefaultMetrics({ register: processRegistry, prefix: 'herald_' })
  }
  return processRegistry
}

export class Metrics {
  readonly registry = new Registry()
  /** Push attempts answered (or timed out), by push service and what came of them. */
  readonly pushes: Counter<'push_service' | 'outcome' | 'reason'>
  readonly pushSeconds: Histogram<'push_service'>
  readonly jobsClaimed: Counter<'kind'>
  readonly jobsRetried: Counter<'kind'>
  readonly jobsFailed: Counter<'kind'>
  readonly webhookDeliveries: Counter<'outcome' | 'reason'>
  readonly httpRequests: Counter<'method' | 'route' | 'status'>
  readonly httpSeconds: Histogram<'method' | 'route'>
  /** Reads of one scrape, shared by the gauges a read fills. */
  private scrape = new Map<string, Promise<Backlog[]>>()

  constructor(db: Database) {
    const registers = [this.registry]
    this.pushes = new Counter({
      name: 'herald_pushes_total',
      help: 'Push attempts by push service and outcome: delivered; failed (reason gone, rejected, or unreachable when it was the last attempt); retried (reason rate_limited, server_error, timeout)',
      labelNames: ['push_service', 'outcome', 'reason'],
      registers,
    })
    this.pushSeconds = new Histogram({
      name: 'herald_push_duration_seconds',
      help: 'Time from handing a push to the push client to its answer (waiting for a free connection included)',
      labelNames: ['push_service'],
      buckets: PUSH_SECONDS_BUCKETS,
      registers,
    })
    this.jobsClaimed = new Counter({ name: 'herald_jobs_claimed_total', help: 'Jobs claimed by this process', labelNames: ['kind'], registers })
    this.jobsRetried = new Counter({ name: 'herald_jobs_retried_total', help: 'Job runs that failed (or asked to wait) and were put back to run again', labelNames: ['kind'], registers })
    this.jobsFailed = new Counter({ name: 'herald_jobs_failed_total', help: 'Jobs that failed their last attempt and were parked', labelNames: ['kind'], registers })
    this.webhookDeliveries = new Counter({
      name: 'herald_webhook_deliveries_total',
      help: 'Webhook delivery attempts: delivered (2xx) or failed (reason gone, rejected, retry)',
      labelNames: ['outcome', 'reason'],
      registers,
    })
    this.httpRequests = new Counter({
      name: 'herald_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    })
    this.httpSeconds = new Histogram({
      name: 'herald_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by method and route pattern',
      labelNames: ['method', 'route'],
      buckets: HTTP_SECONDS_BUCKETS,
      registers,
    })
    new Gauge({
      name: 'herald_db_connections',
      help: 'Database connections by state: in_use (running a query or transaction) and idle. Embedded PGlite is one connection.',
      labelNames: ['state'],
      registers,
      collect() {
        const now = db.connections()
        this.set({ state: 'in_use' }, now.inUse)
        this.set({ state: 'idle' }, now.total - now.inUse)
      },
    })
    // Prometheus's build_info convention: a constant 1 whose labels say which release runs here.
    new Gauge({
      name: 'herald_build_info',
      help: 'Always 1; labels: the Herald release (package.json version) and Node.js version of this process',
      labelNames: ['version', 'node_version'],
      registers,
    }).set({ version: VERSION, node_version: process.versions.node }, 1)
    new Gauge({
      name: 'herald_db_waiting_requests',
      help: 'Queries and transactions waiting for a database connection (embedded: queued behind the one running)',
      registers,
      collect() {
        this.set(db.connections().waiting)
      },
    })
  }

  /**
   * Adds `${name}_waiting` and `${name}_oldest_waiting_age_seconds` gauges,
   * filled by one call of read per scrape. Once per name: a process running
   * the API and the worker registers a backlog once.
   */
  addBacklog(name: string, help: string, label: string | null, read: () => Promise<Backlog[]>): void {
    const waitingName = `herald_${name}_waiting`
    if (this.registry.getSingleMetric(waitingName)) return
    const labelNames = label ? [label] : []
    const fill = async (gauge: Gauge<string>, value: (b: Backlog) => number) => {
      gauge.reset()
      let rows = this.scrape.get(name)
      if (!rows) this.scrape.set(name, (rows = read()))
      // A database away makes the scrape answer without these gauges rather than fail.
      const backlog = await rows.catch(() => [] as Backlog[])
      for (const row of backlog) {
        if (label) gauge.set({ [label]: row.label }, value(row))
        else gauge.set(value(row))
      }
    }
    new Gauge({
      name: waitingName,
      help: `${help}: due and not yet taken`,
      labelNames,
      registers: [this.registry],
      async collect() {
        await fill(this, (b) => b.waiting)
      },
    })
    new Gauge({
      name: `herald_${name}_oldest_waiting_age_seconds`,
      help: `${help}: how long the oldest one has been due (0 when none)`,
      labelNames,
      registers: [this.registry],
      async collect() {
        await fill(this, (b) => b.oldestSeconds)
      },
    })
  }

  get contentType(): string {
    return this.registry.contentType
  }

  /** The exposition text, the process's metrics included: every collect callback runs now, backlogs read once each. */
  async text(): Promise<string> {
    this.scrape = new Map()
    try {
      return await Registry.merge([processMetrics(), this.registry]).metrics()
    } finally {
      this.scrape = new Map()
    }
  }
}
