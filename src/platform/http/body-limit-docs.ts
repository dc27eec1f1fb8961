// Every route that reads a body can answer 413 payload_too_large (Fastify
// refuses a body over the route's bodyLimit before the handler runs), so its
// OpenAPI entry says so, including routes added later.
import type { RouteOptions } from 'fastify'
import { ErrorBody } from './shared-schemas.ts'

/**
 * An onRoute hook (app.ts). Only routes that already document a 400 get the
 * 413: a route that documents no client error at all (POST /v1/events, which
 * answers 202 to anything, a body over its limit included) has none to add.
 */
export function documentBodyLimit(route: RouteOptions): void {
  const schema = route.schema as { body?: unknown; response?: Record<string, unknown> } | undefined
  if (!schema?.body || !schema.response || !('400' in schema.response)) return
  schema.response = { 413: ErrorBody, ...schema.response }
}
