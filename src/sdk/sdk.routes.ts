// The browser SDK and the service worker code (decisions.md §6): /sdk/herald.js,
// /sdk/herald.mjs, /sdk/sw.js and /sdk/herald.d.ts, from src/sdk/browser/.
// Herald's public URL is written into the scripts once, at start, so the code
// a site embeds knows where to call without being told.
import { fileURLToPath } from 'node:url'
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { registerStaticFolder } from '../platform/http/static-files.ts'

export const SDK_DIR = fileURLToPath(new URL('./browser/', import.meta.url))

/** The placeholder herald.js and sw.js carry where Herald's public URL goes. */
export const BASE_URL_PLACEHOLDER = '__HERALD_BASE_URL__'

/**
 * Sites embed these URLs unversioned (a script tag, an importScripts line), so
 * they must not be cached for long: five minutes, then a revalidation that the
 * ETag usually answers with a 304. A new Herald version reaches every site
 * within minutes of a deploy.
 */
export const SDK_CACHE_CONTROL = 'public, max-age=300'

export function registerSdkRoutes(app: App, ctx: AppContext): void {
  // The URL goes inside a single-quoted JS string: escape what could end it.
  const baseUrl = JSON.stringify(ctx.config.publicUrl).slice(1, -1).replace(/'/g, "\\'")
  registerStaticFolder(app, {
    prefix: '/sdk/',
    dir: SDK_DIR,
    cacheControl: SDK_CACHE_CONTROL,
    headers: {
      // Any site may load these: as ES modules (CORS mode) and from pages that
      // require CORP (Cross-Origin-Embedder-Policy).
      'Access-Control-Allow-Origin': '*',
      'Cross-Origin-Resource-Policy': 'cross-origin',
    },
    transform: (name, body) => (name.endsWith('.js') ? body.toString('utf8').replaceAll(BASE_URL_PLACEHOLDER, baseUrl) : body),
  })
}
