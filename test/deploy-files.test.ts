// The systemd units and example environment file in docs/deploy/ (issue 27):
// every setting they name is one config.ts reads, they run the build's CLI
// with the role their name says, and the example file, once its token is
// filled in, is a configuration production accepts; as shipped it is refused.
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../src/platform/config.ts'
import { productionProblems } from '../src/platform/production-settings.ts'
import { ROOT } from './support/cli.ts'

const DEPLOY = path.join(ROOT, 'docs/deploy')
const FILES = ['herald-api.service', 'herald-worker.service', 'herald.env.example']
const read = (file: string) => fs.readFileSync(path.join(DEPLOY, file), 'utf8')
const configSource = fs.readFileSync(path.join(ROOT, 'src/platform/config.ts'), 'utf8')

/** Settings config.ts reads: env.NAME or a quoted 'NAME' handed to its parsers. */
function readByConfig(name: string): boolean {
  return new RegExp(`env\\.${name}\\b|'${name}'`).test(configSource)
}

/** KEY=VALUE lines of an environment file (comments and blank lines aside). */
function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const line of text.split('\n')) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line.trim())
    if (match) env[match[1]] = match[2]
  }
  return env
}

describe('docs/deploy', () => {
  it('names only settings that config.ts reads, commented-out ones included', () => {
    const names = new Set<string>()
    for (const file of FILES) for (const m of read(file).matchAll(/\b(HERALD_[A-Z0-9_]+|DATABASE_URL|REDIS_URL|PORT|NODE_ENV)\b/g)) names.add(m[1])
    expect(names.size).toBeGreaterThan(8)
    for (const name of names) expect(readByConfig(name), `${name} is not read by src/platform/config.ts`).toBe(true)
    // The check itself can fail: a made-up setting is not found.
    expect(readByConfig('HERALD_NO_SUCH_SETTING')).toBe(false)
  })

  it('each unit runs the built CLI with its role, reads the environment file, and sets a PORT of its own', () => {
    const ports = new Set<string>()
    for (const role of ['api', 'worker']) {
      const unit = read(`herald-${role}.service`)
      expect(unit).toMatch(new RegExp(`^ExecStart=/usr/bin/node /opt/herald/dist/src/main\\.js serve --role ${role}$`, 'm'))
      expect(unit).toMatch(/^EnvironmentFile=\/etc\/herald\/herald\.env$/m)
      ports.add(/^Environment=PORT=(\d+)$/m.exec(unit)![1])
    }
    expect(ports.size).toBe(2)
    // systemd lets the EnvironmentFile override a unit's Environment=: PORT must not be in it.
    expect(parseEnvFile(read('herald.env.example')).PORT).toBeUndefined()
  })

  it('the example environment is refused as shipped (no token) and accepted by production once the token is set', () => {
    const env = parseEnvFile(read('herald.env.example'))
    expect(env.NODE_ENV).toBe('production')
    expect(() => loadConfig(env)).toThrow(/HERALD_ADMIN_TOKEN must be set/)
    const config = loadConfig({ ...env, HERALD_ADMIN_TOKEN: '3f9c1a7e5b2d4c6e8a0b1d3f5e7c9a2b' })
    expect(productionProblems(config)).toEqual([])
  })
})
