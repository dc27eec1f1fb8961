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

  async close(): Promise<void> {}
}

export class RedisRateLimiter implements RateLimiter {
  constructor(private readonly redis: Redis) {}

  async hit(key: string, limit: number, windowMs: number): Promise<RateLimitResult> {
    const now = Date.now()
    const redisKey = `herald:rl:${key}:${Math.floor(now / windowMs)}`
    const replies = await this.redis.multi().incr(redisKey).pexpire(redisKey, windowMs * 2).exec()
    const count = Number(replies?.[0]?.[1] ?? 1)
    return result(count, limit, windowMs, now)
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined)
  }
}

export function createRateLimiter(redisUrl: string | null): RateLimiter {
  if (!redisUrl) return new MemoryRateLimiter()
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: true })
  redis.on('error', () => undefined)
  return new RedisRateLimiter(redis)
}
