// What `npm run build` (tsc) and `npm start` (esbuild) share: the files the
// compiled code reads beside it, and the stamp that says which sources dist/
// was built from, so `npm start` compiles only when a source changed.
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const DIST = path.join(ROOT, 'dist')
const STAMP = '.sources'

/** Every source file that ends up in dist/, by path relative to the root. */
export function sourceFiles() {
  const files = []
  for (const dir of ['src', 'migrations']) {
    for (const file of fs.readdirSync(path.join(ROOT, dir), { recursive: true })) {
      const rel = path.join(dir, String(file))
      if (fs.statSync(path.join(ROOT, rel)).isFile()) files.push(rel)
    }
  }
  return files.sort()
}

/** What tsconfig.build.json leaves out: tests, fixtures and declaration files. */
export const compiled = (rel) => rel.startsWith('src') && /\.ts$/.test(rel) && !/\.(test|fixtures)\.ts$|\.d\.ts$/.test(rel)

/** Relative module specifiers in esbuild's output (always double-quoted) that name a .ts file. */
const TS_SPECIFIER = /((?:\bfrom|\bimport)\s*\(?\s*)"(\.{1,2}\/[^"\n]+)\.ts"/g

/**
 * esbuild's options for compiling src/ into `outdir` (type annotations
 * removed, one .js per .ts): `npm start` (scripts/start.mjs) and the tests'
 * build of the CLI (test/support/built-cli.ts). Output is not written: pass it
 * to writeCompiled.
 */
export function compileOptions(outdir) {
  return {
    absWorkingDir: ROOT,
    entryPoints: sourceFiles().filter(compiled),
    outbase: '.',
    outdir,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    bundle: false,
    write: false,
    logLevel: 'error',
  }
}

/** Writes esbuild's output files with their `.ts` imports renamed `.js`. */
export function writeCompiled(outputFiles) {
  for (const file of outputFiles) {
    fs.mkdirSync(path.dirname(file.path), { recursive: true })
    fs.writeFileSync(file.path, file.text.replace(TS_SPECIFIER, '$1"$2.js"'))
  }
}

/** A hash of the sources' names, sizes and modification times (a few ms for ~500 files). */
export function sourceStamp() {
  const hash = crypto.createHash('sha256')
  for (const rel of sourceFiles()) {
    const stat = fs.statSync(path.join(ROOT, rel))
    hash.update(`${rel}\0${stat.size}\0${stat.mtimeMs}\n`)
  }
  return hash.digest('hex')
}

export function readStamp(dist = DIST) {
  try {
    return fs.readFileSync(path.join(dist, STAMP), 'utf8')
  } catch {
    return undefined
  }
}

export function writeStamp(stamp, dist = DIST) {
  fs.writeFileSync(path.join(dist, STAMP), stamp)
}

/**
 * Copies beside the compiled code what it reads at run time: the migrations,
 * the plain JavaScript modules (.mjs), the browser SDK, the dashboard's files,
 * and the OpenSSL addon where scripts/build-native.mjs built it (rfc8291.mjs
 * loads it from beside itself and falls back to node:crypto without it).
 */
export function copyRuntimeFiles(dist = DIST) {
  const copy = (from) => fs.cpSync(path.join(ROOT, from), path.join(dist, from), { recursive: true })
  copy('migrations')
  copy('src/dashboard/public')
  copy('src/sdk/browser')
  for (const rel of sourceFiles()) if (rel.endsWith('.mjs')) copy(rel)
  const addon = 'src/delivery/native/build/Release/rfc8291.node'
  if (fs.existsSync(path.join(ROOT, addon))) copy(addon)
}
