// The dashboard (decisions.md §6): static pages at /dashboard that call the
// project's own /v1 bearer routes, same-origin, with the API key the owner
// signs in with. Plain HTML, CSS and ES modules from ./public: no build step.
import { fileURLToPath } from 'node:url'
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { registerStaticFolder } from '../platform/http/static-files.ts'

export const DASHBOARD_DIR = fileURLToPath(new URL('./public/', import.meta.url))

/**
 * The page holds an API key, so it runs only its own scripts and talks only to
 * Herald: no inline script or style, no other origin to connect to, no
 * framing (clickjacking), no <base> or form posts elsewhere. Images may come
 * from any HTTPS URL (notification icons), data: URLs (an icon picked from
 * disk, before upload) and Herald's own /icons, which live at HERALD_CDN_URL.
 */
export function dashboardCsp(cdnUrl: string): string {
  const cdnOrigin = new URL(cdnUrl).origin
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    `img-src 'self' https: data: ${cdnOrigin}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ')
}

/** Where index.html carries HERALD_PUBLIC_URL, for the site snippet on the settings page. */
export const PUBLIC_URL_PLACEHOLDER = '__HERALD_PUBLIC_URL__'

const htmlAttribute = (value: string): string =>
  value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

export function registerDashboardRoutes(app: App, ctx: AppContext): void {
  // Someone who opens Herald's bare address is most likely its owner looking
  // for the dashboard. 302, not 301: browsers keep a 301 forever, and / may
  // serve something else one day. decisions.md §6 gives / no other use.
  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/dashboard', 302))
  const publicUrl = htmlAttribute(ctx.config.publicUrl.replace(/\/+$/, ''))
  registerStaticFolder(app, {
    prefix: '/dashboard/',
    dir: DASHBOARD_DIR,
    // Always revalidated (a 304 when unchanged), so a new Herald version shows at once.
    cacheControl: 'no-cache',
    headers: {
      'Content-Security-Policy': dashboardCsp(ctx.config.cdnUrl),
      'Referrer-Policy': 'no-referrer',
      'X-Frame-Options': 'DENY',
    },
    index: 'index.html',
    transform: (name, body) => (name === 'index.html' ? body.toString('utf8').replaceAll(PUBLIC_URL_PLACEHOLDER, publicUrl) : body),
  })
}
