// `npm run build`: compiles src/ to dist/src/ (tsc, imports rewritten to .js)
// and copies what the compiled code reads beside it: the migrations, the plain
// JavaScript modules (.mjs), the OpenSSL addon if built, the browser SDK and
// the dashboard's files. Then `node dist/src/main.js serve` runs Herald without
// tsx (~50 MB less resident).
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const dist = path.join(root, 'dist')
fs.rmSync(dist, { recursive: true, force: true })
execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' })

const copy = (from, to = from) => fs.cpSync(path.join(root, from), path.join(dist, to), { recursive: true })
copy('migrations')
copy('src/dashboard/public')
copy('src/sdk/browser')
for (const file of fs.readdirSync(path.join(root, 'src'), { recursive: true })) {
  if (String(file).endsWith('.mjs')) copy(path.join('src', String(file)))
}
// The OpenSSL addon built at install (scripts/build-native.mjs), where it was:
// rfc8291.mjs loads it from beside itself, and falls back to node:crypto without it.
const addon = 'src/delivery/native/build/Release/rfc8291.node'
if (fs.existsSync(path.join(root, addon))) copy(addon)
console.log('Built dist/: run `node dist/src/main.js serve`.')
