// `herald dev push-service` for real: the command in its own process, driven
// over its HTTP control routes, with a Herald (API and worker) pushing to it.
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp, type TestProject } from '../../test/support/app.ts'
import { send, waitForBroadcast } from '../../test/support/delivery.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

let child: ChildProcess
let url: string
let printed = ''
let t: TestApp
let project: TestProject

beforeAll(async () => {
  child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/main.ts'), 'dev', 'push-service', '--port', '0'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL printed: ${printed}`)), 30_000)
    child.stdout!.on('data', (chunk: Buffer) => {
      printed += chunk.toString()
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(printed)
      if (match && printed.includes('Ctrl-C')) {
        clearTimeout(timer)
        resolve(match[1])
      }
    })
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${printed}`)))
  })
  t = await createTestApp({ HERALD_ENCRYPT_THREADS: '0' }, { worker: true })
  project = await t.project({ plan: 'plus' })
}, 60_000)

afterAll(async () => {
  await t?.close()
  if (child && child.exitCode === null) {
    child.kill('SIGTERM')
    await new Promise((resolve) => child.once('exit', resolve))
  }
})

async function control(method: string, route: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}${route}`, { method, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  return { status: res.status, json: text ? JSON.parse(text) : null }
}

async function subscribe(subscription: unknown): Promise<void> {
  const res = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: subscription as object })
  expect(res.statusCode).toBe(201)
}

describe('herald dev push-service', () => {
  it('prints how to use it: its URL, how to get a subscription, see pushes and set faults', () => {
    expect(printed).toContain(`curl -s -X POST ${url}/subscriptions`)
    expect(printed).toContain(`curl -s ${url}/received`)
    expect(printed).toContain(`${url}/faults`)
    expect(printed).toContain('HERALD_ALLOW_PRIVATE_ENDPOINTS=true')
  })

  it('hands out a subscription that Herald pushes to, and records the push decrypted with its headers', async () => {
    const created = await control('POST', '/subscriptions', { applicationServerKey: project.vapidPublic })
    expect(created.status).toBe(201)
    expect(created.json.endpoint).toMatch(new RegExp(`^${url}/push/[\\w-]+$`))
    expect(Buffer.from(created.json.keys.p256dh, 'base64url')).toHaveLength(65)
    expect(Buffer.from(created.json.keys.auth, 'base64url')).toHaveLength(16)
    await subscribe({ endpoint: created.json.endpoint, keys: created.json.keys })

    const notification = { title: 'From dev', body: 'Decrypted by the local push service', url: '/dev' }
    const id = await send(t, project, { target: { type: 'all' }, notification, urgency: 'high', topic: 'dev-topic' })
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 1, failed: 0 })

    const got = await control('GET', `/received?endpoint=${encodeURIComponent(created.json.endpoint)}`)
    expect(got.status).toBe(200)
    expect(got.json.received).toHaveLength(1)
    expect(got.json.received[0].payload).toEqual({ v: 1, project_id: project.id, broadcast_id: id, ...notification })
    expect(got.json.received[0].headers).toMatchObject({ urgency: 'high', topic: 'dev-topic', contentEncoding: 'aes128gcm' })
    expect(got.json.received[0].headers.authorization).toContain(`k=${project.vapidPublic}`)
    expect(got.json.rejected).toEqual([])
  })

  it('answers 410 for a subscription told to, and Herald expires it', async () => {
    await control('POST', '/reset')
    const created = (await control('POST', '/subscriptions')).json
    await subscribe(created)
    expect((await control('POST', '/faults', { endpoint: created.endpoint, status: 410 })).status).toBe(204)
    const id = await send(t, project, { target: { type: 'all' }, notification: { title: 'Again', body: 'Second' } })
    // The subscriber of the previous test still gets it; this one is gone.
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 1, failed: 1 })
    const got = (await control('GET', '/received')).json
    expect(got.received).toHaveLength(1)
    expect(got.rejected).toEqual([expect.objectContaining({ status: 410, reason: 'told to fail' })])
  })

  it('refuses bad control requests with a reason and changes nothing', async () => {
    await control('POST', '/reset')
    const created = (await control('POST', '/subscriptions')).json
    expect((await control('POST', '/faults', { endpoint: created.endpoint, status: 418 })).json.error).toMatch(/status must be one of/)
    expect((await control('POST', '/faults', { endpoint: `${url}/push/unknown`, status: 410 })).status).toBe(404)
    expect((await control('POST', '/subscriptions', { applicationServerKey: 5 })).status).toBe(400)
    const notJson = await fetch(`${url}/faults`, { method: 'POST', body: '{' })
    expect(notJson.status).toBe(400)
    expect((await control('GET', '/nothing-here')).status).toBe(404)
    // No fault was set: a push to the subscription is accepted.
    await subscribe(created)
    const id = await send(t, project, { target: { type: 'all' }, notification: { title: 'Fine', body: 'Third' } })
    expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', failed: 0 })
    expect((await control('GET', '/received')).json.rejected).toEqual([])
  })
})
