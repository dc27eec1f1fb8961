// Where Herald may send requests (decisions.md §5). Push endpoints and webhook
// URLs come from outside, so by default only HTTPS URLs to public addresses
// are allowed, and push endpoints must belong to a known push service.
// HERALD_ALLOW_PRIVATE_ENDPOINTS=true lifts both rules (development, tests).
// These checks judge a URL when it is stored; the sender checks again the
// address it actually connects to (see isPublicAddress), since DNS can change.
import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'
import type { Config } from '../config.ts'

type PolicyConfig = Pick<Config, 'allowPrivateEndpoints' | 'pushHosts'>

/** True for an address on the public internet: not private, loopback, link-local, CGNAT, ULA, multicast or reserved. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false
  // process() turns an IPv4-mapped IPv6 address (::ffff:10.0.0.1) into the IPv4 one.
  return ipaddr.process(address).range() === 'unicast'
}

/** A hostname from a push host list matches exactly, or as a subdomain for "*.example.com". */
export function hostMatches(hostname: string, pattern: string): boolean {
  if (pattern.startsWith('*.')) return hostname.endsWith(pattern.slice(1)) && hostname.length > pattern.length - 1
  return hostname === pattern
}

function parseHttpUrl(value: string): URL | null {
  try {
    const url = new URL(value)
    return url.protocol === 'https:' || url.protocol === 'http:' ? url : null
  } catch {
    return null
  }
}

/** Brackets are part of an IPv6 URL host but not of the address. */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').toLowerCase()
}

/**
 * Judges a push endpoint at subscribe time. Returns null when it is allowed,
 * otherwise a sentence saying why not.
 */
export function checkPushEndpoint(endpoint: string, config: PolicyConfig): string | null {
  const url = parseHttpUrl(endpoint)
  if (!url) return 'must be an http(s) URL'
  if (url.username || url.password) return 'must not carry credentials'
  if (config.allowPrivateEndpoints) return null
  if (url.protocol !== 'https:') return 'must be an HTTPS URL'
  const host = bareHost(url)
  if (isIP(host)) return 'must name a known push service, not an IP address'
  if (!config.pushHosts.some((pattern) => hostMatches(host, pattern))) {
    return `must belong to a known push service (${config.pushHosts.join(', ')})`
  }
  // Push services listen on 443; another port on their host is not theirs to
  // vouch for. (URL drops an explicit :443, so any port left is another one.)
  if (url.port !== '') return 'must use the default HTTPS port (443)'
  return null
}

export type Resolver = (hostname: string) => Promise<string[]>

export const dnsResolver: Resolver = async (hostname) => (await lookup(hostname, { all: true })).map((entry) => entry.address)

/**
 * Judges a webhook URL when it is registered: HTTPS, and a host whose every
 * address is public. Returns null when allowed, otherwise why not.
 */
export async function checkWebhookUrl(value: string, config: PolicyConfig, resolve: Resolver = dnsResolver): Promise<string | null> {
  const url = parseHttpUrl(value)
  if (!url) return 'must be an http(s) URL'
  if (url.username || url.password) return 'must not carry credentials'
  if (config.allowPrivateEndpoints) return null
  if (url.protocol !== 'https:') return 'must be an HTTPS URL'
  const host = bareHost(url)
  if (isIP(host)) return isPublicAddress(host) ? null : 'must not point at a private, loopback or reserved address'
  if (host === 'localhost' || host.endsWith('.localhost')) return 'must not point at this machine'
  let addresses: string[]
  try {
    addresses = await resolve(host)
  } catch {
    return `host ${host} does not resolve`
  }
  if (addresses.length === 0) return `host ${host} does not resolve`
  if (!addresses.every(isPublicAddress)) return 'must not resolve to a private, loopback or reserved address'
  return null
}
