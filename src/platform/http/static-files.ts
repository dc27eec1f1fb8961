// Serves a folder of small static files (the browser SDK, the dashboard) from
// memory: read once at start, each with a strong ETag, nosniff, and the cache
// policy and extra headers its caller gives. No directory listing, no path
// from the request ever reaches the filesystem.
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import type { App } from './app-type.ts'

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.ts': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
}

export interface StaticFolder {
  /** URL prefix, ending in '/': '/sdk/' serves dir/herald.js at /sdk/herald.js. */
  prefix: string
  dir: string
  /** Cache-Control for every file. */
  cacheControl: string
  /** Extra headers for every file (a Content-Security-Policy, say). */
  headers?: Record<string, string>
  /** Served at the prefix without its trailing slash and at the prefix itself ('index.html'). */
  index?: string
  /**
   * Rewrites a file's bytes once, at start, before its ETag is computed (the
   * SDK renders Herald's public URL into its scripts). `name` is the path under
   * `dir` ('js/app.js'). Default: files are served as they are.
   */
  transform?: (name: string, body: Buffer) => Buffer | string
}

interface LoadedFile {
  body: Buffer
  type: string
  etag: string
}

function listFiles(dir: string, relative = ''): string[] {
  return readdirSync(path.join(dir, relative), { withFileTypes: true }).flatMap((entry) => {
    const name = path.posix.join(relative, entry.name)
    if (entry.isDirectory()) return listFiles(dir, name)
    return entry.isFile() && !entry.name.startsWith('.') ? [name] : []
  })
}

function load(file: string, transform: (body: Buffer) => Buffer | string = (body) => body): LoadedFile {
  const transformed = transform(readFileSync(file))
  const body = typeof transformed === 'string' ? Buffer.from(transformed, 'utf8') : transformed
  const type = CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream'
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`
  return { body, type, etag }
}

export function registerStaticFolder(app: App, folder: StaticFolder): void {
  if (!folder.prefix.startsWith('/') || !folder.prefix.endsWith('/')) throw new Error(`static prefix must start and end with '/': ${folder.prefix}`)
  const serve = (file: LoadedFile) => async (request: { headers: Record<string, unknown> }, reply: import('fastify').FastifyReply) => {
    void reply
      .header('Cache-Control', folder.cacheControl)
      .header('ETag', file.etag)
      .header('X-Content-Type-Options', 'nosniff')
    for (const [name, value] of Object.entries(folder.headers ?? {})) void reply.header(name, value)
    if (request.headers['if-none-match'] === file.etag) return reply.code(304).send()
    return reply.type(file.type).send(file.body)
  }
  for (const name of listFiles(folder.dir)) {
    const transform = folder.transform
    const file = load(path.join(folder.dir, name), transform && ((body) => transform(name, body)))
    app.get(`${folder.prefix}${name}`, { schema: { hide: true } }, serve(file))
    if (name === folder.index) {
      app.get(folder.prefix, { schema: { hide: true } }, serve(file))
      app.get(folder.prefix.slice(0, -1), { schema: { hide: true } }, serve(file))
    }
  }
}
