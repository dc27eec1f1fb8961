// The Topic header (RFC 8030 §5.4) collapses pending pushes with the same
// topic. Herald accepts [A-Za-z0-9_-]{1,32} as RFC 8030 does, but Mozilla
// autopush takes only [A-Za-z0-9] and refuses the push otherwise, so for
// Mozilla a topic with `_` or `-` is replaced by a stable alphanumeric digest.
import { createHash } from 'node:crypto'

const MAX_TOPIC_LENGTH = 32
const ALPHANUMERIC = /^[A-Za-z0-9]{1,32}$/

function isMozilla(endpoint: URL | string): boolean {
  let host: string
  try {
    host = (typeof endpoint === 'string' ? new URL(endpoint) : endpoint).hostname.toLowerCase()
  } catch {
    return false
  }
  return host === 'updates.push.services.mozilla.com' || host.endsWith('.services.mozilla.com')
}

/**
 * The Topic header value for this endpoint, or null for none. For Mozilla a
 * topic that is not purely alphanumeric becomes the first 32 hex characters of
 * its SHA-256 (128 bits: the same topic always maps to the same value, distinct
 * topics practically never collide); other push services get it unchanged.
 */
export function pushTopicFor(endpoint: URL | string, topic: string | null): string | null {
  if (topic === null || topic === '') return null
  if (!isMozilla(endpoint) || ALPHANUMERIC.test(topic)) return topic
  return createHash('sha256').update(topic, 'utf8').digest('hex').slice(0, MAX_TOPIC_LENGTH)
}
