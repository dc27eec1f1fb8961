// Whether the PostgreSQL server can be reached, as seen by this process. Every
// query reports here; an outage is logged once when it starts and once when
// it ends (not a line per failed attempt), and while it lasts a probe retries
// with backoff, so the end is noticed even when nothing else asks. An outage
// ends only once the server has gone on answering for a moment: a server
// that is shutting down can answer one query on a backend it has not yet
// ended and fail the next, and that is still the same outage.

/** The part of a pino logger this needs. */
export interface DatabaseLog {
  warn(obj: object, msg: string): void
  info(obj: object, msg: string): void
}

/**
 * Backoff of every retry against a database that is away (this probe, the
 * job and webhook loops): the first wait, doubled per failure up to the max,
 * so a database that is back is noticed within DATABASE_RETRY_MAX_MS.
 */
export const DATABASE_RETRY_FIRST_MS = 250
export const DATABASE_RETRY_MAX_MS = 5_000
const PROBE_MIN_MS = DATABASE_RETRY_FIRST_MS
const PROBE_MAX_MS = DATABASE_RETRY_MAX_MS
/** How long the server must go on answering (and then answer a probe) before an outage counts as over. */
export const OUTAGE_SETTLE_MS = 1_000

/**
 * SQLSTATE classes and codes that mean "the server is not there" rather than
 * "this statement was wrong": connection exceptions (08…), and the server
 * shutting down, crashing or still starting (57P01-57P03).
 */
const UNREACHABLE_CODES = new Set(['57P01', '57P02', '57P03'])

/** True when err says the server could not be reached, not that a query failed on it. */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false
  const code = (err as { code?: unknown }).code
  if (typeof code === 'string') {
    if (code.startsWith('08') || UNREACHABLE_CODES.has(code)) return true
    // Node's socket errors: ECONNREFUSED, ECONNRESET, ETIMEDOUT, EPIPE, EHOSTUNREACH, ENOTFOUND…
    if (/^E[A-Z]+$/.test(code)) return true
    return false
  }
  // pg's own errors carry no code: a dropped connection, a connect or query timeout, a closed pool.
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|not queryable|Connection ended|Cannot use a pool after calling end/i.test(
    err.message,
  )
}

/**
 * The wider question the background loops ask before trying the same write
 * again: could this be the connection? True for every error but the
 * database's own refusal of a statement (a SQLSTATE outside the connection
 * classes), which the same statement on the same data would meet again. An
 * error with no SQLSTATE (the embedded database closed, a driver failure) may
 * be the connection: only an error the database gave about the data is known
 * not to be.
 */
export function mayBeConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  // A Node socket error first: EPIPE has the shape of a SQLSTATE too, but no SQLSTATE class starts with E.
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return true
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code.startsWith('08') || UNREACHABLE_CODES.has(code)
  return true
}

/**
 * Which side of the last change (outage begun or ended) a round trip started
 * on. A query that started before the change and ends after it says nothing
 * new: at a cut, a query answered just before it must not end the outage the
 * others' failures began, nor, at the heal, a late failure start a second one.
 */
export type Epoch = number

export class DatabaseAvailability {
  private downSince: number | null = null
  /** During an outage, when the server first answered again: the end, once the settle confirms it. */
  private answeringSince: number | null = null
  private epoch: Epoch = 0
  private probeDelayMs = PROBE_MIN_MS
  private probeTimer: NodeJS.Timeout | null = null
  private settleTimer: NodeJS.Timeout | null = null
  private closed = false

  constructor(
    private readonly log: DatabaseLog | null,
    /** A cheap query that resolves once the server answers (SELECT 1). */
    private readonly probe: () => Promise<unknown>,
    private readonly settleMs = OUTAGE_SETTLE_MS,
  ) {}

  /** True unless the server is away: it answers, or has answered since its last failure. */
  get reachable(): boolean {
    return this.downSince === null || this.answeringSince !== null
  }

  /** To be passed to failed() or succeeded() when the round trip started now ends. */
  begin(): Epoch {
    return this.epoch
  }

  /** Called with every failure; only connection failures count. */
  failed(err: unknown, startedAt: Epoch = this.epoch): void {
    if (this.closed || !isConnectionError(err) || startedAt !== this.epoch) return
    if (this.downSince === null) {
      this.epoch++
      this.downSince = Date.now()
      this.log?.warn(
        { err: err instanceof Error ? err.message : String(err) },
        'database unreachable: retrying with backoff until it is back (logged once)',
      )
      this.startProbing()
    } else if (this.answeringSince !== null) {
      this.relapse()
    }
  }

  /** Called with every answer from the server. */
  succeeded(startedAt: Epoch = this.epoch): void {
    if (this.closed || this.downSince === null || this.answeringSince !== null || startedAt !== this.epoch) return
    this.epoch++
    this.answeringSince = Date.now()
    if (this.probeTimer) clearTimeout(this.probeTimer)
    this.probeTimer = null
    this.settleTimer = setTimeout(() => this.settle(), this.settleMs)
    this.settleTimer.unref()
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    if (this.probeTimer) clearTimeout(this.probeTimer)
    if (this.settleTimer) clearTimeout(this.settleTimer)
    // Closed during the settle: the server was answering again, so the outage's line gets its end.
    if (this.answeringSince !== null) this.logEnd()
  }

  /** The settle's end: one more answer, and the outage is over; a failure, and it goes on. */
  private settle(): void {
    this.settleTimer = null
    // Every change of state moves the epoch: an unchanged one means the settle is still under way.
    const startedAt = this.begin()
    this.probe().then(
      () => {
        if (this.closed || startedAt !== this.epoch) return
        this.epoch++
        this.logEnd()
        this.downSince = null
        this.answeringSince = null
      },
      () => {
        if (startedAt === this.epoch) this.relapse()
      },
    )
  }

  /** The outage's one closing line, timed to the server's first answer. */
  private logEnd(): void {
    this.log?.info({ down_ms: this.answeringSince! - this.downSince! }, 'database reachable again')
  }

  /** Answered, then failed again within the settle: the same outage goes on, unlogged. */
  private relapse(): void {
    this.epoch++
    this.answeringSince = null
    if (this.settleTimer) clearTimeout(this.settleTimer)
    this.settleTimer = null
    this.startProbing()
  }

  /** The probe loop from its first, shortest wait. */
  private startProbing(): void {
    this.probeDelayMs = PROBE_MIN_MS
    this.scheduleProbe()
  }

  /** One probe loop at a time: a new one replaces any pending probe, and a probe answered after a change of state does not go on. */
  private scheduleProbe(): void {
    if (this.closed) return
    if (this.probeTimer) clearTimeout(this.probeTimer)
    this.probeTimer = setTimeout(() => {
      this.probeTimer = null
      if (this.closed) return
      const startedAt = this.begin()
      this.probe().then(
        () => this.succeeded(startedAt),
        () => {
          // Probes run only while down and not settling; any change since this one began moved the epoch.
          if (this.closed || startedAt !== this.epoch) return
          this.probeDelayMs = Math.min(PROBE_MAX_MS, this.probeDelayMs * 2)
          this.scheduleProbe()
        },
      )
    }, this.probeDelayMs)
    // The service keeps itself running (serve.ts); a probe must not keep a finished CLI alive.
    this.probeTimer.unref()
  }
}
