// API throughput: POST /v1/subscribe, POST /v1/send, the POST /v1/events
// beacon, and GET /v1/me alone and while garbage floods /v1/events, requests
// per second, measured with autocannon against `herald serve --role api` in
// its own process.
import { randomBytes } from 'node:crypto'
import autocannon from 'autocannon'
import { benchStorage, startHerald } from './support.ts'
import type { Storage } from './fanout.ts'
import path from 'node:path'

const DURATION_S = 10
const CONNECTIONS = 20
/** Production refuses a public URL that is not https; nothing in a bench fetches it. */
const BENCH_PUBLIC_URL = 'https://herald.localhost'
// 32+ characters: production refuses a shorter operator token (platform/production-settings.ts).
const ADMIN = `bench-admin-${randomBytes(16).toString('hex')}`

export async function benchApi(storage: Storage, serverUrl: string | undefined): Promise<void> {
  const { env, cleanup } = await benchStorage(storage, serverUrl, 'api')
  const herald = await startHerald({ ...env, NODE_ENV: 'production', HERALD_ADMIN_TOKEN: ADMIN, HERALD_PUBLIC_URL: BENCH_PUBLIC_URL }, 0)
  try {
    const created = await fetch(`${herald.url}/admin/v1/projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'api-bench', plan: 'max' }),
    })
    const project = (await created.json()) as { id: string; api_key: string }
    await fetch(`${herald.url}/admin/v1/projects/${project.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ limits: { requests_per_minute: 100_000_000, subscribers: 100_000_000, monthly_pushes: 1_000_000_000 } }),
    })
    console.log(`\nAPI (${storage} storage): autocannon, ${CONNECTIONS} connections, ${DURATION_S} s each, herald --role api in its own process`)

    // Each subscribe is a new browser: a new endpoint, so every request inserts a row.
    let counter = 0
    const p256dh = 'BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4'
    const subscribe = await autocannon({
      url: `${herald.url}/v1/subscribe?project=${project.id}`,
      connections: CONNECTIONS,
      duration: DURATION_S,
      requests: [
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          setupRequest: (request) => ({
            ...request,
            body: JSON.stringify({ endpoint: `https://fcm.googleapis.com/fcm/send/bench-${counter++}`, keys: { p256dh, auth: 'BTBZMqHH6r4Tts7J_aSIgg' } }),
          }),
        },
      ],
    })
    report('POST /v1/subscribe', subscribe)

    const send = await autocannon({
      url: `${herald.url}/v1/send`,
      connections: CONNECTIONS,
      duration: DURATION_S,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${project.api_key}` },
      body: JSON.stringify({ target: { type: 'user', external_id: 'someone' }, notification: { title: 'Hello', body: 'Bench' } }),
    })
    report('POST /v1/send (user target)', send)

    // The click beacon as browsers send it (text/plain, navigator.sendBeacon), for a real broadcast.
    const made = await fetch(`${herald.url}/v1/send`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${project.api_key}` },
      body: JSON.stringify({ target: { type: 'all' }, notification: { title: 'Hello', body: 'Bench' } }),
    })
    const { broadcast_id } = (await made.json()) as { broadcast_id: string }
    const events = await autocannon({
      url: `${herald.url}/v1/events?project=${project.id}`,
      connections: CONNECTIONS,
      duration: DURATION_S,
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ type: 'clicked', broadcast_id }),
    })
    report('POST /v1/events (click beacon)', events)

    // Does a flood of garbage to the beacon slow the rest of the API? GET /v1/me
    // (key check, project and usage reads) alone, then while other connections
    // flood /v1/events with made-up project ids, made-up broadcasts of the real
    // project (its limit is too high to stop them) and bodies that are not beacons.
    const me = () =>
      autocannon({
        url: `${herald.url}/v1/me`,
        connections: CONNECTIONS,
        duration: DURATION_S,
        headers: { authorization: `Bearer ${project.api_key}` },
      })
    report('GET /v1/me alone', await me())
    let garbage = 0
    const flood = autocannon({
      url: herald.url,
      connections: CONNECTIONS,
      duration: DURATION_S,
      requests: [
        {
          method: 'POST',
          headers: { 'content-type': 'text/plain' },
          setupRequest: (request) => {
            const kind = garbage++ % 3
            const madeUp = randomBytes(13).toString('hex') // 26 characters of the ids' alphabet: well formed, and unknown
            if (kind === 0) return { ...request, path: `/v1/events?project=prj_${madeUp}`, body: JSON.stringify({ type: 'clicked', broadcast_id: broadcast_id }) }
            if (kind === 1) return { ...request, path: `/v1/events?project=${project.id}`, body: JSON.stringify({ type: 'clicked', broadcast_id: `bdc_${madeUp}` }) }
            return { ...request, path: `/v1/events?project=${project.id}`, body: `{"type":"clicked","broadcast_id":${garbage}` }
          },
        },
      ],
    })
    const [meUnderFlood, floodResult] = await Promise.all([me(), flood])
    report('GET /v1/me during the flood', meUnderFlood)
    report('  the flood: POST /v1/events garbage', floodResult)
  } finally {
    await herald.stop()
    await cleanup()
  }
}

function report(name: string, result: autocannon.Result): void {
  const ok = result['2xx']
  const other = result.non2xx + result.errors
  console.log(
    `  ${name}: ${Math.round(ok / result.duration).toLocaleString('en-US')} req/s (2xx), ` +
      `latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms; ${other} non-2xx or errors`,
  )
}
