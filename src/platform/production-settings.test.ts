// Production refusal (issue 27; issue 22 finding 8): with NODE_ENV=production
// `herald serve` does not start on a public URL that is not https (session
// cookies without Secure, invite links to http://localhost) or a weak
// operator token, and says which setting to fix and how.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { runHerald } from '../../test/support/cli.ts'
import { adminTokenProblem, productionProblems, publicUrlProblem } from './production-settings.ts'

const STRONG = '3f9c1a7e5b2d4c6e8a0b1d3f5e7c9a2b'
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-production-'))
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }))

describe('production settings', () => {
  it('wants an https public URL', () => {
    expect(publicUrlProblem({ publicUrl: 'http://localhost:3000' })?.setting).toBe('HERALD_PUBLIC_URL')
    expect(publicUrlProblem({ publicUrl: 'http://push.example.com' })?.fix).toContain('https://')
    expect(publicUrlProblem({ publicUrl: 'https://push.example.com' })).toBeNull()
  })

  it('wants a long, random-looking operator token', () => {
    expect(adminTokenProblem(null)?.problem).toBe('is not set')
    expect(adminTokenProblem('0123456789abcdef0123')?.problem).toContain('fewer than 32')
    expect(adminTokenProblem('changeme'.repeat(4))?.problem).toContain('distinct characters')
    expect(adminTokenProblem(STRONG)).toBeNull()
    expect(productionProblems({ publicUrl: 'https://push.example.com', adminToken: STRONG })).toEqual([])
  })

  it('herald serve refuses to start, naming each setting and its fix', async () => {
    const result = await runHerald(['serve'], {
      NODE_ENV: 'production',
      PORT: '0',
      HERALD_DATA_DIR: dataDir,
      // Long enough for config.ts's own check (16), too short for production.
      HERALD_ADMIN_TOKEN: '0123456789abcdefghij',
      HERALD_VAPID_SUBJECT: 'mailto:ops@example.com',
    })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('Configuration error: unsafe for NODE_ENV=production')
    expect(result.stderr).toContain('HERALD_PUBLIC_URL is http://localhost:0, not an https:// URL')
    expect(result.stderr).toContain('HERALD_ADMIN_TOKEN is 20 characters long')
    expect(result.stderr).toContain('openssl rand -hex 32')
    // Refused before anything was created.
    expect(fs.readdirSync(dataDir)).toEqual([])
  }, 60_000)
})
