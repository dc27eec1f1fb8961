// Subscriber import and export through a real `herald serve` process (issue 23):
// POST /v1/subscribers/import streams a generated NDJSON file of N lines (made a
// chunk at a time, never held whole), then GET /v1/subscribers/export streams
// every line back and the bench counts them. For each: the time, lines per
// second and the peak resident memory (VmHWM) of the Herald process during
// that step alone (the peak is reset between steps through
// /proc/<pid>/clear_refs), so the figure is the server's, not the bench's.
//
// Then, with the server stopped, `herald backup --out FILE.gz` of that database
// and `herald restore FILE.gz` into a new empty one of the same storage mode,
// each as its own process: time, subscribers per second and its peak RSS.
//
//   npm run bench -- --only import --subscribers 1000000 [--storage embedded|postgres|both]
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import pg from 'pg'
import type { Storage } from './fanout.ts'
import { fmt, HERALD_ENTRY, ROOT, startHerald, type HeraldProcess } from './support.ts'

/** Production refuses a public URL that is not https; nothing in a bench fetches it. */
const BENCH_PUBLIC_URL = 'https://herald.localhost'
const ADMIN = `bench-admin-${randomBytes(16).toString('hex')}`
/** Lines per chunk the generator yields: ~250 KB, like a socket's reads. */
const CHUNK_LINES = 1000

/** The file, a chunk at a time: ~250 bytes a line, like a browser's subscription with a few tags. */
function importFile(lines: number): Readable {
  return Readable.from((function* () {
    for (let i = 0; i < lines; i += CHUNK_LINES) {
      let chunk = ''
      for (let j = i; j < Math.min(lines, i + CHUNK_LINES); j++) {
        chunk += `${JSON.stringify({ endpoint: `https://fcm.googleapis.com/fcm/send/bench-${j}-${'x'.repeat(80)}`, keys: { p256dh: `B${'p'.repeat(86)}`, auth: `a${j}`.padEnd(22, 'a') }, external_id: `user-${j}`, tags: { plan: j % 3 ? 'free' : 'pro', n: j } })}\n`
      }
      yield Buffer.from(chunk)
    }
  })())
}

/** Forgets the process's peak RSS so far (Linux: writing 5 to clear_refs resets VmHWM to the current RSS). */
function resetPeak(herald: HeraldProcess): void {
  fs.writeFileSync(`/proc/${herald.child.pid}/clear_refs`, '5')
}

async function storageEnv(storage: Storage, serverUrl: string | undefined): Promise<{ env: Record<string, string>; cleanup(): Promise<void> }> {
  if (storage === 'postgres') {
    if (!serverUrl) throw new Error('--storage postgres needs DATABASE_URL')
    const name = `herald_bench_${randomBytes(4).toString('hex')}`
    const admin = new pg.Client({ connectionString: serverUrl })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${name}`)
    await admin.end()
    const url = new URL(serverUrl)
    url.pathname = `/${name}`
    return {
      env: { DATABASE_URL: url.toString() },
      async cleanup() {
        const client = new pg.Client({ connectionString: serverUrl })
        await client.connect()
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
        await client.end()
      },
    }
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-import-'))
  return { env: { HERALD_DATA_DIR: dir }, cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }) }
}

/** Runs a `herald` command to its end: seconds taken and its peak RSS (VmHWM, read every 100 ms while it runs). */
async function runCommand(args: string[], env: Record<string, string>): Promise<{ seconds: number; peakMb: number }> {
  const start = performance.now()
  const child = spawn(process.execPath, [...HERALD_ENTRY, ...args], { cwd: ROOT, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'ignore', 'inherit'] })
  let peakKb = 0
  const sample = () => {
    try {
      peakKb = Math.max(peakKb, Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0))
    } catch {
      // exited between two samples
    }
  }
  const timer = setInterval(sample, 100)
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  clearInterval(timer)
  if (code !== 0) throw new Error(`herald ${args.join(' ')} exited with ${code}`)
  return { seconds: (performance.now() - start) / 1000, peakMb: Math.round(peakKb / 1024) }
}

export async function benchImportExport(storage: Storage, serverUrl: string | undefined, lines: number, options: { backup: boolean; again?: boolean } = { backup: true }): Promise<void> {
  const { env, cleanup } = await storageEnv(storage, serverUrl)
  const restoreTarget = await storageEnv(storage, serverUrl)
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-backup-')), 'backup.ndjson.gz')
  const herald = await startHerald({ ...env, NODE_ENV: 'production', HERALD_ADMIN_TOKEN: ADMIN, HERALD_PUBLIC_URL: BENCH_PUBLIC_URL }, 0)
  let stopped = false
  try {
    const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }
    const created = await fetch(`${herald.url}/admin/v1/projects`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'import-bench', plan: 'max' }) })
    const project = (await created.json()) as { id: string; api_key: string }
    await fetch(`${herald.url}/admin/v1/projects/${project.id}`, {
      method: 'PATCH',
      headers: admin,
      body: JSON.stringify({ limits: { requests_per_minute: 100_000_000, subscribers: 100_000_000 } }),
    })
    const auth = { authorization: `Bearer ${project.api_key}` }
    console.log(`\nImport and export (${storage} storage): ${fmt(lines)} lines, herald serve in its own process, RSS at start ${herald.peakRssMb()} MB`)

    for (const pass of options.again === false ? ['import'] : ['import', 'import again (nothing changes)']) {
      resetPeak(herald)
      const start = performance.now()
      const res = await fetch(`${herald.url}/v1/subscribers/import`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/x-ndjson' },
        body: Readable.toWeb(importFile(lines)) as ReadableStream,
        duplex: 'half',
      } as RequestInit)
      const body = (await res.json()) as { imported: number; updated: number; skipped: number }
      const seconds = (performance.now() - start) / 1000
      if (res.status !== 200) throw new Error(`import answered ${res.status}: ${JSON.stringify(body)}`)
      console.log(
        `  ${pass}: ${seconds.toFixed(1)} s, ${fmt(lines / seconds)} lines/s, server peak RSS ${herald.peakRssMb()} MB; ` +
          `imported ${fmt(body.imported)}, updated ${fmt(body.updated)}, skipped ${fmt(body.skipped)}`,
      )
    }

    resetPeak(herald)
    const start = performance.now()
    const res = await fetch(`${herald.url}/v1/subscribers/export`, { headers: auth })
    if (res.status !== 200 || !res.body) throw new Error(`export answered ${res.status}`)
    let exported = 0
    let bytes = 0
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length
      const buffer = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
      for (let at = buffer.indexOf(0x0a); at !== -1; at = buffer.indexOf(0x0a, at + 1)) exported++
    }
    const seconds = (performance.now() - start) / 1000
    console.log(`  export: ${seconds.toFixed(1)} s, ${fmt(exported / seconds)} lines/s, server peak RSS ${herald.peakRssMb()} MB; ${fmt(exported)} lines, ${fmt(bytes / 1024 / 1024)} MB`)
    if (exported !== lines) throw new Error(`export gave ${exported} lines, expected ${lines}`)

    // The embedded database belongs to one process: the server stops before the backup opens it.
    await herald.stop()
    stopped = true
    if (!options.backup) return
    const commandEnv = { NODE_ENV: 'production', HERALD_ADMIN_TOKEN: ADMIN, HERALD_PUBLIC_URL: BENCH_PUBLIC_URL }
    const backup = await runCommand(['backup', '--out', file], { ...commandEnv, ...env })
    console.log(`  herald backup: ${backup.seconds.toFixed(1)} s, ${fmt(lines / backup.seconds)} subscribers/s, peak RSS ${backup.peakMb} MB; ${fmt(fs.statSync(file).size / 1024 / 1024)} MB gzip`)
    const restore = await runCommand(['restore', file], { ...commandEnv, ...restoreTarget.env })
    console.log(`  herald restore: ${restore.seconds.toFixed(1)} s, ${fmt(lines / restore.seconds)} subscribers/s, peak RSS ${restore.peakMb} MB (into a new ${storage} database, migrations included)`)
  } finally {
    if (!stopped) await herald.stop()
    await cleanup()
    await restoreTarget.cleanup()
    fs.rmSync(path.dirname(file), { recursive: true, force: true })
  }
}
