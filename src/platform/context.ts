// What every part of the running service shares: configuration, the database,
// the rate limiter, the logger and the process's metrics. Built once in
// serve.ts (or by the test helper).
import pino from 'pino'
import pretty from 'pino-pretty'
import type { Config } from './config.ts'
import type { Database } from './db/database.ts'
import { createRateLimiter, type RateLimiter } from './http/rate-limit.ts'
import { Metrics } from './metrics/metrics.ts'

export interface AppContext {
  config: Config
  db: Database
  rateLimiter: RateLimiter
  log: pino.Logger
  metrics: Metrics
}

/**
 * The process's logger (docs/decisions.md "Metrics and logs"). json: pino's
 * own lines, one JSON object each. pretty: one readable line per event
 * (pino-pretty in this thread, synchronously: a person's terminal, a few
 * lines a minute), fields on the same line. `destination` is for tests.
 */
export function createLogger(config: Pick<Config, 'logLevel' | 'logFormat'>, destination?: pino.DestinationStream): pino.Logger {
  const options: pino.LoggerOptions = {
    level: config.logLevel,
    // Whatever a request object logs, its credentials stay out.
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'], censor: '[redacted]' },
  }
  if (config.logFormat === 'json') return destination ? pino(options, destination) : pino(options)
  const stream = pretty({
    destination: destination ?? 1,
    sync: true,
    colorize: destination ? false : pretty.isColorSupported,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname,reqId',
  })
  return pino(options, stream)
}

/** log: the process's logger when it was made before the context (serve.ts logs database outages with it). */
export function createContext(config: Config, db: Database, log: pino.Logger = createLogger(config)): AppContext {
  return {
    config,
    db,
    rateLimiter: createRateLimiter(config.redisUrl),
    log,
    metrics: new Metrics(db),
  }
}
