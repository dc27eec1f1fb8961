// What the delivery log says about an attempt that got no HTTP answer: a
// short phrase from a fixed list, by the error's code. The raw message can
// hold addresses Herald resolved (a host turning private is exactly what must
// not be mapped out through the API), so it goes to webhook_deliveries.last_error
// for the operator, never to the owner.
import { NOT_PUBLIC_CODE } from '../platform/outbound/public-connect.ts'

const PHRASES: Array<[RegExp, string]> = [
  [/^(TimeoutError|AbortError|ETIMEDOUT|UND_ERR_(HEADERS|BODY|CONNECT)_TIMEOUT)$/, 'timeout: no complete answer in time'],
  [new RegExp(`^${NOT_PUBLIC_CODE}$`), 'refused: the host resolves to a non-public address'],
  [/^(ENOTFOUND|EAI_AGAIN|EAI_FAIL|EAI_NONAME|EAI_NODATA)$/, 'DNS lookup failed'],
  [/^ECONNREFUSED$/, 'connection refused'],
  [/^(ECONNRESET|EPIPE|UND_ERR_SOCKET|UND_ERR_CLOSED)$/, 'connection closed before an answer'],
  [/^(EHOSTUNREACH|ENETUNREACH|EHOSTDOWN|ENETDOWN)$/, 'host unreachable'],
  [/^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/, 'TLS handshake or certificate error'],
  [/^(ERR_INVALID_URL|ERR_INVALID_ARG)/, 'invalid URL'],
]

/** A short, safe description of a network error `CODE: message` (the OutboundClient's form). */
export function describeNetworkError(error: string): string {
  const code = /^([A-Za-z_]+[A-Za-z0-9_]*)(:|$)/.exec(error)?.[1] ?? ''
  for (const [pattern, phrase] of PHRASES) if (pattern.test(code)) return `${phrase} (${code})`
  return /^[A-Z][A-Z0-9_]{1,40}$/.test(code) ? `network error (${code})` : 'network error'
}
