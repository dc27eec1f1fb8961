// The running release: package.json's version, read once. Found by walking
// up from this file, so it is the same answer from src/ (tsx), from dist/src/
// (the build) and from an installed package's directory.
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

function readVersion(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const file = path.join(dir, 'package.json')
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'herald' && typeof pkg.version === 'string') return pkg.version
    }
    const parent = path.dirname(dir)
    if (parent === dir) throw new Error('herald: package.json not found above ' + fileURLToPath(import.meta.url))
    dir = parent
  }
}

/** package.json's version, e.g. "0.2.0". */
export const VERSION = readVersion()
