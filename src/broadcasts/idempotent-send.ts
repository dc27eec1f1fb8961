// POST /v1/send with an Idempotency-Key header (issue 12): a retry of a send
// gets the first send's answer again instead of a second broadcast, however
// many API processes the retries reach. The key is reserved in the database
// before the send runs, and its answer is stored in the send's own
// transaction, so "the broadcast exists" and "the answer is stored" commit
// together. docs/decisions.md "Idempotent sends" has the choices.
import { createHash, randomBytes } from 'node:crypto'
import { AppError } from '../platform/errors.ts'
import type { AuthedProject } from '../projects/project-auth.ts'
import type { BroadcastSource, SendBody, SendResponse } from './broadcasts.schemas.ts'
import { completeKey, releaseKey, reserveKey } from './idempotency-keys.store.ts'
import { sendBroadcast, type SendDeps, type SendOptions } from './send.service.ts'
import type { AuditContext } from '../audit/audit-context.ts'

/** How long a key and its answer are kept (and the key may not be used for another body). */
export const IDEMPOTENCY_KEEP_MS = 24 * 60 * 60 * 1000
/**
 * How long a request holds its key before a retry may presume it dead (its
 * process crashed between reserving the key and committing the send). Longer
 * than a send takes (a few statements, each under the 60 s statement timeout
 * in practice far less); short enough that a crashed process blocks the key
 * for a minute, not a day. Correctness does not rest on it: a request that
 * outlives it and loses the key to a retry rolls back (completeKey).
 */
export const IDEMPOTENCY_LEASE_MS = 60_000
/** Reservation attempts when the holding row vanishes between our two statements (its request failed meanwhile). */
const RESERVE_TRIES = 3

export interface IdempotentAnswer {
  status: number
  body: SendResponse
  /** True when this is a stored answer given again (Idempotent-Replayed: true). */
  replayed: boolean
}

/** JSON with object keys sorted, so the same request serialised differently hashes the same. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined)
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/**
 * What "the same request" means: the body as validated (defaults filled in,
 * so an explicit default equals its absence) and the source header.
 */
export function requestHash(body: SendBody, source: BroadcastSource): string {
  return createHash('sha256').update(canonicalJson({ body, source })).digest('hex')
}

export async function sendIdempotently(
  deps: SendDeps,
  project: AuthedProject,
  body: SendBody,
  key: string,
  audit: AuditContext,
  options: SendOptions & { source: BroadcastSource },
): Promise<IdempotentAnswer> {
  const { db } = deps
  const token = randomBytes(12).toString('base64url')
  const reservation = {
    projectId: project.id,
    key,
    requestHash: requestHash(body, options.source),
    token,
    leaseMs: IDEMPOTENCY_LEASE_MS,
    keepMs: IDEMPOTENCY_KEEP_MS,
  }
  for (let tries = 1; ; tries++) {
    const held = await reserveKey(db, reservation)
    if (held === 'reserved') break
    if (held !== null) {
      if (held.request_hash !== reservation.requestHash) throw new AppError('idempotency_key_reused')
      if (held.status === 'done') return { status: held.response_status!, body: held.response_body as SendResponse, replayed: true }
      throw new AppError('idempotency_key_in_progress')
    }
    if (tries >= RESERVE_TRIES) throw new AppError('idempotency_key_in_progress')
  }

  try {
    // A replay returned above: only the first send is recorded in the audit log.
    const response = await sendBroadcast(deps, project, body, audit, {
      ...options,
      recordIn: async (tx, answer) => {
        // First in the send's transaction: a request that lost its key commits nothing.
        if (!(await completeKey(tx, project.id, key, token, { status: 202, body: answer }))) throw new AppError('idempotency_key_in_progress')
      },
    })
    return { status: 202, body: response, replayed: false }
  } catch (err) {
    // Nothing was created (the transaction rolled back, or a check refused the
    // send before it): the key is freed so a retry runs again and gets today's
    // answer. Should this fail too, the key frees itself after the lease.
    await releaseKey(db, project.id, key, token).catch(() => undefined)
    throw err
  }
}
