// LISTEN on a PostgreSQL server, on a connection of its own that is kept
// alive: replaced with backoff when it drops, and pinged, because a
// connection cut by the network (not closed by the server) can stay silently
// dead: no error, no notification, and every wake-up lost until the next poll.
import type net from 'node:net'
import pg from 'pg'
import type { DatabaseAvailability } from './availability.ts'

/** An idle LISTEN connection is checked this often... */
export const LISTEN_PING_INTERVAL_MS = 3_000
/** ...and replaced when the check gets no answer within this long: a dead one is noticed within ~5 s. */
export const LISTEN_PING_TIMEOUT_MS = 2_000
/** First wait before re-opening a dropped LISTEN connection; doubles per failed attempt up to RECONNECT_MAX_MS. */
const RECONNECT_MIN_MS = 250
const RECONNECT_MAX_MS = 5_000
/** stop() waits this long for a polite goodbye to the server before dropping the socket. */
const END_TIMEOUT_MS = 1_000

/** Closes a client's socket at once: end() waits for the server, which may never answer. */
function destroy(client: pg.Client): void {
  const stream = (client as unknown as { connection?: { stream?: net.Socket } }).connection?.stream
  stream?.destroy()
}

/**
 * Calls onNotify for each NOTIFY on channel, and onNotify('') after each
 * (re)connection: whatever was notified while the connection was down is
 * found by looking for work at once. Resolves once listening, or once the
 * first attempt failed (it keeps trying). Returns the function that stops.
 */
export async function listenOnServer(
  clientConfig: pg.ClientConfig,
  channel: string,
  onNotify: (payload: string) => void,
  availability: DatabaseAvailability,
): Promise<() => Promise<void>> {
  let current: pg.Client | null = null
  let stopped = false
  let failures = 0
  let retryTimer: NodeJS.Timeout | null = null
  let pingTimer: NodeJS.Timeout | null = null

  const retry = () => {
    if (stopped) return
    const delay = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** failures)
    failures++
    retryTimer = setTimeout(() => void connect(), delay)
    retryTimer.unref()
  }

  // Called by the error, end and failed-ping paths alike; acts once per connection.
  const lost = (client: pg.Client, err: unknown, startedAt = availability.begin()) => {
    if (current !== client) return
    current = null
    if (pingTimer) clearInterval(pingTimer)
    pingTimer = null
    destroy(client)
    availability.failed(err, startedAt)
    retry()
  }

  const ping = (client: pg.Client) => {
    const startedAt = availability.begin()
    client.query({ text: 'SELECT 1', query_timeout: LISTEN_PING_TIMEOUT_MS } as pg.QueryConfig).then(
      () => availability.succeeded(startedAt),
      (err: unknown) => lost(client, err, startedAt),
    )
  }

  const connect = async (): Promise<void> => {
    retryTimer = null
    if (stopped) return
    const startedAt = availability.begin()
    const client = new pg.Client(clientConfig)
    client.on('notification', (message) => {
      if (message.channel === channel) onNotify(message.payload ?? '')
    })
    // Without these an 'error' event would kill the process; before the
    // connection is current, connect()'s own rejection handles the failure.
    client.on('error', (err) => lost(client, err))
    client.on('end', () => lost(client, new Error('Connection terminated: the LISTEN connection closed')))
    try {
      await client.connect()
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
    } catch (err) {
      destroy(client)
      availability.failed(err, startedAt)
      retry()
      return
    }
    if (stopped) {
      destroy(client)
      return
    }
    current = client
    failures = 0
    availability.succeeded(startedAt)
    pingTimer = setInterval(() => ping(client), LISTEN_PING_INTERVAL_MS)
    pingTimer.unref()
    onNotify('')
  }

  await connect()
  return async () => {
    stopped = true
    if (retryTimer) clearTimeout(retryTimer)
    if (pingTimer) clearInterval(pingTimer)
    const client = current
    current = null
    if (!client) return
    const ended = client.end().catch(() => undefined)
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, END_TIMEOUT_MS).unref())
    await Promise.race([ended, timeout])
    destroy(client)
  }
}
