#!/usr/bin/env node
// The `herald` CLI. In this repository it registers tsx in this same process
// (no child process, so signals such as SIGTERM reach the service directly)
// and runs src/main.ts. In the package `npm pack` makes there is no src/
// TypeScript, only the build (dist/, made by the prepack script), which runs
// as plain JavaScript: no TypeScript loader at run time.
import fs from 'node:fs'

if (fs.existsSync(new URL('../src/main.ts', import.meta.url))) {
  const { register } = await import('tsx/esm/api')
  register()
  await import('../src/main.ts')
} else {
  await import('../dist/src/main.js')
}
