import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn, type ChildProcess } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { DataDirLockedError, lockDataDir, takeOverStaleLock } from './data-dir-lock.ts'

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'herald-lock-'))
}

describe('lockDataDir', () => {
  it('refuses a directory held by a live process, and frees it on release', async () => {
    const dir = tempDir()
    // Another live process holds the lock.
    const other = liveProcess()
    fs.writeFileSync(path.join(dir, 'herald.lock'), String(other.pid))
    expect(() => lockDataDir(dir)).toThrow(DataDirLockedError)
    expect(() => lockDataDir(dir)).toThrow(new RegExp(`in use by process ${other.pid}`))
    other.kill('SIGKILL')
    await new Promise((resolve) => other.once('exit', resolve))
    // Its holder is gone: the lock is taken over.
    const release = lockDataDir(dir)
    expect(fs.readFileSync(path.join(dir, 'herald.lock'), 'utf8').split(' ')[0]).toBe(String(process.pid))
    release()
    expect(fs.existsSync(path.join(dir, 'herald.lock'))).toBe(false)
    fs.rmSync(dir, { recursive: true, force: true })
  })

  // `kill -9` of a Herald whose parent has not reaped it yet leaves a zombie:
  // kill(pid, 0) still succeeds, but it will never touch the database again.
  // Here the holder's parent is a shell that exec'd into `sleep`, which never
  // reaps its children, so the killed holder stays a zombie while we look.
  it.runIf(process.platform === 'linux')('takes over at once from a holder killed with SIGKILL that is still a zombie', async () => {
    const dir = tempDir()
    const script = `require('node:fs'); import(${JSON.stringify(new URL('./data-dir-lock.ts', import.meta.url).href)}).then((m) => { m.lockDataDir(${JSON.stringify(dir)}); setInterval(() => {}, 1000) })`
    const parent = spawn('sh', ['-c', `${JSON.stringify(process.execPath)} --import tsx -e ${shellQuote(script)} & exec sleep 30`], { stdio: 'ignore' })
    let holder = 0
    try {
      const lockFile = path.join(dir, 'herald.lock')
      for (let i = 0; i < 200 && !fs.existsSync(lockFile); i++) await new Promise((resolve) => setTimeout(resolve, 50))
      holder = Number(fs.readFileSync(lockFile, 'utf8').split(' ')[0])
      expect(() => lockDataDir(dir)).toThrow(DataDirLockedError)
      process.kill(holder, 'SIGKILL')
      for (let i = 0; i < 100 && procState(holder) !== 'Z'; i++) await new Promise((resolve) => setTimeout(resolve, 20))
      expect(procState(holder)).toBe('Z')
      const release = lockDataDir(dir)
      expect(fs.readFileSync(lockFile, 'utf8').split(' ')[0]).toBe(String(process.pid))
      release()
    } finally {
      // The holder too, should the test fail before it kills it: killing its parent leaves it running.
      if (holder > 0) {
        try {
          process.kill(holder, 'SIGKILL')
        } catch {
          // gone already
        }
      }
      parent.kill('SIGKILL')
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('refuses an empty lock being created, and takes over one left empty long ago', () => {
    const dir = tempDir()
    const lockFile = path.join(dir, 'herald.lock')
    // Created and not yet written (a file system without hard links, or a release before 0.3.0): in use.
    fs.writeFileSync(lockFile, '')
    expect(() => lockDataDir(dir)).toThrow(/being opened by another process/)
    expect(fs.readFileSync(lockFile, 'utf8')).toBe('')
    // Left empty by a process that died between creating and writing it: taken over.
    const longAgo = new Date(Date.now() - 60_000)
    fs.utimesSync(lockFile, longAgo, longAgo)
    const release = lockDataDir(dir)
    expect(fs.readFileSync(lockFile, 'utf8').split(' ')[0]).toBe(String(process.pid))
    release()
    // The file written first and linked into place is not left behind.
    expect(fs.readdirSync(dir)).toEqual([])
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('takes over a guard left by a dead taker only under a guard of its own, and names one left at that level too', async () => {
    const dir = tempDir()
    const lockFile = path.join(dir, 'herald.lock')
    const [dead, deadTaker, deadTaker2] = [await deadPid(), await deadPid(), await deadPid()]
    fs.writeFileSync(lockFile, String(dead))
    fs.writeFileSync(`${lockFile}.takeover`, String(deadTaker))
    const other = liveProcess()
    try {
      // Another process is taking over the dead guard this moment: this one leaves both files to it.
      fs.writeFileSync(`${lockFile}.takeover.takeover`, String(other.pid))
      expect(() => lockDataDir(dir)).toThrow(/being opened by another process/)
      expect(fs.readFileSync(lockFile, 'utf8')).toBe(String(dead))
      expect(fs.readFileSync(`${lockFile}.takeover`, 'utf8')).toBe(String(deadTaker))
      // That one died too: refused, naming the file to remove.
      fs.writeFileSync(`${lockFile}.takeover.takeover`, String(deadTaker2))
      expect(() => lockDataDir(dir)).toThrow(/herald\.lock\.takeover\.takeover was left by a process that died/)
      fs.rmSync(`${lockFile}.takeover.takeover`)
      // With it removed, the dead guard and then the dead lock are taken over, and nothing is left beside the lock.
      expectTakenOver(dir)
    } finally {
      other.kill('SIGKILL')
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it.runIf(process.platform === 'linux')('a lock whose pid now belongs to another process (started later) is taken over', () => {
    const dir = tempDir()
    // Our parent is alive, but started at another time than the one recorded.
    fs.writeFileSync(path.join(dir, 'herald.lock'), `${process.ppid} 1`)
    const release = lockDataDir(dir)
    release()
    // The same pid with its real start time is a live holder.
    const start = fs.readFileSync(`/proc/${process.ppid}/stat`, 'utf8')
    const startTime = start.slice(start.lastIndexOf(')') + 2).split(' ')[19]
    fs.writeFileSync(path.join(dir, 'herald.lock'), `${process.ppid} ${startTime}`)
    expect(() => lockDataDir(dir)).toThrow(DataDirLockedError)
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('takes over a dead lock only while it is still the one found dead', async () => {
    const dir = tempDir()
    const lockFile = path.join(dir, 'herald.lock')
    const dead = await deadPid()
    const other = liveProcess()
    try {
      // This process found the lock left by `dead`; before it took it over, another process did.
      fs.writeFileSync(lockFile, String(other.pid))
      expect(takeOverStaleLock(lockFile, String(dead), String(process.pid))).toBe(false)
      expect(fs.readFileSync(lockFile, 'utf8')).toBe(String(other.pid))
      expect(fs.readdirSync(dir)).toEqual(['herald.lock'])
      expect(() => lockDataDir(dir)).toThrow(new RegExp(`in use by process ${other.pid}`))
      // Still the dead process's lock: taken over, and the guard is gone.
      fs.writeFileSync(lockFile, String(dead))
      expect(takeOverStaleLock(lockFile, String(dead), String(process.pid))).toBe(true)
      expect(fs.readFileSync(lockFile, 'utf8')).toBe(String(process.pid))
      expect(fs.readdirSync(dir)).toEqual(['herald.lock'])
    } finally {
      other.kill('SIGKILL')
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('leaves a dead lock to the live process taking it over, and takes over a guard its taker left', async () => {
    const dir = tempDir()
    const lockFile = path.join(dir, 'herald.lock')
    const dead = await deadPid()
    fs.writeFileSync(lockFile, String(dead))
    const taker = liveProcess()
    try {
      fs.writeFileSync(`${lockFile}.takeover`, String(taker.pid))
      expect(() => lockDataDir(dir)).toThrow(/being opened by another process/)
      expect(fs.readFileSync(lockFile, 'utf8')).toBe(String(dead))
      taker.kill('SIGKILL')
      await new Promise((resolve) => taker.once('exit', resolve))
      // Its taker died before finishing: the guard is taken over (under a guard of its own), then the lock.
      expectTakenOver(dir)
    } finally {
      taker.kill('SIGKILL')
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

/** A process that stays alive for 10 s (kill it when done). */
function liveProcess(): ChildProcess {
  return spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)'])
}

/** Takes the lock on dir, checks this process holds it and nothing is left beside it, and gives it back. */
function expectTakenOver(dir: string): void {
  const release = lockDataDir(dir)
  expect(fs.readFileSync(path.join(dir, 'herald.lock'), 'utf8').split(' ')[0]).toBe(String(process.pid))
  expect(fs.readdirSync(dir)).toEqual(['herald.lock'])
  release()
}

/** The pid of a process that has exited (and been reaped). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''])
  await new Promise((resolve, reject) => {
    child.once('exit', resolve)
    child.once('error', reject)
  })
  return child.pid!
}

function procState(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
  } catch {
    return null
  }
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`
}
