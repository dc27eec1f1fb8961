// What every part of the running service shares: configuration, the database
// and the rate limiter. Built once in main.ts (or by the test helper).
import pino from 'pino'
import type { Config } from './config.ts'
import type { Database } from './db/database.ts'
import { createRateLimiter, type RateLimiter } from './http/rate-limit.ts'

export interface AppContext {
  config: Config
  db: Database
  rateLimiter: RateLimiter
  log: pino.Logger
}

export function createContext(config: Config, db: Database): AppContext {
  return {
    config,
    db,
    rateLimiter: createRateLimiter(config.redisUrl),
    log: pino({ level: config.logLevel }),
  }
}
