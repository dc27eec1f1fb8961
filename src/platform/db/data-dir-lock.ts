// The embedded database lives in one process at a time: two processes opening
// the same PGlite directory would each write over the other's changes. The
// first process to open it leaves its pid in a lock file; a second one is
// refused with a message, and a lock left by a process that died is taken over.
import fs from 'node:fs'
import path from 'node:path'

export class DataDirLockedError extends Error {}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Takes the lock on dataDir; returns the function that gives it back. */
export function lockDataDir(dataDir: string): () => void {
  const file = path.join(dataDir, 'herald.lock')
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' })
      return () => {
        try {
          if (fs.readFileSync(file, 'utf8') === String(process.pid)) fs.unlinkSync(file)
        } catch {
          // already gone
        }
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const holder = Number(fs.readFileSync(file, 'utf8'))
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && alive(holder)) {
        throw new DataDirLockedError(
          `The embedded database in ${dataDir} is in use by process ${holder} (herald serve?). ` +
            'Stop it first, or use the operator API (/admin/v1) while it runs.',
        )
      }
      fs.rmSync(file, { force: true }) // left by a process that is gone
    }
  }
  throw new DataDirLockedError(`Could not lock ${dataDir}`)
}
