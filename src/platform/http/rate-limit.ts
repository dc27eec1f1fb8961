// Fixed-window request counting per project. With REDIS_URL the counters live
// in Redis, so every API process of a deployment shares them; without it they
// live in this process's memory (one process: the same thing).
import { Redis } from 'ioredis'

export interface RateLimitResult {
  allowed: boolean
  limit: number
  remaining: number
  /** Milliseconds until the current window ends. */
  resetMs: number
}

export interface RateLimiter {
  hit(key: string, limit: number, windowMs: number): Promise<RateLimitResult>
  close(): Promise<void>
}

function result(count: number, limit: number, windowMs: number, now: number): RateLimitResult {
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    resetMs: windowMs - (now % windowMs),
  }
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { window: number; count: number }>()
  private lastSweep = 0

  async hit(key: string, limit: number, windowMs: number, now = Date.now()): Promise<RateLimitResult> {
    const window = Math.floor(now / windowMs)
    const entry = this.windows.get(key)
    if (entry && entry.window === window) entry.count++
    else this.windows.set(key, { window, count: 1 })
    this.sweep(now, windowMs)
    return result(this.windows.get(key)!.count, limit, windowMs, now)
  }

  /** Drops counters of past windows, at most once a window, so memory stays bounded. */
  private sweep(now: number, windowMs: number): void {
    if (now - this.lastSweep < windowMs) return
    this.lastSweep = now
    const current = Math.floor(now / windowMs)
    for (const [key, entry] of this.windows) if (entry.window < current) this.windows.delete(key)
  }

  /** Counters held in memory: those of projects seen in about the last two windows. */
  get size(): number {
    return this.windows.size
  }

  async close(): Promise<void> {}
}

/** After a failed call Redis is left alone this long, so a hung Redis costs one request a commandTimeout, not every request. */
export const REDIS_PAUSE_AFTER_FAILURE_MS = 1_000

/**
 * Counts one hit in the current window, the window being taken from Redis's
 * clock (TIME), not the API host's: API processes on machines whose clocks
 * disagree still count in the same window. KEYS[1] is the key's prefix,
 * ARGV[1] the window in ms; returns { count, now in ms }.
 */
const HIT_SCRIPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local window = tonumber(ARGV[1])
local key = KEYS[1] .. ':' .. math.floor(now / window)
local count = redis.call('INCR', key)
redis.call('PEXPIRE', key, window * 2)
return { count, now }
`

type HitCommand = (prefix: string, windowMs: number) => Promise<[number, number]>

export class RedisRateLimiter implements RateLimiter {
  private pausedUntil = 0
  private readonly hitScript: HitCommand

  constructor(private readonly redis: Redis) {
    // defineCommand sends the script once and EVALSHA after, falling back to EVAL when Redis lost it.
    redis.defineCommand('heraldRateLimitHit', { numberOfKeys: 1, lua: HIT_SCRIPT })
    this.hitScript = (redis as unknown as { heraldRateLimitHit: HitCommand }).heraldRateLimitHit.bind(redis)
  }

  async hit(key: string, limit: number, windowMs: number): Promise<RateLimitResult> {
    if (Date.now() < this.pausedUntil) throw new Error('Redis failed moments ago; not asked again yet')
    try {
      // A failure is thrown, not counted as 1: the caller logs it and lets the request through.
      const [count, now] = await this.hitScript(`herald:rl:${key}`, windowMs)
      return result(Number(count), limit, windowMs, Number(now))
    } catch (err) {
      this.pausedUntil = Date.now() + REDIS_PAUSE_AFTER_FAILURE_MS
      throw err
    }
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined)
    // quit() is refused while the connection is down; disconnect() also stops the reconnect loop.
    this.redis.disconnect()
  }
}

/**
 * The limiter sits in front of every request, so a Redis that is down or hung
 * must cost a request milliseconds, not seconds (the caller lets the request
 * through when hit() fails). Commands are not queued while the connection is
 * down (they fail at once; reconnecting goes on in the background), an
 * in-flight command is not retried on a new connection, a reply slower than
 * commandTimeout counts as a failure, and a connection attempt that hangs is
 * given up after connectTimeout. One consequence: requests in the first
 * milliseconds after start, before the connection is ready, are not counted.
 */
export const REDIS_OPTIONS = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  /** A Redis next to the API answers in about a millisecond; 500 ms means it is in trouble. */
  commandTimeout: 500,
  connectTimeout: 2_000,
} as const

export function createRateLimiter(redisUrl: string | null): RateLimiter {
  if (!redisUrl) return new MemoryRateLimiter()
  const redis = new Redis(redisUrl, REDIS_OPTIONS)
  redis.on('error', () => undefined)
  return new RedisRateLimiter(redis)
}
