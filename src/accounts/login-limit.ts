// Sign-in attempts are counted per account (the email given, whether or not
// it has an account, so the limit tells nothing) and per client IP, in fixed
// windows of the shared rate limiter (Redis when configured). Past a limit the
// attempt is refused with 429 until the window ends: a guesser is slowed to a
// few attempts an hour, and the owner of the account waits at most one window,
// never locked out for good.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../platform/context.ts'
import { AppError } from '../platform/errors.ts'

export const LOGIN_WINDOW_MS = 15 * 60_000
/** Attempts per account per window: a person mistyping a password gets 10 tries. */
export const LOGIN_ATTEMPTS_PER_ACCOUNT = 10
/** Attempts per IP per window: an office behind one address still signs in; one address cannot sweep many accounts. */
export const LOGIN_ATTEMPTS_PER_IP = 50

/** The counter of one client address's attempts (the address as request.ip has it: see HERALD_TRUST_PROXY). */
export const loginIpKey = (ip: string): string => `login:ip:${ip}`

/**
 * Counts the attempt against the IP's budget and, given an email, the
 * account's; throws 429 rate_limited (with Retry-After) when either is spent.
 * Accepting an invite counts against the IP's (it runs scrypt too).
 */
export async function countAttempt(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, email: string | null): Promise<void> {
  const budgets = [{ key: loginIpKey(request.ip), limit: LOGIN_ATTEMPTS_PER_IP }]
  if (email !== null) budgets.push({ key: `login:account:${email}`, limit: LOGIN_ATTEMPTS_PER_ACCOUNT })
  for (const { key, limit } of budgets) {
    let outcome
    try {
      outcome = await ctx.rateLimiter.hit(key, limit, LOGIN_WINDOW_MS)
    } catch (err) {
      // As for the request limits: a rate limiter that cannot be reached does not stop sign-in.
      request.log.warn({ err }, 'rate limiter unavailable; sign-in attempt allowed')
      continue
    }
    if (!outcome.allowed) {
      reply.header('Retry-After', String(Math.ceil(outcome.resetMs / 1000)))
      throw new AppError('rate_limited', 'Too many sign-in attempts; wait for the time in Retry-After and try again.')
    }
  }
}
