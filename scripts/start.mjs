// `npm start`: runs Herald from dist/ exactly as a deployment does (plain
// JavaScript, no tsx loader in the process: the speed and memory the bench
// measures, ~70 MB less resident than under tsx). When a source file changed
// since dist/ was built, or there is no dist/, it first compiles src/ with
// esbuild (type annotations removed, `.ts` imports renamed `.js`; about a
// second), so a newcomer's first start is not slower. `npm run build` gives
// the same layout with tsc's type check; a build it made is used as it is.
import fs from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { compileOptions, copyRuntimeFiles, DIST, readStamp, sourceStamp, writeCompiled, writeStamp } from './dist-files.mjs'

/** Holds dist/.lock while compiling: two starts at once (an API and a worker after a pull) compile once, one after the other. */
async function withBuildLock(run) {
  const lock = `${DIST}.lock`
  for (let waited = 0; ; waited += 100) {
    try {
      fs.closeSync(fs.openSync(lock, 'wx'))
      break
    } catch (err) {
      if (err.code !== 'EEXIST') throw err
      // A lock older than any compile is left by a start that was killed while compiling.
      if (waited >= 60_000 || Date.now() - fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs > 60_000) fs.rmSync(lock, { force: true })
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  try {
    return await run()
  } finally {
    fs.rmSync(lock, { force: true })
  }
}

async function compile(stamp) {
  const esbuild = await import('esbuild')
  const next = `${DIST}.${process.pid}`
  fs.rmSync(next, { recursive: true, force: true })
  try {
    writeCompiled((await esbuild.build(compileOptions(next))).outputFiles)
    copyRuntimeFiles(next)
    writeStamp(stamp, next)
  } catch (err) {
    fs.rmSync(next, { recursive: true, force: true })
    throw err
  } finally {
    await esbuild.stop()
  }
  // Swap the finished build in whole (two renames), so a start never finds half of one.
  const old = `${DIST}.old.${process.pid}`
  if (fs.existsSync(DIST)) fs.renameSync(DIST, old)
  fs.renameSync(next, DIST)
  fs.rmSync(old, { recursive: true, force: true })
}

const stamp = sourceStamp()
if (readStamp() !== stamp) {
  await withBuildLock(async () => {
    // Another start may have compiled these sources while this one waited for the lock.
    if (readStamp() === stamp) return
    const started = performance.now()
    await compile(stamp)
    console.log(`Compiled src/ to dist/ in ${Math.round(performance.now() - started)} ms (sources changed since the last build).`)
  })
}
// The CLI in this same process (signals reach it directly): `npm start` passes `serve`. argv[1]
// names the compiled CLI, so a child it starts (the first start's `db migrate`) runs dist/ as it is.
const main = path.join(DIST, 'src', 'main.js')
process.argv[1] = main
await import(pathToFileURL(main).href)
