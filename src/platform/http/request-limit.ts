// Counts a request against a per-minute budget and sets the RateLimit headers
// (decisions.md "Rate limits"). Whose budget it is (a project, today) is the
// caller's business: platform knows a key and a limit, nothing more.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../context.ts'

/** The window every per-minute request budget counts in (fixed, on the limiter's clock). */
export const RATE_WINDOW_MS = 60_000

export interface RequestBudget {
  /** The counter's key, e.g. prj:<id>. */
  key: string
  requestsPerMinute: number
}

/** Counts the request and sets the RateLimit headers; false past the limit. */
export async function enforceRateLimit(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, budget: RequestBudget): Promise<boolean> {
  const limit = budget.requestsPerMinute
  let outcome
  try {
    outcome = await ctx.rateLimiter.hit(budget.key, limit, RATE_WINDOW_MS)
  } catch (err) {
    // A rate limiter that cannot be reached must not take the API down with it.
    request.log.warn({ err }, 'rate limiter unavailable; request allowed')
    return true
  }
  const resetSeconds = Math.ceil(outcome.resetMs / 1000)
  reply.header('RateLimit-Policy', `${limit};w=${RATE_WINDOW_MS / 1000}`)
  reply.header('RateLimit-Limit', String(limit))
  reply.header('RateLimit-Remaining', String(outcome.remaining))
  reply.header('RateLimit-Reset', String(resetSeconds))
  if (!outcome.allowed) reply.header('Retry-After', String(resetSeconds))
  return outcome.allowed
}
