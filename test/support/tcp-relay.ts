// A TCP relay between Herald and a server (PostgreSQL, Redis) that a test can
// cut and heal, to fake a server restart or a network partition for real:
// - `reset()` destroys every relayed connection now (what a server restart
//   does to its clients) and refuses new ones until `heal()`;
// - `blackhole()` keeps connections open but swallows every byte both ways
//   and leaves new ones unanswered (a host cut off from the network) until
//   `heal()`, which then resets what was held, as TCP would once it gives up;
// - `hold()` keeps connections open and forwards nothing either way, but keeps
//   every byte and delivers it at `heal()`: a cut the link comes back from
//   before TCP gives up (its retransmissions land late, in order);
// - `blackholeMatching(text)` silences for good only the connections whose
//   client has sent `text` (e.g. the one that ran LISTEN), leaving the others
//   and new ones working: a connection the network killed without a word.
import net from 'node:net'

export interface TcpRelay {
  /** The port the relay listens on (127.0.0.1). */
  readonly port: number
  /** `url` with its host and port replaced by the relay's. */
  urlFor(url: string): string
  /** Connections relayed so far (for tests that want to see a reconnect). */
  readonly connections: number
  reset(): void
  blackhole(): void
  /** Forwards nothing until heal(), which then delivers every byte held, in order. */
  hold(): void
  /** Silences for good the open connections whose client sent text (in its first 16 KB); returns how many. */
  blackholeMatching(text: string): number
  heal(): void
  close(): Promise<void>
}

type State = 'open' | 'refusing' | 'blackhole' | 'holding'

/** What blackholeMatching() looks at: a connection's first bytes from its client. */
const HEAD_BYTES = 16 * 1024

interface Pair {
  client: net.Socket
  upstream: net.Socket | null
  head: string
  silenced: boolean
  /** Bytes held while holding, each way, delivered at heal(). */
  toUpstream: Buffer[]
  toClient: Buffer[]
  /** The server closed the connection during a hold: the client hears of it at heal(), after the bytes before it. */
  upstreamClosed: boolean
}

export async function startTcpRelay(targetHost: string, targetPort: number): Promise<TcpRelay> {
  let state: State = 'open'
  let connections = 0
  const pairs = new Set<Pair>()

  const server = net.createServer((client) => {
    client.on('error', () => undefined)
    if (state === 'refusing') {
      client.destroy()
      return
    }
    const pair: Pair = { client, upstream: null, head: '', silenced: false, toUpstream: [], toClient: [], upstreamClosed: false }
    pairs.add(pair)
    client.on('close', () => {
      pairs.delete(pair)
      pair.upstream?.destroy()
    })
    if (state === 'blackhole') return // held, never answered
    // A connection opened during a hold: its first bytes are kept and sent on at heal, like the rest.
    connect(pair)
  })

  function connect(pair: Pair): void {
    const { client } = pair
    connections++
    const upstream = net.connect(targetPort, targetHost)
    pair.upstream = upstream
    upstream.on('error', () => client.destroy())
    upstream.on('close', () => {
      if (state === 'holding') pair.upstreamClosed = true
      else client.destroy()
    })
    client.on('data', (chunk: Buffer) => {
      if (pair.head.length < HEAD_BYTES) pair.head += chunk.toString('latin1').slice(0, HEAD_BYTES - pair.head.length)
      if (state === 'holding') pair.toUpstream.push(chunk)
      else if (state !== 'blackhole' && !pair.silenced) upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (state === 'holding') pair.toClient.push(chunk)
      else if (state !== 'blackhole' && !pair.silenced) client.write(chunk)
    })
  }

  function destroyAll(): void {
    for (const { client, upstream } of pairs) {
      client.destroy()
      upstream?.destroy()
    }
    pairs.clear()
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port

  return {
    port,
    get connections() {
      return connections
    },
    urlFor(url: string) {
      const parsed = new URL(url)
      parsed.hostname = '127.0.0.1'
      parsed.port = String(port)
      return parsed.toString()
    },
    reset() {
      state = 'refusing'
      destroyAll()
    },
    blackhole() {
      state = 'blackhole'
    },
    blackholeMatching(text: string) {
      let silenced = 0
      for (const pair of pairs) {
        if (!pair.head.includes(text)) continue
        pair.silenced = true
        silenced++
      }
      return silenced
    },
    hold() {
      state = 'holding'
    },
    heal() {
      if (state === 'blackhole') destroyAll()
      if (state === 'holding') {
        for (const pair of pairs) {
          for (const chunk of pair.toUpstream.splice(0)) pair.upstream?.write(chunk)
          for (const chunk of pair.toClient.splice(0)) pair.client.write(chunk)
          if (pair.upstreamClosed) pair.client.end()
        }
      }
      state = 'open'
    },
    async close() {
      destroyAll()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
