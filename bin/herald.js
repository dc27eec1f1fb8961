#!/usr/bin/env node
// The `herald` CLI. Registers tsx in this same process (no child process, so
// signals such as SIGTERM reach the service directly) and runs src/main.ts.
import { register } from 'tsx/esm/api'

register()
await import('../src/main.ts')
