// Connection-time address checks for requests to URLs that came from outside
// (decisions.md §5). Judging a URL when it is stored is not enough: its DNS
// answer can later turn private. These check the address a socket is actually
// opened to, before it is opened, so a refused address never sees a request.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { isIP } from 'node:net'
import { buildConnector } from 'undici'
import { isPublicAddress } from './url-policy.ts'

/** error.code of a connection refused because its address is not public. */
export const NOT_PUBLIC_CODE = 'EADDRNOTPUBLIC'

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

function notPublic(host: string, address: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`${host} resolves to non-public address ${address}`)
  error.code = NOT_PUBLIC_CODE
  return error
}

/** A dns.lookup that refuses private, loopback and reserved answers (any of them). */
export function publicOnlyLookup(hostname: string, options: object, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, [])
    const list = addresses as LookupAddress[]
    const refused = list.find((entry) => !isPublicAddress(entry.address))
    if (refused) return callback(notPublic(hostname, refused.address), [])
    if ((options as { all?: boolean }).all) return callback(null, list)
    callback(null, list[0].address, list[0].family)
  })
}

/**
 * An undici connector that opens sockets only to public addresses. Node skips
 * the lookup for a literal IP host (http://127.0.0.1/), so those are judged here.
 */
export function publicOnlyConnector(options: buildConnector.BuildOptions = {}): buildConnector.connector {
  const connect = buildConnector({ ...options, lookup: publicOnlyLookup })
  return (target, callback) => {
    const host = target.hostname.replace(/^\[|\]$/g, '')
    if (isIP(host) && !isPublicAddress(host)) return callback(notPublic(host, host), null)
    connect(target, callback)
  }
}
