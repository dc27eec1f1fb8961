// Subscriber import and export (issue 23), in this one process (app.inject):
// `npm run bench -- --only import` measures the same through a real server
// process, with that process's peak RSS alone (bench/import-export.ts).
// Here: lines per second and this process's peak RSS while POST /v1/subscribers/import streams a generated NDJSON file
// (never built in memory) and GET /v1/subscribers/export streams it back.
//
//   node --import tsx bench/import.ts [lines, default 100000]
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test node --import tsx bench/import.ts [lines]
//
// Runs on the embedded database, or on PostgreSQL when DATABASE_URL is set, in
// a fresh test database (dropped at the end). The import goes through the real
// route (app.inject with a stream body), a second import of the same lines
// measures the idempotent pass (nothing changes).
import { Readable } from 'node:stream'
import { createTestApp } from '../test/support/app.ts'

const LINES = Number(process.argv[2] ?? 100_000)

/** The file, generated a chunk at a time: ~250 bytes a line, like a browser's subscription with a few tags. */
function file(): Readable {
  return Readable.from((function* () {
    for (let i = 0; i < LINES; i += 1000) {
      let chunk = ''
      for (let j = i; j < Math.min(LINES, i + 1000); j++) {
        chunk += `${JSON.stringify({ endpoint: `https://fcm.googleapis.com/fcm/send/bench-${j}-${'x'.repeat(80)}`, keys: { p256dh: `B${'p'.repeat(86)}`, auth: `a${j}`.padEnd(22, 'a') }, external_id: `user-${j}`, tags: { plan: j % 3 ? 'free' : 'pro', n: j } })}\n`
      }
      yield Buffer.from(chunk)
    }
  })())
}

let peak = 0
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50)
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`

const t = await createTestApp()
try {
  const project = await t.project({ plan: 'max' })
  const headers = { ...project.auth, 'content-type': 'application/x-ndjson' }
  const storage = process.env.DATABASE_URL ? 'postgres' : 'embedded'
  console.log(`import bench: ${LINES} lines, ${storage} storage, node ${process.version}, RSS at start ${mb(process.memoryUsage().rss)}`)
  for (const pass of ['first import', 'same file again']) {
    peak = process.memoryUsage().rss
    const start = performance.now()
    const res = await t.app.inject({ method: 'POST', url: '/v1/subscribers/import', headers, payload: file() })
    const seconds = (performance.now() - start) / 1000
    const body = res.json()
    console.log(`${pass}: ${seconds.toFixed(1)} s, ${Math.round(LINES / seconds)} lines/s, peak RSS ${mb(peak)}; ${JSON.stringify({ imported: body.imported, updated: body.updated, skipped: body.skipped })}`)
  }
  peak = process.memoryUsage().rss
  const start = performance.now()
  const res = await t.app.inject({ method: 'GET', url: '/v1/subscribers/export', headers: project.auth })
  const seconds = (performance.now() - start) / 1000
  console.log(`export: ${seconds.toFixed(1)} s, ${Math.round(LINES / seconds)} lines/s, peak RSS ${mb(peak)} (app.inject collects the answer: the body, ${mb(res.rawPayload.length)}, is in this figure)`)
} finally {
  clearInterval(sampler)
  await t.close()
}
