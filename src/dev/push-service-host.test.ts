// `herald dev push-service --host … --public-url …`: a push service that
// workers on other machines can reach. The listening address and the URL
// written into endpoints (and required as the VAPID audience) are the
// operator's to choose; here on loopback addresses other than 127.0.0.1.
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { request } from 'undici'
import { afterAll, describe, expect, it } from 'vitest'
import { createTestApp } from '../../test/support/app.ts'
import { send, waitForBroadcast } from '../../test/support/delivery.ts'
import { encryptPayload } from '../delivery/encryption.ts'
import { vapidAuthorization } from '../delivery/vapid.ts'
import { generateVapidKeys } from '../projects/vapid-keys.ts'
import { startPushService } from './push-service.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const children: ChildProcess[] = []

afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM')
})

function startCommand(args: string[]): Promise<{ url: string; printed: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/main.ts'), 'dev', 'push-service', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  let printed = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL printed: ${printed}`)), 30_000)
    const read = (chunk: Buffer) => {
      printed += chunk.toString()
      const match = /listening on (https?:\/\/\S+) /.exec(printed)
      if (match && printed.includes('Ctrl-C')) {
        clearTimeout(timer)
        resolve({ url: match[1], printed })
      }
    }
    child.stdout!.on('data', read)
    child.stderr!.on('data', read)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(Object.assign(new Error(`exited with ${code}: ${printed}`), { code, printed }))
    })
  })
}

describe('herald dev push-service --host', () => {
  it('listens on the given address, writes it into endpoints, and Herald delivers there', async () => {
    const { url } = await startCommand(['--host', '127.0.0.2', '--port', '0'])
    expect(url).toMatch(/^http:\/\/127\.0\.0\.2:\d+$/)
    const created = (await request(`${url}/subscriptions`, { method: 'POST' }).then((res) => res.body.json())) as {
      endpoint: string
      keys: { p256dh: string; auth: string }
    }
    expect(created.endpoint.startsWith(`${url}/push/`)).toBe(true)
    // Nothing answers on 127.0.0.1 at that port: only the given address is used.
    await expect(request(url.replace('127.0.0.2', '127.0.0.1') + '/received')).rejects.toThrow()

    const t = await createTestApp({ HERALD_ENCRYPT_THREADS: '0' }, { worker: true })
    try {
      const project = await t.project({ plan: 'plus' })
      const res = await t.app.inject({ method: 'POST', url: `/v1/subscribe?project=${project.id}`, payload: created })
      expect(res.statusCode).toBe(201)
      const id = await send(t, project, { target: { type: 'all' }, notification: { title: 'Across hosts', body: 'x' } })
      expect(await waitForBroadcast(t, project, id)).toMatchObject({ status: 'sent', delivered: 1, failed: 0 })
      const got = (await request(`${url}/received`).then((r) => r.body.json())) as { received: Array<{ payload: { title: string } }> }
      expect(got.received.map((r) => r.payload.title)).toEqual(['Across hosts'])
    } finally {
      await t.close()
    }
  })

  it('refuses a public URL with a path, naming the flag', async () => {
    const failed = await startCommand(['--port', '0', '--public-url', 'http://push.example.com/base']).catch((err) => err)
    expect(failed.code).toBe(1)
    expect(failed.printed).toMatch(/--public-url: .*origin only/)
  })
})

describe('push service public URL', () => {
  it('writes the public URL into endpoints and requires it as the VAPID audience', async () => {
    const publicUrl = 'http://push.herald.test:8090'
    const service = await startPushService({ publicUrl })
    const keys = generateVapidKeys()
    try {
      expect(service.url).toBe(publicUrl)
      const sub = service.createSubscription()
      expect(sub.endpoint.startsWith(`${publicUrl}/push/`)).toBe(true)
      // Reach it where it really listens (a proxy or DNS name would do this in a fleet).
      const server = service.listening
      expect(server).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      const direct = sub.endpoint.replace(publicUrl, server)
      const push = (audience: string) =>
        request(direct, {
          method: 'POST',
          headers: {
            ttl: '60',
            'content-encoding': 'aes128gcm',
            'content-type': 'application/octet-stream',
            authorization: vapidAuthorization(keys, audience, 'mailto:ops@herald.dev').header,
          },
          body: encryptPayload(Buffer.from('{"v":1,"title":"x"}'), sub.keys),
        }).then(async (res) => (await res.body.dump(), res.statusCode))
      expect(await push(server)).toBe(403)
      expect(await push(publicUrl)).toBe(201)
    } finally {
      await service.close()
    }
  })
})
