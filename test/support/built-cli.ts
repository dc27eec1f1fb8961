// The `herald` CLI compiled once per source tree, for the tests that start it
// as a process. Under tsx every start compiled the app again (~0.4 s more per
// process on a quiet machine, seconds under load, and ~40 MB more memory); a
// process started from this build loads plain JavaScript, as `npm start` and a
// deployment do. It is the same build `npm start` makes (esbuild, one .js per
// .ts, scripts/dist-files.mjs) in a directory of its own, so it never touches
// dist/ (which src/serve.test.ts builds and checks).
//
// Made by the global setups before the files run, kept between runs in
// node_modules/.cache/herald-test-build/<key>, keyed by the contents of src/,
// migrations/ and package.json: an edit makes a new build, and the global
// setup removes the old ones. src/platform/node-floor.test.ts and the dev
// push service tests still start src/main.ts under tsx (the `npm run dev` and
// bin/herald.js path).
import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildSync, version as esbuildVersion } from 'esbuild'
import { compileOptions, copyRuntimeFiles, sourceFiles, writeCompiled } from '../../scripts/dist-files.mjs'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
/** Inside the checkout, so the build finds package.json above it (src/platform/version.ts). */
const BUILDS = path.join(ROOT, 'node_modules/.cache/herald-test-build')

let key: string | null = null

/** What a build is made from: every source's path and contents, package.json, esbuild's version. */
export function buildKey(): string {
  if (key) return key
  const hash = createHash('sha256')
  hash.update(esbuildVersion)
  hash.update(fs.readFileSync(path.join(ROOT, 'package.json')))
  for (const rel of sourceFiles()) {
    hash.update(`\0${rel}\0`)
    hash.update(fs.readFileSync(path.join(ROOT, rel)))
  }
  key = hash.digest('hex').slice(0, 16)
  return key
}

/**
 * The build's directory, made first if missing. Made under a temporary name
 * and renamed into place, so a process that finds it finds it whole, and two
 * processes making it at once both end up using one.
 */
export function ensureBuild(): string {
  const dir = path.join(BUILDS, buildKey())
  if (fs.existsSync(dir)) return dir
  const building = `${dir}.${process.pid}-${randomBytes(4).toString('hex')}`
  try {
    writeCompiled(buildSync(compileOptions(building)).outputFiles)
    copyRuntimeFiles(building)
    try {
      fs.renameSync(building, dir)
    } catch (err) {
      if (!['ENOTEMPTY', 'EEXIST'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err
    }
  } finally {
    fs.rmSync(building, { recursive: true, force: true })
  }
  return dir
}

/** The compiled CLI's entry point: `node <this> serve` runs Herald. */
export function builtMain(): string {
  return path.join(ensureBuild(), 'src', 'main.js')
}

/** Removes builds of other sources (and ones left half made by a killed run). */
export function sweepBuilds(): void {
  if (!fs.existsSync(BUILDS)) return
  const current = buildKey()
  for (const name of fs.readdirSync(BUILDS)) {
    if (name === current) continue
    // One being made by a process still running is left to it.
    const pid = Number(name.split('.')[1]?.split('-')[0])
    if (Number.isInteger(pid) && pid !== process.pid && processAlive(pid)) continue
    fs.rmSync(path.join(BUILDS, name), { recursive: true, force: true })
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
