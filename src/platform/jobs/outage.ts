// What the background loops (the job worker's claims, the webhook
// dispatcher's) do while the database cannot be reached: one log line when
// it goes away, one when it is back, and attempts spaced out with a capped
// backoff in between, instead of a warning per poll. Nothing here stops a
// loop: it keeps trying, and resumes on its own once the database answers.
import type pino from 'pino'
import { DATABASE_RETRY_FIRST_MS, DATABASE_RETRY_MAX_MS, mayBeConnectionError } from '../db/availability.ts'


/** Wait before attempt failures + 1: doubling from DATABASE_RETRY_FIRST_MS up to DATABASE_RETRY_MAX_MS, ±20% so processes spread out. */
export function databaseRetryDelayMs(failures: number, firstMs = DATABASE_RETRY_FIRST_MS, maxMs = DATABASE_RETRY_MAX_MS): number {
  const base = Math.min(maxMs, firstMs * 2 ** Math.min(Math.max(failures - 1, 0), 20))
  return Math.round(base * (0.8 + Math.random() * 0.4))
}

export type OutageLog = Pick<pino.Logger, 'warn' | 'info'>

/** A run of failed attempts of one loop, logged once at its start and once at its end. */
export class DatabaseOutage {
  private since: number | null = null
  private failures = 0

  /** who names the loop in the log lines ("job worker", "webhook dispatcher"). */
  constructor(
    private readonly log: OutageLog,
    private readonly who: string,
  ) {}

  /** True between a failed attempt and the next one that works. */
  get active(): boolean {
    return this.since !== null
  }

  /** Notes a failed attempt (logged only when it starts a run) and returns how long to wait before the next. */
  failed(err: unknown): number {
    this.failures++
    if (this.since === null) {
      this.since = Date.now()
      const what = mayBeConnectionError(err) ? 'cannot reach the database' : 'the database refused its query'
      this.log.warn({ err }, `${this.who}: ${what}; retrying with backoff (up to ${DATABASE_RETRY_MAX_MS / 1000} s apart) until it answers`)
    }
    return databaseRetryDelayMs(this.failures)
  }

  /** Notes an attempt that worked; logs the end of a run of failures. */
  succeeded(): void {
    if (this.since === null) return
    this.log.info({ down_ms: Date.now() - this.since, failed_attempts: this.failures }, `${this.who}: database reachable again; resuming`)
    this.since = null
    this.failures = 0
  }
}
