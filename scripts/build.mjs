// `npm run build`: compiles src/ to dist/src/ with tsc (type-checked, imports
// rewritten to .js) and copies what the compiled code reads beside it
// (scripts/dist-files.mjs). Then `node dist/src/main.js serve` runs Herald
// without tsx. `npm start` (scripts/start.mjs) uses this build as it is while
// no source has changed since.
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { copyRuntimeFiles, DIST, ROOT, sourceStamp, writeStamp } from './dist-files.mjs'

const stamp = sourceStamp()
fs.rmSync(DIST, { recursive: true, force: true })
execFileSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', path.join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' })
copyRuntimeFiles()
writeStamp(stamp)
console.log('Built dist/: run `node dist/src/main.js serve`.')
