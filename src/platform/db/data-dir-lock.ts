// The embedded database lives in one process at a time: two processes opening
// the same PGlite directory would each write over the other's changes. The
// first process to open it leaves its pid (and, on Linux, its start time) in a
// lock file; a second one is refused with a message, and a lock left by a
// process that died is taken over at once, under a takeover guard, so that
// two processes starting together on a dead lock do not both take it.
import fs from 'node:fs'
import path from 'node:path'

export class DataDirLockedError extends Error {}

/**
 * Fields of /proc/PID/stat after the command name (which may hold spaces and
 * parentheses, so the line is cut at its last ')'): [0] is the state, [19]
 * the start time in clock ticks since boot. Null where there is no /proc
 * (macOS, Windows) or no such process.
 */
function procStat(pid: number): string[] | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  } catch {
    return null
  }
}

/** What identifies a process beyond its pid: its start time, where the OS says it. */
function startTimeOf(pid: number): string | null {
  return procStat(pid)?.[19] ?? null
}

/**
 * Whether the lock's holder still runs. A process killed with SIGKILL whose
 * parent has not reaped it yet (a zombie: `kill -9` of `npm start`, say)
 * still answers kill(pid, 0), but it will never touch the database again; and
 * after a reboot or a long time its pid may belong to another process, which
 * the start time tells apart.
 */
function holderAlive(pid: number, startTime: string | null): boolean {
  try {
    process.kill(pid, 0)
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  const stat = procStat(pid)
  if (!stat) return true // no /proc: kill(pid, 0) is all there is to go on
  if (stat[0] === 'Z' || stat[0] === 'X') return false // dead, not yet reaped
  return startTime === null || stat[19] === startTime
}

/**
 * Creates the lock file with its content in one step, or returns false if it
 * exists: written to a file of its own first, then linked into place, so that
 * no other process ever reads it empty (a lock created and then written
 * could be read between the two as left by nobody, and taken over). Where
 * the file system has no hard links, created and written as before.
 */
function createLock(file: string, content: string): boolean {
  const own = `${file}.${process.pid}.tmp`
  fs.writeFileSync(own, content)
  try {
    fs.linkSync(own, file)
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false
    // Any other refusal: no hard links here (Windows on FAT reports EISDIR or UNKNOWN, others EPERM or ENOTSUP).
  } finally {
    try {
      fs.rmSync(own, { force: true })
    } catch {
      // held open by someone else a moment (Windows): a file of ours left beside the lock, harmless
    }
  }
  try {
    fs.writeFileSync(file, content, { flag: 'wx' })
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw err
  }
}

/**
 * An empty lock (or takeover guard) younger than this is one being created
 * (the fallback above); older, its creator died before writing it. A guard
 * held longer than this by a live process is named in the refusal: a
 * takeover takes milliseconds.
 */
const EMPTY_LOCK_GRACE_MS = 10_000

function parseLock(text: string): { pid: number; startTime: string | null } {
  const [pid, startTime] = text.trim().split(/\s+/)
  return { pid: Number(pid), startTime: startTime ?? null }
}

/** The file's text, or null once it is gone. */
function readIfThere(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw err
  }
}

/** How long ago the file was last written; Infinity once it is gone. */
function ageMs(file: string): number {
  const stat = fs.statSync(file, { throwIfNoEntry: false })
  return stat ? Date.now() - stat.mtimeMs : Infinity
}

/** Whether a lock's text names a process that still runs (another than this one). */
function heldByLiveProcess(text: string): boolean {
  const holder = parseLock(text)
  return Number.isInteger(holder.pid) && holder.pid > 0 && holder.pid !== process.pid && holderAlive(holder.pid, holder.startTime)
}

/**
 * Replaces a lock left by a process that is gone (`stale`, its text as read)
 * with this process's own (`mine`); returns whether this process holds the
 * lock now. Two processes that found the same dead lock at the same moment
 * could otherwise both remove it, the second removing the lock the first had
 * just made, and both go on. So a takeover is made only by the process that
 * created `<lock>.takeover`, and it removes the lock only if the lock still
 * reads `stale`: false when another process took it first (the caller reads
 * the lock again, and is refused while that process lives). A guard left by a
 * process that died while taking over is itself taken over the same way,
 * under `<lock>.takeover.takeover`; one left at that level too (two crashes
 * in the same milliseconds) is refused, naming the file to remove.
 */
export function takeOverStaleLock(file: string, stale: string, mine: string, level = 0): boolean {
  const guard = `${file}.takeover`
  if (!createLock(guard, mine)) {
    const taker = readIfThere(guard)
    if (taker === null) {
      if (!createLock(guard, mine)) return false
    } else {
      const age = ageMs(guard)
      const taking = taker.trim() === '' ? age < EMPTY_LOCK_GRACE_MS : heldByLiveProcess(taker)
      if (taking && age > EMPTY_LOCK_GRACE_MS) {
        throw new DataDirLockedError(`${guard} has been held by process ${parseLock(taker).pid} for more than 10 s; if no Herald is starting, remove it.`)
      }
      if (taking) return false
      if (level > 0) throw new DataDirLockedError(`${guard} was left by a process that died; if no Herald is starting, remove it.`)
      if (!takeOverStaleLock(guard, taker, mine, level + 1)) return false
    }
  }
  try {
    if (readIfThere(file) === stale) fs.rmSync(file, { force: true })
    return createLock(file, mine)
  } finally {
    if (readIfThere(guard) === mine) fs.rmSync(guard, { force: true })
  }
}

function beingOpened(dataDir: string): DataDirLockedError {
  return new DataDirLockedError(`The embedded database in ${dataDir} is being opened by another process. Try again in a moment.`)
}

/** Takes the lock on dataDir; returns the function that gives it back. */
export function lockDataDir(dataDir: string): () => void {
  const file = path.join(dataDir, 'herald.lock')
  const startTime = startTimeOf(process.pid)
  const mine = startTime ? `${process.pid} ${startTime}` : String(process.pid)
  const release = (): void => {
    try {
      if (fs.readFileSync(file, 'utf8') === mine) fs.unlinkSync(file)
    } catch {
      // already gone
    }
  }
  for (let attempt = 0; attempt < 2; attempt++) {
    if (createLock(file, mine)) return release
    let text: string
    let age: number
    try {
      text = fs.readFileSync(file, 'utf8')
      age = Date.now() - fs.statSync(file).mtimeMs
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue // released meanwhile: try again
      throw err
    }
    if (text.trim() === '' && age < EMPTY_LOCK_GRACE_MS) {
      throw beingOpened(dataDir)
    }
    if (heldByLiveProcess(text)) {
      throw new DataDirLockedError(
        `The embedded database in ${dataDir} is in use by process ${parseLock(text).pid} (herald serve?). ` +
          'Stop it first, or use the operator API (/admin/v1) while it runs.',
      )
    }
    // Left by a process that is gone: ours now, unless another process is taking it over this moment.
    if (takeOverStaleLock(file, text, mine)) return release
  }
  throw beingOpened(dataDir)
}
