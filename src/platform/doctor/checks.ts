// The checks of `herald doctor`, one function each. Each answers ok, fail
// (with the fix) or skip (nothing to check), and never throws: a doctor that
// stops at the first problem would hide the next one.
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { Redis } from 'ioredis'
import type { Config } from '../config.ts'
import { DEFAULT_VAPID_SUBJECT } from '../config.ts'
import type { Database } from '../db/database.ts'
import { readMigrations, type Migration } from '../db/migrate.ts'
import { validateVapidSubject } from '../../delivery/vapid.ts'
import { adminTokenProblem, publicUrlProblem, type SettingProblem } from '../production-settings.ts'

export interface CheckResult {
  name: string
  outcome: 'ok' | 'fail' | 'skip'
  detail: string
  /** What to do about a failure. */
  fix?: string
}

/**
 * How far the database's clock and this machine's may differ. Sessions,
 * invites and throttled sends compute times here and compare them there (and
 * the other way round), so two clocks apart by seconds end sessions early or
 * send late. NTP keeps machines within milliseconds; a second apart means a
 * machine without time synchronisation.
 */
export const CLOCK_SKEW_MAX_MS = 1_000
/** A Redis next to Herald answers in milliseconds; one that does not within this is as good as down. */
const REDIS_TIMEOUT_MS = 2_000

const ok = (name: string, detail: string): CheckResult => ({ name, outcome: 'ok', detail })
const fail = (name: string, detail: string, fix: string): CheckResult => ({ name, outcome: 'fail', detail, fix })
const skip = (name: string, detail: string): CheckResult => ({ name, outcome: 'skip', detail })
const fromProblem = (name: string, p: SettingProblem): CheckResult => fail(name, `${p.setting} ${p.problem}`, p.fix)

export function checkPublicUrl(config: Config): CheckResult {
  const problem = publicUrlProblem(config)
  return problem ? fromProblem('public URL', problem) : ok('public URL', config.publicUrl)
}

/** The same rules `herald serve` applies at start, plus: the placeholder default is not a contact. */
export function checkVapidSubject(config: Config): CheckResult {
  const name = 'VAPID subject'
  const fix = 'set HERALD_VAPID_SUBJECT to a mailto: address or https: URL a push service can reach you at, e.g. mailto:ops@your-domain.com'
  const problem = validateVapidSubject(config.vapidSubject)
  if (problem) return fail(name, `HERALD_VAPID_SUBJECT: ${problem}`, fix)
  if (config.vapidSubject === DEFAULT_VAPID_SUBJECT) return fail(name, `HERALD_VAPID_SUBJECT is not set: the placeholder ${DEFAULT_VAPID_SUBJECT} is nobody's address`, fix)
  return ok(name, config.vapidSubject)
}

export function checkAdminToken(config: Config): CheckResult {
  const problem = adminTokenProblem(config.adminToken)
  return problem ? fromProblem('operator token', problem) : ok('operator token', `HERALD_ADMIN_TOKEN set, ${config.adminToken!.length} characters`)
}

/** HERALD_ALLOW_PRIVATE_ENDPOINTS lifts the address checks of outbound requests: fine in development, SSRF in production. */
export function checkOutboundRules(config: Config): CheckResult {
  const name = 'outbound rules'
  if (!config.allowPrivateEndpoints) return ok(name, 'webhooks and pushes go to public addresses only')
  return fail(
    name,
    'HERALD_ALLOW_PRIVATE_ENDPOINTS=true: any project may send webhooks and pushes to private addresses of your network (169.254.169.254, localhost, 10.0.0.0/8, …)',
    'unset HERALD_ALLOW_PRIVATE_ENDPOINTS (it is meant for development and tests)',
  )
}

/** Addresses only a process on this machine connects from. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '::1', 'localhost'])

/**
 * HERALD_TRUST_PROXY against where Herald listens. Listening on loopback with
 * an https:// public URL, Herald sits behind a proxy on this machine (Herald
 * speaks no TLS): unset, every client is that proxy's 127.0.0.1 to the
 * sign-in limit, the rate limits and the audit log; set, it must believe
 * loopback, the only address such a proxy connects from. On a network address
 * the doctor cannot tell a load balancer from a client, so it says which
 * addresses are believed and passes.
 */
export function checkTrustProxy(config: Config): CheckResult {
  const name = 'proxy'
  const entries = config.trustProxy
  const onLoopback = LOOPBACK_HOSTS.has(config.host)
  const behindLocalProxy = onLoopback && config.publicUrl.startsWith('https:')
  if (entries.length === 0) {
    if (behindLocalProxy) {
      return fail(
        name,
        `HERALD_HOST=${config.host} with an https:// public URL: a proxy on this machine is in front, and without HERALD_TRUST_PROXY every client has its address (one sign-in limit, one rate limit, the audit log shows only ${config.host})`,
        'set HERALD_TRUST_PROXY=loopback (the proxy connects from 127.0.0.1 or ::1)',
      )
    }
    return ok(name, onLoopback ? `HERALD_TRUST_PROXY not set; HERALD_HOST=${config.host} with a public URL that is not https://: no proxy expected` : `HERALD_TRUST_PROXY not set: the address of each connection is the client's`)
  }
  if (onLoopback && !trustsLoopback(entries)) {
    return fail(
      name,
      `HERALD_TRUST_PROXY=${entries.join(',')} names no loopback address, but on HERALD_HOST=${config.host} only a process on this machine connects: X-Forwarded-For is never believed`,
      'set HERALD_TRUST_PROXY=loopback, or listen where the proxies named connect (HERALD_HOST)',
    )
  }
  return ok(name, `X-Forwarded-For believed from ${entries.join(', ')}`)
}

function trustsLoopback(entries: string[]): boolean {
  const trusted = new net.BlockList()
  for (const entry of entries) {
    if (entry === 'loopback') return true
    const [address, bits] = entry.split('/')
    const type = net.isIPv6(address) ? 'ipv6' : 'ipv4'
    if (bits === undefined) trusted.addAddress(address, type)
    else trusted.addSubnet(address, Number(bits), type)
  }
  return trusted.check('127.0.0.1', 'ipv4') || trusted.check('::1', 'ipv6')
}

/** Opens the configured database without creating one: an embedded data directory must exist already. */
export async function checkDatabase(config: Config, open: () => Promise<Database>): Promise<{ result: CheckResult; db: Database | null }> {
  const name = 'database'
  if (!config.databaseUrl && !fs.existsSync(path.join(config.dataDir, 'pgdata', 'PG_VERSION'))) {
    const result = fail(name, `no embedded database in ${config.dataDir} yet`, 'run `herald db migrate` (or set DATABASE_URL to your PostgreSQL server)')
    return { result, db: null }
  }
  const where = config.databaseUrl ? 'PostgreSQL server (DATABASE_URL)' : `embedded database in ${config.dataDir}`
  try {
    const db = await open()
    await db.ping()
    return { result: ok(name, `${where} answers`), db }
  } catch (err) {
    const fix = config.databaseUrl
      ? 'check DATABASE_URL (host, port, user, password, database name) and that the server accepts connections from this machine'
      : 'stop the Herald process that holds the data directory, or run the doctor before starting it'
    return { result: fail(name, `${where}: ${(err as Error).message}`, fix), db: null }
  }
}

/** Every migration of this release applied; migrations of a newer release are fine (a fleet mid-upgrade). */
export async function checkMigrations(db: Database | null, migrations: Migration[] = readMigrations()): Promise<CheckResult> {
  const name = 'migrations'
  if (!db) return skip(name, 'no database to check')
  try {
    const exists = await db.query<{ found: boolean }>(`SELECT to_regclass('schema_migrations') IS NOT NULL AS found`)
    const applied = new Set(
      exists.rows[0].found ? (await db.query<{ id: number }>('SELECT id FROM schema_migrations')).rows.map((r) => Number(r.id)) : [],
    )
    const pending = migrations.filter((m) => !applied.has(m.id))
    if (pending.length > 0) {
      return fail(name, `${pending.length} not applied: ${pending.map((m) => m.name).join(', ')}`, 'run `herald db migrate` with this release (every process also migrates at start)')
    }
    const known = new Set(migrations.map((m) => m.id))
    const newer = [...applied].filter((id) => !known.has(id)).length
    return ok(name, `all ${migrations.length} applied${newer > 0 ? `, and ${newer} of a newer release (fine while a fleet upgrades)` : ''}`)
  } catch (err) {
    return fail(name, (err as Error).message, 'check that DATABASE_URL\'s user may read the schema_migrations table')
  }
}

/** now: this machine's clock (a parameter so a test can set it apart). */
export async function checkClock(db: Database | null, now: () => number = Date.now): Promise<CheckResult> {
  const name = 'clock'
  if (!db) return skip(name, 'no database to compare with')
  try {
    const before = now()
    const row = await db.query<{ ms: number }>(`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms`)
    const after = now()
    // The database read its clock somewhere between before and after: half the round trip is the uncertainty.
    const skew = Number(row.rows[0].ms) - (before + after) / 2
    const uncertainty = (after - before) / 2
    const apart = `${Math.round(Math.abs(skew))} ms ${skew > 0 ? 'behind' : 'ahead of'} the database's`
    if (Math.abs(skew) - uncertainty > CLOCK_SKEW_MAX_MS) {
      return fail(name, `this machine's clock is ${apart} (at most ${CLOCK_SKEW_MAX_MS} ms allowed)`, 'synchronise the clocks of this machine and the database server (NTP: systemd-timesyncd or chrony)')
    }
    return ok(name, `${apart}, within ${CLOCK_SKEW_MAX_MS} ms`)
  } catch (err) {
    return fail(name, (err as Error).message, 'check that the database answers')
  }
}

export async function checkRedis(config: Config): Promise<CheckResult> {
  const name = 'Redis'
  if (!config.redisUrl) return skip(name, 'REDIS_URL not set: rate limits are counted in each process')
  const redis = new Redis(config.redisUrl, {
    lazyConnect: true,
    connectTimeout: REDIS_TIMEOUT_MS,
    commandTimeout: REDIS_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  })
  redis.on('error', () => undefined) // the failure is answered below
  try {
    await redis.connect()
    await redis.ping()
    return ok(name, `${redactedUrl(config.redisUrl)} answers`)
  } catch (err) {
    return fail(name, `${redactedUrl(config.redisUrl)}: ${(err as Error).message}`, 'start Redis or correct REDIS_URL (unset it to count rate limits in each process)')
  } finally {
    redis.disconnect()
  }
}

/** PORT (and HERALD_METRICS_PORT) free on HERALD_HOST: a port in use stops `herald serve` at start. */
export async function checkPorts(config: Config): Promise<CheckResult> {
  const name = 'ports'
  const ports = [['PORT', config.port], ['HERALD_METRICS_PORT', config.metricsPort]].filter((p): p is [string, number] => typeof p[1] === 'number' && p[1] > 0)
  if (ports.length === 0) return skip(name, 'PORT=0: any free port')
  const taken: string[] = []
  for (const [setting, port] of ports) {
    const problem = await tryListen(config.host, port)
    if (problem) taken.push(`${setting}=${port} on ${config.host}: ${problem}`)
  }
  if (taken.length > 0) {
    return fail(name, taken.join('; '), 'stop the process listening there (another Herald?), or give this one another port')
  }
  return ok(name, ports.map(([setting, port]) => `${setting}=${port}`).join(', ') + ` free on ${config.host}`)
}

function tryListen(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const server = net.createServer()
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EADDRINUSE' ? 'in use' : err.message))
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(null)))
  })
}

/** A URL without its password, for printing. */
function redactedUrl(raw: string): string {
  try {
    const url = new URL(raw)
    if (url.password) url.password = '***'
    return url.toString()
  } catch {
    return '(REDIS_URL)'
  }
}
