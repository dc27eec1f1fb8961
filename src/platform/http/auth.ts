// The operator's proof of identity (decisions.md §2): the operator token on
// admin routes, as an onRequest hook so a request is refused before its body
// is read. How a project proves who it is belongs to the projects domain
// (src/projects/project-auth.ts).
import { timingSafeEqual, createHash } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import { AppError } from '../errors.ts'

/** The token of `Authorization: Bearer <token>`, or null. */
export function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null
  return match?.[1] ?? null
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest()
}

/** Operator routes: Authorization: Bearer <HERALD_ADMIN_TOKEN>. */
export function adminAuth(adminToken: string) {
  const expected = digest(adminToken)
  return async function (request: FastifyRequest): Promise<void> {
    const token = bearerToken(request)
    // Comparing digests keeps the comparison constant-time whatever the length given.
    if (token === null || !timingSafeEqual(digest(token), expected)) throw new AppError('invalid_admin_token')
  }
}
