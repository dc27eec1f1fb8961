// The Node.js floor: the start-up check and package.json `engines` name the
// same version, and the check refuses exactly what is older (issue 22).
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { NODE_FLOOR, nodeTooOld } from './node-floor.ts'

describe('the Node.js floor', () => {
  it('is what package.json engines and its lock file name', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))
    const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8'))
    expect(pkg.engines.node).toBe(`>=${NODE_FLOOR}`)
    expect(lock.packages[''].engines.node).toBe(`>=${NODE_FLOOR}`)
  })

  it('refuses an older Node with a message naming the floor, and lets the floor and newer ones start', () => {
    for (const old of ['18.20.4', '20.0.0', '20.18.1', 'v20.18.3', '19.9.0']) {
      expect(nodeTooOld(old), old).toBe(`Herald needs Node.js 20.19.0 or newer; this is Node.js ${old}. See README.md "Run it".`)
    }
    for (const ok of ['20.19.0', '20.20.2', 'v20.19.1', '21.0.0', '22.12.0', '24.1.0']) expect(nodeTooOld(ok), ok).toBeNull()
    expect(nodeTooOld(process.versions.node)).toBeNull()
  })

  it('herald stops at start on an older Node, with the message and exit code 1, before doing anything', async () => {
    // process.versions.node made to read 20.18.1 before src/main.ts loads.
    const older = 'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.18.1"})'
    const main = new URL('../main.ts', import.meta.url).pathname
    const run = (preload: string[]) => promisify(execFile)(process.execPath, ['--import', 'tsx', ...preload, main, 'help'])
    const failed = await run(['--import', older]).then(() => null, (error: { code: number; stdout: string; stderr: string }) => error)
    expect(failed?.code).toBe(1)
    expect(failed?.stderr.trim()).toBe('Herald needs Node.js 20.19.0 or newer; this is Node.js 20.18.1. See README.md "Run it".')
    expect(failed?.stdout).toBe('')
    // This Node starts: help is printed.
    expect((await run([])).stdout).toContain('herald serve')
  }, 60_000)

  it('every installed package accepts the floor (so npm ci on it prints no EBADENGINE)', () => {
    const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8'))
    const refused = Object.entries<{ engines?: { node?: string }; optional?: boolean }>(lock.packages)
      // Optional packages are other platforms' binaries, which npm skips here.
      .filter(([, entry]) => entry.engines?.node && !entry.optional && !satisfies(NODE_FLOOR, entry.engines.node))
      .map(([path, entry]) => `${path} ${entry.engines!.node}`)
    expect(refused).toEqual([])
    // The check itself: cookie@2 and content-disposition@3 (before the overrides) are refused.
    expect(satisfies(NODE_FLOOR, '>=22')).toBe(false)
    expect(satisfies(NODE_FLOOR, '^20.19.0 || >=22.12.0')).toBe(true)
    expect(satisfies(NODE_FLOOR, '>=20.18.1')).toBe(true)
    expect(satisfies(NODE_FLOOR, '20 || >=22')).toBe(true)
    expect(satisfies(NODE_FLOOR, '^20.20.0')).toBe(false)
  })
})

/** The engines ranges npm packages write (>=, >, <, <=, ^, ~, a bare or partial version, *, ||, spaces for and). */
function satisfies(version: string, range: string): boolean {
  const v = version.split('.').map(Number)
  const cmp = (w: number[]) => (v[0] - w[0]) || (v[1] - w[1]) || (v[2] - w[2])
  return range.split('||').some((alt) =>
    alt.replace(/(>=|<=|>|<|\^|~)\s+/g, '$1').trim().split(/\s+/).every((token) => {
      if (token === '' || token === '*' || token === 'x') return true
      const m = token.match(/^(>=|<=|>|<|\^|~)?v?(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?$/)
      if (!m) throw new Error(`an engines range this test cannot read: ${range}`)
      const given = [m[2], m[3], m[4]].filter((n) => n !== undefined && n !== 'x' && n !== '*').length
      const w = [Number(m[2]), Number(m[3] ?? 0) || 0, Number(m[4] ?? 0) || 0]
      switch (m[1]) {
        case '>=': return cmp(w) >= 0
        case '>': return cmp(w) > 0
        case '<=': return cmp(w) <= 0
        case '<': return cmp(w) < 0
        case '^': return v[0] === w[0] && cmp(w) >= 0
        case '~': return v[0] === w[0] && v[1] === w[1] && cmp(w) >= 0
        default: return v.slice(0, given).every((n, i) => n === w[i])
      }
    }))
}
