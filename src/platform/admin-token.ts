// The operator token: HERALD_ADMIN_TOKEN, or in development one made on first
// start and kept in the data directory so it survives restarts.
import fs from 'node:fs'
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import type { Config } from './config.ts'

export function resolveAdminToken(config: Config): { token: string; generated: boolean } {
  if (config.adminToken) return { token: config.adminToken, generated: false }
  const file = path.join(config.dataDir, 'admin-token')
  if (fs.existsSync(file)) return { token: fs.readFileSync(file, 'utf8').trim(), generated: true }
  fs.mkdirSync(config.dataDir, { recursive: true })
  const token = `hadm_${randomBytes(24).toString('base64url')}`
  fs.writeFileSync(file, token + '\n', { mode: 0o600 })
  return { token, generated: true }
}
