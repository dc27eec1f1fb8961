// Settings that are fine on a laptop and unsafe on a server reachable from
// the internet. `herald serve` refuses to start on any of them when
// NODE_ENV=production (serve.ts), and `herald doctor` reports them whatever
// NODE_ENV says (doctor/checks.ts): each names the setting and the fix.
import type { Config } from './config.ts'

/**
 * A strong operator token: long enough that guessing is hopeless and not a
 * word or a repeated pattern. 32 characters is what `openssl rand -hex 16`
 * and `openssl rand -base64 24` print; 10 distinct characters turns away
 * "aaaa…" and "changeme" repeated, which any random token of that length passes.
 */
export const STRONG_TOKEN_MIN_LENGTH = 32
export const STRONG_TOKEN_MIN_DISTINCT = 10

export const TOKEN_FIX = 'set HERALD_ADMIN_TOKEN to a random value, e.g. the output of `openssl rand -hex 32`'

export interface SettingProblem {
  setting: string
  problem: string
  fix: string
}

/** Session cookies are Secure and invite links are shared as this URL: it must be https. */
export function publicUrlProblem(config: Pick<Config, 'publicUrl'>): SettingProblem | null {
  if (new URL(config.publicUrl).protocol === 'https:') return null
  return {
    setting: 'HERALD_PUBLIC_URL',
    problem: `is ${config.publicUrl}, not an https:// URL: dashboard sessions would travel unencrypted and invite links would point there`,
    fix: 'set HERALD_PUBLIC_URL to the https:// address browsers reach Herald at (behind a TLS proxy, the proxy\'s address), e.g. https://push.example.com',
  }
}

export function adminTokenProblem(token: string | null): SettingProblem | null {
  const setting = 'HERALD_ADMIN_TOKEN'
  if (token === null) return { setting, problem: 'is not set', fix: TOKEN_FIX }
  if (token.length < STRONG_TOKEN_MIN_LENGTH) {
    return { setting, problem: `is ${token.length} characters long, fewer than ${STRONG_TOKEN_MIN_LENGTH}`, fix: TOKEN_FIX }
  }
  if (new Set(token).size < STRONG_TOKEN_MIN_DISTINCT) {
    return { setting, problem: `uses fewer than ${STRONG_TOKEN_MIN_DISTINCT} distinct characters (a pattern, not a random value)`, fix: TOKEN_FIX }
  }
  return null
}

/** What `herald serve` refuses to start on when NODE_ENV=production. */
export function productionProblems(config: Pick<Config, 'publicUrl' | 'adminToken'>): SettingProblem[] {
  return [publicUrlProblem(config), adminTokenProblem(config.adminToken)].filter((p): p is SettingProblem => p !== null)
}

export function describeProblems(problems: SettingProblem[]): string {
  return problems.map((p) => `${p.setting} ${p.problem}; fix: ${p.fix}`).join('\n')
}
