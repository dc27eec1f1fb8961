import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { DataDirLockedError, lockDataDir } from './data-dir-lock.ts'

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'herald-lock-'))
}

describe('lockDataDir', () => {
  it('refuses a directory held by a live process, and frees it on release', async () => {
    const dir = tempDir()
    // Another live process holds the lock.
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)'])
    fs.writeFileSync(path.join(dir, 'herald.lock'), String(other.pid))
    expect(() => lockDataDir(dir)).toThrow(DataDirLockedError)
    expect(() => lockDataDir(dir)).toThrow(new RegExp(`in use by process ${other.pid}`))
    other.kill('SIGKILL')
    await new Promise((resolve) => other.once('exit', resolve))
    // Its holder is gone: the lock is taken over.
    const release = lockDataDir(dir)
    expect(fs.readFileSync(path.join(dir, 'herald.lock'), 'utf8')).toBe(String(process.pid))
    release()
    expect(fs.existsSync(path.join(dir, 'herald.lock'))).toBe(false)
    fs.rmSync(dir, { recursive: true, force: true })
  })
})
