// Rate limits count in fixed windows of the wall clock (Redis's clock when
// REDIS_URL is set, the same machine's here). A test that sends its requests
// across a window's edge sees the count start again, and its "the next one is
// 429" fails by chance: CI saw it once in ~2,500 tests. A test that counts
// requests waits out a window's last moments before its first request.
import { RATE_WINDOW_MS } from '../../src/platform/http/request-limit.ts'

/** Resolves at once when more than `marginMs` are left in the current window; else just after the next one starts. */
export async function awayFromWindowEdge(windowMs = RATE_WINDOW_MS, marginMs = 2_000): Promise<void> {
  const left = windowMs - (Date.now() % windowMs)
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 50))
}
