// Runs the `herald` CLI from the sources in a child process (node --import
// tsx, so a timeout's kill reaches the CLI itself), with only the given
// environment: nothing of the test runner's leaks into the configuration.
import { execFile } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

export interface CliResult {
  /** The exit code; null when the timeout killed it (it was still running). */
  code: number | null
  stdout: string
  stderr: string
}

export function runHerald(args: string[], env: Record<string, string>, timeoutMs = 30_000): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/main.ts', ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: timeoutMs },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : error.killed ? null : typeof error.code === 'number' ? error.code : null
        resolve({ code, stdout, stderr })
      },
    )
  })
}
