// The one place that reads the environment. Parsed and checked once at start;
// a bad value stops the process with a message naming the variable.
import { isIP } from 'node:net'

export const DEFAULT_PORT = 3000
/** Loopback by default: a laptop install is not reachable from the network until HERALD_HOST says so. */
export const DEFAULT_HOST = '127.0.0.1'
export const DEFAULT_DATA_DIR = './data'
export const DEFAULT_SCHEDULER_INTERVAL_MS = 1000
/** A placeholder that passes the subject's checks, so a laptop starts; `herald doctor` fails it (push services may write to it). */
export const DEFAULT_VAPID_SUBJECT = 'mailto:admin@example.com'
/** Push services Herald will send to unless HERALD_PUSH_HOSTS replaces the list (decisions.md §5). */
export const DEFAULT_PUSH_HOSTS = [
  'fcm.googleapis.com',
  'android.googleapis.com',
  'updates.push.services.mozilla.com',
  '*.push.apple.com',
  '*.notify.windows.com',
]

/**
 * Subscribers per fan-out batch job: one transaction of outcomes each, and the
 * unit two workers split a broadcast by. 1,000 since 0.3.0 (500 before): half
 * the per-batch statements, ~7% more pushes a second on the embedded database
 * at 20,000 (docs/performance.md, issue 26).
 */
export const DEFAULT_FANOUT_BATCH_SIZE = 1000
/** Jobs one worker process runs at once; each batch keeps up to a batch of pushes in flight. */
export const DEFAULT_WORKER_CONCURRENCY = 8
/**
 * Connections per push service origin: at ~50 ms a round trip, 512 HTTP/1.1
 * connections carry up to ~10,000 pushes/s, 256 at most ~5,000 (which the
 * bench reached ~80% of). 512 pushed ~30% more on the bench; with one
 * encryption thread instead of two (encrypt-pool.ts defaultThreads) the
 * embedded peak RSS at 200,000 subscribers stays ~264 MB (docs/performance.md).
 */
export const DEFAULT_PUSH_CONNECTIONS = 512
/**
 * HTTP/2 to push services (node:http2 sessions, 4 per origin) is off by
 * default: on the bench (quiet machine, from the build, 50,000 subscribers)
 * it pushed ~20% slower than the HTTP/1.1 pool (embedded 2,537 vs 3,214,
 * postgres 3,244 vs 4,023 pushes/s) for ~12-18 MB less peak RSS. It works and
 * is tested; turn it on to use 4 TLS connections per push service instead of
 * up to HERALD_PUSH_CONNECTIONS.
 */
export const DEFAULT_PUSH_HTTP2 = false
/** A worker killed mid-job holds it this long at most before another worker takes it over. */
export const DEFAULT_JOB_LEASE_MS = 30_000
/** A push service that sends no answer within this long is treated as unreachable for that attempt. */
export const DEFAULT_PUSH_TIMEOUT_MS = 10_000
/** First retry of a 5xx or timeout waits about this long; each further retry doubles it (with jitter). */
export const DEFAULT_PUSH_RETRY_BASE_MS = 5_000

/** A webhook endpoint that sends no answer within this long has failed that attempt. */
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000
/** First webhook retry waits this long; the rest of the schedule scales with it (see webhooks/retry-schedule.ts). */
export const DEFAULT_WEBHOOK_RETRY_BASE_MS = 5_000
/** Webhook requests in flight per worker process, over all endpoints. */
export const DEFAULT_WEBHOOK_CONCURRENCY = 64
/** Webhook requests in flight per endpoint and worker process: one slow endpoint holds at most this many slots. */
export const DEFAULT_WEBHOOK_ENDPOINT_CONCURRENCY = 8
/** An endpoint whose every attempt has failed for this long is disabled (Svix: 5 days). */
export const DEFAULT_WEBHOOK_DISABLE_AFTER_MS = 5 * 24 * 3_600_000

/*
 * Bounds on every PostgreSQL server connection (pool and LISTEN), so a Herald
 * process cut off mid-transaction cannot hold its locks for long, and a
 * waiting one gives up rather than queue for ever. Measured on a 50,000
 * subscriber fan-out (PostgreSQL, one in-process worker, the development
 * machine's 2 cores shared with other test runs): the longest statement took
 * 7.1 s (the webhook claim, starved of CPU), the longest transaction 1.8 s, and
 * the longest pause between two statements of a transaction 0.22 s. Each bound
 * below is several times that.
 * Migrations (long DDL, waiting for another process's migration) lift the
 * statement and lock timeouts for their own transaction.
 */
/** The server cancels any one statement running longer than this. */
export const DEFAULT_DB_STATEMENT_TIMEOUT_MS = 60_000
/** A statement waiting this long for a row or table lock fails (and its job retries) instead of waiting on. */
export const DEFAULT_DB_LOCK_TIMEOUT_MS = 20_000
/**
 * The server ends a session that sits this long inside a transaction without
 * sending anything: Herald never waits on anything but the database inside
 * one, so this only fires when its process is gone or cut off, and frees the
 * locks it held (rows of a broadcast other workers need).
 */
export const DEFAULT_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000
/** Opening a connection (TCP, TLS, authentication) fails after this, so a cut-off server is retried instead of waited on. */
export const DEFAULT_DB_CONNECT_TIMEOUT_MS = 5_000

/** A dashboard session ends after this long without a request (HERALD_SESSION_IDLE_MINUTES): a forgotten tab does not stay signed in. */
export const DEFAULT_SESSION_IDLE_MINUTES = 12 * 60
/** A dashboard session ends this long after sign-in whatever its use (HERALD_SESSION_MAX_DAYS): a stolen cookie is not good for ever. */
export const DEFAULT_SESSION_MAX_DAYS = 14

/** Audit log entries are kept this long, then pruned (HERALD_AUDIT_RETENTION_DAYS): a year covers an annual review. */
export const DEFAULT_AUDIT_RETENTION_DAYS = 365

/** proxy-addr's names for address ranges, accepted in HERALD_TRUST_PROXY beside addresses and CIDRs. */
export const TRUST_PROXY_RANGES = ['loopback', 'linklocal', 'uniquelocal']

export type Role = 'api' | 'worker' | 'all'

/** pretty: one readable line per event (pino-pretty); json: one JSON object per line (pino's own), for log collectors. */
export type LogFormat = 'pretty' | 'json'

export interface Config {
  env: 'development' | 'production' | 'test'
  port: number
  host: string
  /** Set: run on this PostgreSQL server. Unset: the embedded PGlite database in dataDir. */
  databaseUrl: string | null
  dataDir: string
  redisUrl: string | null
  publicUrl: string
  cdnUrl: string
  /** Null in development means "make one and keep it in dataDir". */
  adminToken: string | null
  allowPrivateEndpoints: boolean
  pushHosts: string[]
  vapidSubject: string
  schedulerIntervalMs: number
  logLevel: string
  /** Default: pretty when stdout is a terminal and NODE_ENV is not production, else json. */
  logFormat: LogFormat
  /** Set: /metrics without a token on this port too (on HERALD_HOST). Null: only on PORT, with the operator token. */
  metricsPort: number | null
  fanoutBatchSize: number
  workerConcurrency: number
  /** Encryption threads; default one per core. 0 encrypts on the main thread. */
  encryptThreads: number | null
  /** RFC 8291 through the OpenSSL addon when it was built at install; false: node:crypto only. Threads get it from EncryptPool. */
  nativeCrypto: boolean
  /** The embedded database (PGlite) in a worker thread of its own (the default); false: in the main thread (issue 26). */
  embeddedThread: boolean
  pushTimeoutMs: number
  pushRetryBaseMs: number
  /** Connections per push service origin. */
  pushConnections: number
  /** How long a worker's claim on a job lasts unrenewed: a crashed worker's jobs resume after this. */
  jobLeaseMs: number
  /** Negotiate HTTP/2 with push services that offer it (HTTPS only). */
  pushHttp2: boolean
  /** Who speaks HTTP/1.1 to push services: Herald's own framing (default) or undici's pool (the fallback). */
  pushHttp1: 'herald' | 'undici'
  webhookTimeoutMs: number
  webhookRetryBaseMs: number
  webhookConcurrency: number
  webhookEndpointConcurrency: number
  webhookDisableAfterMs: number
  dbStatementTimeoutMs: number
  dbLockTimeoutMs: number
  dbIdleInTransactionTimeoutMs: number
  dbConnectTimeoutMs: number
  /** Dashboard sessions: idle and absolute lifetimes, in ms. */
  sessionIdleMs: number
  sessionMaxMs: number
  /** Days an audit log entry is kept (1 to 3650). */
  auditRetentionDays: number
  /**
   * The proxies whose X-Forwarded-For is believed (addresses, CIDRs, or
   * loopback/linklocal/uniquelocal). Empty (the default): the client address
   * is the socket's, whatever the request's headers say.
   */
  trustProxy: string[]
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>

function int(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer between ${min} and ${max}, got "${raw}"`)
  }
  return value
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (['true', '1', 'yes'].includes(raw.toLowerCase())) return true
  if (['false', '0', 'no'].includes(raw.toLowerCase())) return false
  throw new ConfigError(`${name} must be true or false, got "${raw}"`)
}

function url(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    throw new ConfigError(`${name} must be an absolute URL, got "${raw}"`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`)
  }
  return raw.replace(/\/+$/, '')
}

function pushHttp1(env: Env): Config['pushHttp1'] {
  const raw = env.HERALD_PUSH_HTTP1
  if (raw === undefined || raw === '') return 'herald'
  if (raw === 'herald' || raw === 'undici') return raw
  throw new ConfigError(`HERALD_PUSH_HTTP1 must be herald or undici, got "${raw}"`)
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

function logLevel(env: Env, nodeEnv: Config['env']): string {
  const raw = env.HERALD_LOG_LEVEL
  if (raw === undefined || raw === '') return nodeEnv === 'test' ? 'silent' : 'info'
  if (!LOG_LEVELS.includes(raw)) throw new ConfigError(`HERALD_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`)
  return raw
}

function logFormat(env: Env, nodeEnv: Config['env'], stdoutIsTty: boolean): LogFormat {
  const raw = env.HERALD_LOG_FORMAT
  if (raw === undefined || raw === '') return stdoutIsTty && nodeEnv !== 'production' ? 'pretty' : 'json'
  if (raw === 'pretty' || raw === 'json') return raw
  throw new ConfigError(`HERALD_LOG_FORMAT must be pretty or json, got "${raw}"`)
}

/**
 * HERALD_TRUST_PROXY: a comma-separated list of the proxies in front of
 * Herald. Each entry is an IP address, a CIDR (10.0.0.0/8, fd00::/8) or one of
 * TRUST_PROXY_RANGES. `true`, `*` and hop counts are refused: they believe a
 * header any client can write whenever Herald's port is reachable without the
 * proxy (decisions.md "Client addresses behind a proxy").
 */
function trustProxy(env: Env): string[] {
  const raw = env.HERALD_TRUST_PROXY
  if (raw === undefined || raw.trim() === '') return []
  const entries = raw.split(',').map((entry) => entry.trim())
  for (const entry of entries) {
    if (!isProxyEntry(entry)) {
      throw new ConfigError(`HERALD_TRUST_PROXY must be a comma-separated list of proxy addresses or CIDRs (or ${TRUST_PROXY_RANGES.join(', ')}); "true", "*" and hop counts are not accepted; got "${raw}"`)
    }
  }
  return entries
}

function isProxyEntry(entry: string): boolean {
  if (TRUST_PROXY_RANGES.includes(entry)) return true
  const slash = entry.indexOf('/')
  if (slash < 0) return isIP(entry) !== 0
  const version = isIP(entry.slice(0, slash))
  const bits = entry.slice(slash + 1)
  if (version === 0 || !/^\d{1,3}$/.test(bits)) return false
  return Number(bits) <= (version === 4 ? 32 : 128)
}

/** stdoutIsTty: whether a person is watching (decides the default log format). */
export function loadConfig(env: Env = process.env, stdoutIsTty = process.stdout.isTTY === true): Config {
  const nodeEnv = env.NODE_ENV === 'production' ? 'production' : env.NODE_ENV === 'test' ? 'test' : 'development'
  const port = int(env, 'PORT', DEFAULT_PORT, 0, 65535)
  const publicUrl = url(env, 'HERALD_PUBLIC_URL', `http://localhost:${port}`)
  const adminToken = env.HERALD_ADMIN_TOKEN || null
  if (adminToken !== null && adminToken.length < 16) {
    throw new ConfigError('HERALD_ADMIN_TOKEN must be at least 16 characters')
  }
  if (nodeEnv === 'production' && adminToken === null) {
    throw new ConfigError('HERALD_ADMIN_TOKEN must be set when NODE_ENV=production')
  }
  return {
    env: nodeEnv,
    port,
    host: env.HERALD_HOST || DEFAULT_HOST,
    databaseUrl: env.DATABASE_URL || null,
    dataDir: env.HERALD_DATA_DIR || DEFAULT_DATA_DIR,
    redisUrl: env.REDIS_URL || null,
    publicUrl,
    cdnUrl: url(env, 'HERALD_CDN_URL', publicUrl),
    adminToken,
    allowPrivateEndpoints: bool(env, 'HERALD_ALLOW_PRIVATE_ENDPOINTS', false),
    pushHosts: env.HERALD_PUSH_HOSTS
      ? env.HERALD_PUSH_HOSTS.split(',').map((h) => h.trim().toLowerCase()).filter(Boolean)
      : DEFAULT_PUSH_HOSTS,
    vapidSubject: env.HERALD_VAPID_SUBJECT || DEFAULT_VAPID_SUBJECT,
    schedulerIntervalMs: int(env, 'HERALD_SCHEDULER_INTERVAL_MS', DEFAULT_SCHEDULER_INTERVAL_MS, 10),
    logLevel: logLevel(env, nodeEnv),
    logFormat: logFormat(env, nodeEnv, stdoutIsTty),
    metricsPort: env.HERALD_METRICS_PORT ? int(env, 'HERALD_METRICS_PORT', 0, 0, 65535) : null,
    fanoutBatchSize: int(env, 'HERALD_FANOUT_BATCH_SIZE', DEFAULT_FANOUT_BATCH_SIZE, 1, 10_000),
    workerConcurrency: int(env, 'HERALD_WORKER_CONCURRENCY', DEFAULT_WORKER_CONCURRENCY, 1, 1000),
    encryptThreads: env.HERALD_ENCRYPT_THREADS ? int(env, 'HERALD_ENCRYPT_THREADS', 0, 0, 64) : null,
    nativeCrypto: bool(env, 'HERALD_NATIVE_CRYPTO', true),
    embeddedThread: bool(env, 'HERALD_EMBEDDED_THREAD', true),
    pushTimeoutMs: int(env, 'HERALD_PUSH_TIMEOUT_MS', DEFAULT_PUSH_TIMEOUT_MS, 10, 600_000),
    pushRetryBaseMs: int(env, 'HERALD_PUSH_RETRY_BASE_MS', DEFAULT_PUSH_RETRY_BASE_MS, 1, 3_600_000),
    pushConnections: int(env, 'HERALD_PUSH_CONNECTIONS', DEFAULT_PUSH_CONNECTIONS, 1, 4096),
    pushHttp2: bool(env, 'HERALD_PUSH_HTTP2', DEFAULT_PUSH_HTTP2),
    pushHttp1: pushHttp1(env),
    jobLeaseMs: int(env, 'HERALD_JOB_LEASE_MS', DEFAULT_JOB_LEASE_MS, 500, 3_600_000),
    webhookTimeoutMs: int(env, 'HERALD_WEBHOOK_TIMEOUT_MS', DEFAULT_WEBHOOK_TIMEOUT_MS, 10, 600_000),
    webhookRetryBaseMs: int(env, 'HERALD_WEBHOOK_RETRY_BASE_MS', DEFAULT_WEBHOOK_RETRY_BASE_MS, 1, 3_600_000),
    webhookConcurrency: int(env, 'HERALD_WEBHOOK_CONCURRENCY', DEFAULT_WEBHOOK_CONCURRENCY, 1, 4096),
    webhookEndpointConcurrency: int(env, 'HERALD_WEBHOOK_ENDPOINT_CONCURRENCY', DEFAULT_WEBHOOK_ENDPOINT_CONCURRENCY, 1, 1024),
    webhookDisableAfterMs: int(env, 'HERALD_WEBHOOK_DISABLE_AFTER_MS', DEFAULT_WEBHOOK_DISABLE_AFTER_MS, 1000),
    dbStatementTimeoutMs: int(env, 'HERALD_DB_STATEMENT_TIMEOUT_MS', DEFAULT_DB_STATEMENT_TIMEOUT_MS, 100, 86_400_000),
    dbLockTimeoutMs: int(env, 'HERALD_DB_LOCK_TIMEOUT_MS', DEFAULT_DB_LOCK_TIMEOUT_MS, 100, 86_400_000),
    dbIdleInTransactionTimeoutMs: int(env, 'HERALD_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS', DEFAULT_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS, 100, 86_400_000),
    dbConnectTimeoutMs: int(env, 'HERALD_DB_CONNECT_TIMEOUT_MS', DEFAULT_DB_CONNECT_TIMEOUT_MS, 100, 600_000),
    sessionIdleMs: int(env, 'HERALD_SESSION_IDLE_MINUTES', DEFAULT_SESSION_IDLE_MINUTES, 1, 30 * 24 * 60) * 60_000,
    sessionMaxMs: int(env, 'HERALD_SESSION_MAX_DAYS', DEFAULT_SESSION_MAX_DAYS, 1, 365) * 86_400_000,
    auditRetentionDays: int(env, 'HERALD_AUDIT_RETENTION_DAYS', DEFAULT_AUDIT_RETENTION_DAYS, 1, 3650),
    trustProxy: trustProxy(env),
  }
}
