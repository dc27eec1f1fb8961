import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import autocannon from 'autocannon'
import { startHerald } from './support.ts'
const ADMIN = 'bench-admin-0123456789abcdef'
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-flood-'))
const herald = await startHerald({ HERALD_DATA_DIR: dir, NODE_ENV: 'production', HERALD_ADMIN_TOKEN: ADMIN }, 39_300)
try {
  const created = await fetch(`${herald.url}/admin/v1/projects`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'x', plan: 'max' }) })
  const project = (await created.json()) as { id: string; api_key: string }
  const made = await fetch(`${herald.url}/v1/send`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${project.api_key}` }, body: JSON.stringify({ target: { type: 'all' }, notification: { title: 'Hello', body: 'Bench' } }) })
  const { broadcast_id } = (await made.json()) as { broadcast_id: string }
  for (const kind of [0, 1, 2, 3]) {
    const r = await autocannon({
      url: herald.url, connections: 20, duration: 5,
      requests: [{ method: 'POST', headers: { 'content-type': 'text/plain' }, setupRequest: (request) => {
        const madeUp = randomBytes(13).toString('hex')
        if (kind === 0) return { ...request, path: `/v1/events?project=prj_${madeUp}`, body: JSON.stringify({ type: 'clicked', broadcast_id }) }
        if (kind === 1) return { ...request, path: `/v1/events?project=${project.id}`, body: JSON.stringify({ type: 'clicked', broadcast_id: `bdc_${madeUp}` }) }
        if (kind === 3) return { ...request, path: `/v1/events?project=${project.id}`, body: JSON.stringify({ type: 'clicked', broadcast_id }) }
        return { ...request, path: `/v1/events?project=${project.id}`, body: `{"type":"clicked","broadcast_id":1` }
      } }],
    })
    console.log(kind, Math.round(r['2xx'] / r.duration), 'req/s p50', r.latency.p50, 'p99', r.latency.p99, 'non2xx', r.non2xx, 'errors', r.errors, 'timeouts', r.timeouts)
  }
} finally { await herald.stop(); fs.rmSync(dir, { recursive: true, force: true }) }
